//! A Stop that lands while a program's step is inside the desktop (a fake desktop gated on
//! its second `execute`): the program halts before the next step and drops its observation.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::json;

use crate::control::{code, post, program};
use crate::hooked::gated_harness;
use crate::support::click;

#[tokio::test]
async fn stop_during_a_step_halts_the_program_and_discards_its_observation() {
    let (harness, started_rx, proceed_tx) = gated_harness(1);
    let id = harness.ready().await;
    let (_, claimed) = post(&harness, &id, "control", json!({"owner": "a"})).await;
    let generation = claimed["generation"].as_u64().unwrap();
    let steps = json!([click(1, 1), click(2, 2), click(3, 3), click(4, 4)]);
    let body = program(
        "long",
        0,
        steps,
        json!({"control": {"owner": "a", "generation": generation}}),
    );
    let running = {
        let (harness, id) = (Arc::clone(&harness), id.clone());
        tokio::spawn(async move { post(&harness, &id, "programs", body).await })
    };
    tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
        .await
        .unwrap();
    // Step 1 is in the desktop. Stop advances the generation without waiting for it...
    let stopping = {
        let (harness, id) = (Arc::clone(&harness), id.clone());
        tokio::spawn(async move { post(&harness, &id, "stop", json!({})).await })
    };
    loop {
        let (_, control) = harness
            .call("GET", &format!("/v1/sessions/{id}/control"), None)
            .await;
        if control["stopped"] == true {
            assert_eq!(control["generation"].as_u64(), Some(generation + 1));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // ...then the step finishes, and the program halts before step 2.
    proceed_tx.send(()).unwrap();
    let (status, answer) = running.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    let receipt = &answer["receipt"];
    assert_eq!(
        (receipt["attempted"].as_u64(), receipt["submitted"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(receipt["failing_step"]["step_index"].as_u64(), Some(2));
    assert_eq!(receipt["failing_step"]["code"], "control_stopped");
    assert!(
        answer["screenshot"].is_null(),
        "the observation of a stopped generation is dropped"
    );
    assert!(
        receipt["observation_error"]
            .as_str()
            .unwrap()
            .starts_with("stopped")
    );
    let (status, stopped) = stopping.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{stopped}");
    assert_eq!(stopped["released_held"], json!([]));
    assert_eq!(
        harness.fake.n_inputs(),
        2,
        "steps 2 and 3 never reached the desktop"
    );
    let again = json!({"control": {"owner": "a", "generation": generation}});
    let (_, refused) = post(
        &harness,
        &id,
        "programs",
        program("next", 1, json!([click(5, 5)]), again),
    )
    .await;
    assert_eq!(code(&refused), "control_stopped");
    assert_eq!(harness.fake.n_inputs(), 2);
}
