//! Stop interrupts a settle wait (issue 13 item 1): the probe window starts repainting forever
//! at its first button press, so the clicked step's settle wait would run its full 2 s; a Stop
//! sent while it runs ends it at the worker's next sample with `interrupted`, the program
//! answers at once, and the old generation's frame is dropped.

use std::time::{Duration, Instant};

use desk_contract::control::{
    ControlClaim, ControlMode, ControlToken, ProgramRequest, StopReason, StopRequest,
};
use desk_contract::settle::SettleOutcome;
use serde_json::json;

use crate::probe::{leased_profile, of_type, probe_events, write_probe_profile};
use crate::support::{Broker, xvfb_available};

#[tokio::test(flavor = "multi_thread")]
async fn stop_interrupts_the_settle_wait_of_the_running_step() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let args = ["--repaint-ms", "30", "--repaint-after-press", "yes"];
    write_probe_profile(root.path(), "restless", &log, &args);
    let broker = Broker::start(root.path(), None, &log);
    let client = broker.client();
    // The window settles at handoff: it repaints only after a press.
    let session = leased_profile(&broker, "restless", "settle").await;
    let claim = ControlClaim {
        owner: "agent".to_string(),
        mode: ControlMode::Act,
    };
    let generation = client
        .claim_control(&session, &claim)
        .await
        .unwrap()
        .generation;
    let request = ProgramRequest {
        request_id: "restless".to_string(),
        expected_action_index: 0,
        control: Some(ControlToken {
            owner: "agent".to_string(),
            generation,
        }),
        screenshot_id: None,
        steps: serde_json::from_value(json!([
            {"type": "click", "x": 200, "y": 200, "intent": "starts the repainting"},
            {"type": "click", "x": 300, "y": 300, "intent": "never runs"}
        ]))
        .unwrap(),
    };
    let started = Instant::now();
    let running = {
        let (client, session, request) = (client.clone(), session.clone(), request.clone());
        tokio::spawn(async move { client.program(&session, &request).await })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while of_type(&probe_events(&log), "button_press").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the click never reached the probe"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Well inside the 2 s settle wait the repainting keeps going.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop_sent = Instant::now();
    let stopped = client
        .stop(
            &session,
            &StopRequest {
                reason: StopReason::UserStopped,
            },
        )
        .await
        .unwrap();
    assert_eq!(stopped.control.generation, generation + 1);
    let answer = running.await.unwrap().unwrap();
    let answered_ms = stop_sent.elapsed().as_millis();
    let receipt = &answer.receipt;
    let first = &receipt.steps[0];
    println!(
        "stop answered, program answered {answered_ms} ms after the stop; settle {:?} after {} ms; \
         program {} ms",
        first.settle.outcome,
        first.settle.wait_ms,
        started.elapsed().as_millis()
    );
    assert_eq!(
        first.settle.outcome,
        SettleOutcome::Interrupted,
        "{receipt:?}"
    );
    assert!(
        first.settle.wait_ms < 1_800,
        "the wait ended before its 2 s limit: {receipt:?}"
    );
    assert_eq!(
        (receipt.attempted, receipt.submitted),
        (1, 1),
        "{receipt:?}"
    );
    assert_eq!(
        receipt
            .failing_step
            .as_ref()
            .map(|failing| failing.step_index),
        Some(1),
        "the second step never ran: {receipt:?}"
    );
    assert!(
        answer.screenshot.is_none(),
        "the stopped generation's frame is dropped"
    );
    assert_eq!(of_type(&probe_events(&log), "button_press").len(), 1);
}
