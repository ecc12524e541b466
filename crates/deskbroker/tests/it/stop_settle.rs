//! Stop interrupts a settle wait (issue 13 item 1): the probe window starts repainting forever
//! at its first button press, so the clicked step's settle wait would run its full 2 s; a Stop
//! sent while it runs ends it at the worker's next sample with `interrupted`, the program
//! answers at once, and the old generation's frame is dropped.

use std::time::{Duration, Instant};

use desk_contract::api::{LeaseRequest, ResetRequest};
use desk_contract::control::{
    ControlClaim, ControlMode, ControlToken, ProgramRequest, StopReason, StopRequest,
};
use desk_contract::settle::SettleOutcome;
use serde_json::json;

use crate::probe::{of_type, probe_events};
use crate::support::{Broker, probe_binary, xvfb_available};

#[tokio::test(flavor = "multi_thread")]
async fn stop_interrupts_the_settle_wait_of_the_running_step() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let profiles = root.path().join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    let text = format!(
        "name = \"restless\"\ncommand = [{program:?}, \"--out\", {out:?}, \"--repaint-ms\", \
         \"30\", \"--repaint-after-press\", \"yes\"]\nread_only = [{dir:?}]\n\
         [attempt]\nfilename = \"attempt.txt\"\n\
         template = \"fresh\"\n[window]\nclass = \"deskprobe\"\nmaximize = true\n\
         timeout_ms = 15000\n",
        program = probe_binary().display().to_string(),
        out = log.display().to_string(),
        // The sandbox shows the worker program alone of the target directory.
        dir = probe_binary().parent().unwrap().display().to_string(),
    );
    std::fs::write(profiles.join("restless.toml"), text).unwrap();
    let broker = Broker::start(root.path(), None, &log);
    let client = broker.client();
    let lease = client
        .lease(&LeaseRequest {
            task_id: "stop".into(),
            attempt_id: "settle".into(),
            profile: Some("restless".into()),
        })
        .await
        .unwrap();
    let session = lease.session_id;
    client
        .reset(
            &session,
            &ResetRequest {
                request_id: "reset-1".into(),
            },
        )
        .await
        .expect("the window settles at handoff: it repaints only after a press");
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
