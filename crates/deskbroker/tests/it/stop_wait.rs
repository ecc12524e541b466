//! Stop means stop (issue 26 item 3), on a real probe desktop: a `wait` step ends at a Stop
//! within the worker's poll instead of sleeping in full, and switching the owner's session to
//! `observe` is a new generation, so a running program halts before its next input.

use std::time::{Duration, Instant};

use desk_contract::control::{
    ControlClaim, ControlMode, ControlToken, ProgramRequest, StopReason, StopRequest,
};
use serde_json::json;

use crate::probe::{ProbeSession, of_type, probe_events};
use crate::support::xvfb_available;

/// A program of a long `wait` and then a click, claimed by `agent` in `act` mode.
async fn waiting_program(probe: &ProbeSession, wait_ms: u64) -> (ProgramRequest, u64) {
    let claim = ControlClaim {
        owner: "agent".to_string(),
        mode: ControlMode::Act,
    };
    let generation = probe
        .client
        .claim_control(&probe.session, &claim)
        .await
        .unwrap()
        .generation;
    let request = ProgramRequest {
        request_id: "waiting".to_string(),
        expected_action_index: 0,
        control: Some(ControlToken {
            owner: "agent".to_string(),
            generation,
        }),
        screenshot_id: None,
        steps: serde_json::from_value(json!([
            {"type": "wait", "milliseconds": wait_ms, "intent": "wait for the app"},
            {"type": "click", "x": 300, "y": 300, "intent": "never runs"}
        ]))
        .unwrap(),
    };
    (request, generation)
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_ends_a_running_wait_step() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("stop-wait").await;
    let (request, generation) = waiting_program(&probe, 5_000).await;
    let started = Instant::now();
    let running = {
        let (client, session) = (probe.client.clone(), probe.session.clone());
        tokio::spawn(async move { client.program(&session, &request).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let stop_sent = Instant::now();
    let stopped = probe
        .client
        .stop(
            &probe.session,
            &StopRequest {
                reason: StopReason::UserStopped,
            },
        )
        .await
        .unwrap();
    assert_eq!(stopped.control.generation, generation + 1);
    let answer = running.await.unwrap().unwrap();
    let after_stop_ms = stop_sent.elapsed().as_millis();
    let receipt = &answer.receipt;
    println!(
        "wait step stopped: program answered {after_stop_ms} ms after the stop, {} ms in all",
        started.elapsed().as_millis()
    );
    // The 5 s wait ended at the Stop (the worker looks every 10 ms), not at its end.
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "{receipt:?}"
    );
    assert_eq!(
        receipt
            .failing_step
            .as_ref()
            .map(|failing| failing.step_index),
        Some(1),
        "the click never ran: {receipt:?}"
    );
    assert!(
        answer.screenshot.is_none(),
        "the stopped generation's frame is dropped"
    );
    assert!(of_type(&probe_events(&probe.log), "button_press").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn switching_to_observe_halts_a_running_program() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("observe-halts").await;
    let (request, generation) = waiting_program(&probe, 3_000).await;
    let started = Instant::now();
    let running = {
        let (client, session) = (probe.client.clone(), probe.session.clone());
        tokio::spawn(async move { client.program(&session, &request).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let observing = probe
        .client
        .claim_control(
            &probe.session,
            &ControlClaim {
                owner: "agent".to_string(),
                mode: ControlMode::Observe,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        observing.generation,
        generation + 1,
        "a mode change is a new generation"
    );
    let answer = running.await.unwrap().unwrap();
    let receipt = &answer.receipt;
    println!(
        "observe halted the program after {} ms",
        started.elapsed().as_millis()
    );
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "the wait ended at the mode change: {receipt:?}"
    );
    assert_eq!(
        receipt
            .failing_step
            .as_ref()
            .map(|failing| failing.step_index),
        Some(1),
        "no input after the switch to observe: {receipt:?}"
    );
    assert!(of_type(&probe_events(&probe.log), "button_press").is_empty());
}
