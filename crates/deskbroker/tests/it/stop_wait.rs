//! Stop means stop (issue 26 item 3), on a real probe desktop: a `wait` step ends at a Stop
//! within the worker's poll instead of sleeping in full, and switching the owner's session to
//! `observe` is a new generation, so a running program halts before its next input.

use std::time::{Duration, Instant};

use desk_contract::api::SessionState;
use desk_contract::control::{
    ControlClaim, ControlMode, ControlToken, ProgramRequest, StopReason, StopRequest,
};
use serde_json::json;

use crate::probe::{ProbeSession, of_type, probe_events};
use crate::support::xvfb_available;

fn claim(mode: ControlMode) -> ControlClaim {
    ControlClaim {
        owner: "agent".to_string(),
        mode,
    }
}

/// Claims the probe session in `act` mode, runs a program of a `wait_ms` wait and a click,
/// and 400 ms into the wait (once the broker reports the program running) calls `interrupt`
/// (which returns the new generation). Checks that the wait ended early, the click never ran
/// and nothing reached the probe; returns how long the program took.
async fn interrupted_wait<F>(attempt: &str, wait_ms: u64, interrupt: F) -> Duration
where
    F: AsyncFnOnce(&ProbeSession) -> u64,
{
    let probe = ProbeSession::start(attempt).await;
    let generation = probe
        .client
        .claim_control(&probe.session, &claim(ControlMode::Act))
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
    let started = Instant::now();
    let running = {
        let (client, session) = (probe.client.clone(), probe.session.clone());
        tokio::spawn(async move { client.program(&session, &request).await })
    };
    // Interrupted once the program is running (its wait under way), however slowly a loaded
    // machine delivered the request: a fixed delay alone could stop it before its first step.
    let deadline = Instant::now() + Duration::from_millis(wait_ms / 2);
    loop {
        let status = probe.client.status(&probe.session).await.unwrap();
        if status.state == SessionState::Running {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the program never ran: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(interrupt(&probe).await, generation + 1);
    let answer = running.await.unwrap().unwrap();
    let took = started.elapsed();
    let receipt = &answer.receipt;
    // The wait ended at the new generation (the worker looks every 10 ms), not at its end: the
    // broker's own clock (acceptance to answer) is under the wait, and so is the caller's.
    assert!(receipt.total_ms < wait_ms, "{took:?}: {receipt:?}");
    assert!(
        took < Duration::from_millis(wait_ms),
        "{took:?}: {receipt:?}"
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
        "the old generation's frame is dropped"
    );
    assert!(of_type(&probe_events(&probe.log), "button_press").is_empty());
    took
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_ends_a_running_wait_step() {
    if !xvfb_available() {
        return;
    }
    let took = interrupted_wait("stop-wait", 5_000, async |probe: &ProbeSession| {
        let stop = StopRequest {
            reason: StopReason::UserStopped,
        };
        let stopped = probe.client.stop(&probe.session, &stop).await.unwrap();
        stopped.control.generation
    })
    .await;
    println!("a 5 s wait stopped after 0.4 s: the program answered in {took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn switching_to_observe_halts_a_running_program() {
    if !xvfb_available() {
        return;
    }
    let took = interrupted_wait("observe-halts", 3_000, async |probe: &ProbeSession| {
        let observing = probe
            .client
            .claim_control(&probe.session, &claim(ControlMode::Observe))
            .await
            .unwrap();
        // A mode change is a new generation.
        observing.generation
    })
    .await;
    println!("a switch to observe 0.4 s into a 3 s wait: the program answered in {took:?}");
}
