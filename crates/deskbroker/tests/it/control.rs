//! Control sessions on a real desktop (broker process, worker, XTEST, the probe window): a
//! stale screenshot id and a point off the image inject nothing; Stop during a long program
//! keeps every later step from the probe, leaves nothing held, and the old generation cannot
//! act until an explicit restart; a program cut by a broker SIGKILL after its first step is
//! never replayed.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::control::{
    ControlClaim, ControlMode, ControlToken, ProgramRequest, ProgramResponse, StopReason,
    StopRequest,
};
use serde_json::{Value, json};

use crate::probe::{leased_probe, of_type, probe_events, wait_for_events};
use crate::support::{Broker, xvfb_available};

fn program(
    request_id: &str,
    index: u64,
    generation: u64,
    shot: Option<&str>,
    steps: Value,
) -> ProgramRequest {
    ProgramRequest {
        request_id: request_id.to_string(),
        expected_action_index: index,
        control: Some(ControlToken {
            owner: "agent".to_string(),
            generation,
        }),
        screenshot_id: shot.map(str::to_string),
        steps: serde_json::from_value(steps).unwrap(),
    }
}

fn click(x: u32, y: u32) -> Value {
    json!({"type": "click", "x": x, "y": y, "intent": "probe click"})
}

async fn run(
    client: &Client,
    session: &str,
    request: &ProgramRequest,
) -> Result<ProgramResponse, ClientError> {
    client.program(session, request).await
}

fn refused_with(result: Result<ProgramResponse, ClientError>, code: ErrorCode) {
    assert!(
        matches!(result, Err(ClientError::Api(ref body)) if body.code == code),
        "expected {code:?}: {result:?}"
    );
}

fn presses(log: &std::path::Path, baseline: usize) -> Vec<(i64, i64)> {
    of_type(&probe_events(log)[baseline..], "button_press")
        .iter()
        .map(|event| {
            (
                event["root_x"].as_i64().unwrap(),
                event["root_y"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_screenshot_ids_and_a_crash_on_a_real_desktop() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), None, &log);
    let client = broker.client();
    let session = leased_probe(&broker, "control").await;
    let before_claim = client.screenshot(&session).await.unwrap();
    let claim = ControlClaim {
        owner: "agent".to_string(),
        mode: ControlMode::Act,
    };
    let generation = client
        .claim_control(&session, &claim)
        .await
        .unwrap()
        .generation;
    let baseline = probe_events(&log).len();

    // Coordinates bound to a screenshot of another generation, or off the image: refused, and
    // nothing reaches the probe.
    let stale = before_claim.screenshot_id.as_deref();
    refused_with(
        run(
            &client,
            &session,
            &program("stale", 0, generation, stale, json!([click(10, 10)])),
        )
        .await,
        ErrorCode::ScreenshotStale,
    );
    let current = client.screenshot(&session).await.unwrap();
    let width = current.image_content_rect.unwrap().width;
    let off = program(
        "off",
        0,
        generation,
        current.screenshot_id.as_deref(),
        json!([click(5, 5), click(width, 5)]),
    );
    refused_with(
        run(&client, &session, &off).await,
        ErrorCode::PointOutsideImage,
    );

    // A long program; Stop lands while its 3 s wait runs (after the second click).
    let steps = json!([
        click(100, 100),
        {"type": "wait", "milliseconds": 300, "intent": "short"},
        click(200, 200),
        {"type": "wait", "milliseconds": 3000, "intent": "long"},
        click(300, 300),
        {"type": "drag", "path": [{"x": 400, "y": 400}, {"x": 450, "y": 420}], "intent": "never"}
    ]);
    let long = program(
        "long",
        0,
        generation,
        current.screenshot_id.as_deref(),
        steps,
    );
    let running = {
        let (client, session, long) = (client.clone(), session.clone(), long.clone());
        tokio::spawn(async move { run(&client, &session, &long).await })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while presses(&log, baseline).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the program's clicks never reached the probe"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    let stop_ms = stop_sent.elapsed().as_millis();
    assert_eq!(stopped.control.generation, generation + 1);
    assert_eq!(
        stopped.released_held,
        Some(Vec::new()),
        "nothing held after the stopped step"
    );
    let answer = running.await.unwrap().unwrap();
    let receipt = &answer.receipt;
    println!(
        "stop answered after {stop_ms} ms; program {} ms",
        receipt.total_ms
    );
    // Stop lands while the second click settles or during the long wait: the program halts
    // before the next step either way.
    let failing = receipt.failing_step.as_ref().unwrap();
    assert!(matches!(failing.step_index, 3 | 4), "{receipt:?}");
    assert_eq!(failing.code, ErrorCode::ControlStopped);
    assert_eq!(
        (receipt.attempted, receipt.submitted),
        (failing.step_index, failing.step_index)
    );
    assert!(
        answer.screenshot.is_none(),
        "the stopped generation's frame is dropped"
    );
    std::thread::sleep(Duration::from_millis(300));
    let events = probe_events(&log);
    assert_eq!(
        presses(&log, baseline),
        vec![(100, 100), (200, 200)],
        "no later step reached the probe"
    );
    assert_eq!(
        of_type(&events[baseline..], "button_release").len(),
        2,
        "every press released"
    );

    // The old generation cannot act, nor can a single action; restart gives a new one.
    refused_with(
        run(
            &client,
            &session,
            &program("after", 1, generation, None, json!([click(10, 10)])),
        )
        .await,
        ErrorCode::ControlStopped,
    );
    let single = crate::probe::act(&client, &session, "single", 1, click(10, 10)).await;
    assert!(
        matches!(single, Err(ClientError::Api(ref body)) if body.code == ErrorCode::ControlStopped),
        "{single:?}"
    );
    let restarted = client.restart_control(&session, &claim).await.unwrap();
    assert_eq!(restarted.generation, generation + 2);
    assert_eq!(presses(&log, baseline).len(), 2);

    // SIGKILL after the first step's input: the retry is refused as unknown, never replayed.
    broker.restart(Some("kill_after_input"));
    let client = broker.client();
    assert_eq!(
        client.control(&session).await.unwrap(),
        restarted,
        "the generation survives"
    );
    let cut = program(
        "cut",
        1,
        restarted.generation,
        None,
        json!([click(150, 150), click(250, 250)]),
    );
    let lost = run(&client, &session, &cut).await;
    assert!(matches!(lost, Err(ClientError::Transport(_))), "{lost:?}");
    assert_eq!(broker.wait_exit(Duration::from_secs(10)).signal(), Some(9));
    broker.restart(None);
    let client = broker.client();
    refused_with(
        run(&client, &session, &cut).await,
        ErrorCode::InputOutcomeUnknown,
    );
    wait_for_events(&log, baseline + 6);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        presses(&log, baseline),
        vec![(100, 100), (200, 200), (150, 150)],
        "the cut program's first step once, its second never"
    );
    client.release(&session).await.unwrap();
}
