//! No ambiguity after input, worker side: a settle capture or focus read that fails after the
//! input was delivered (injected with the worker's test-only `DESKBROKER_WORKER_FAULT`) leaves
//! the action counted, named in the receipt's `observation_failures`, replayable, and the
//! session usable. Checked against what the probe window really received.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use desk_contract::api::SessionState;
use desk_contract::worker::WORKER_FAULT_ENV;
use serde_json::{Value, json};

use crate::probe::{act, leased_probe, of_type, probe_events};
use crate::support::{Broker, xvfb_available};

fn click(x: i64, y: i64) -> Value {
    json!({"type": "click", "x": x, "y": y, "button": "left", "intent": "observation fault click"})
}

/// Button presses the probe recorded, by root position, once `point` arrived (X delivery is
/// asynchronous).
fn presses_after(log: &std::path::Path, point: (i64, i64)) -> HashMap<(i64, i64), usize> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut counts: HashMap<(i64, i64), usize> = HashMap::new();
        for event in of_type(&probe_events(log), "button_press") {
            let at = (
                event["root_x"].as_i64().unwrap(),
                event["root_y"].as_i64().unwrap(),
            );
            *counts.entry(at).or_default() += 1;
        }
        if counts.contains_key(&point) || Instant::now() > deadline {
            return counts;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_settle_capture_after_input_counts_the_action_without_a_frame() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let fault = [(WORKER_FAULT_ENV, "capture_after_input".to_string())];
    let broker = Broker::start_env(root.path(), &log, &fault);
    let client = broker.client();
    let session = leased_probe(&broker, "capture-fault").await;

    let first = act(&client, &session, "click-1", 0, click(211, 187))
        .await
        .expect("a failed capture after input is no action failure");
    assert_eq!(first.action_index, 0);
    assert_eq!(first.receipt.observation_failures, vec!["capture"]);
    assert!(first.screenshot.is_none(), "no frame was captured");
    assert_eq!(first.receipt.delivery.as_str(), "input_injected");
    assert!(!first.receipt.post_action_visual_stable);
    assert!(first.receipt.n_input_events >= 1);
    // "No frame" is explicit on the wire.
    let wire = serde_json::to_value(&first).unwrap();
    assert_eq!(wire["screenshot"], Value::Null);
    assert_eq!(wire["receipt"]["settle"]["outcome"], "unavailable");
    assert_eq!(presses_after(&log, (211, 187)).get(&(211, 187)), Some(&1));

    // The same request id replays the same answer and sends nothing.
    let replay = act(&client, &session, "click-1", 0, click(211, 187))
        .await
        .unwrap();
    assert!(replay.idempotent_replay);
    assert_eq!(replay.receipt, first.receipt);
    assert!(replay.screenshot.is_none());

    // The session continues: the next action is delivered with a frame.
    let status = client.status(&session).await.unwrap();
    assert_eq!(status.state, SessionState::Ready);
    assert_eq!(status.next_action_index, 1);
    let second = act(&client, &session, "click-2", 1, click(402, 305))
        .await
        .unwrap();
    assert!(second.receipt.observation_failures.is_empty());
    let shot = second.screenshot.as_ref().expect("a frame");
    let presses = presses_after(&log, (402, 305));
    assert_eq!(presses.get(&(211, 187)), Some(&1), "{presses:?}");
    assert_eq!(presses.get(&(402, 305)), Some(&1), "{presses:?}");

    // The frameless action's inputs are in events.json and ride in the next frame's row.
    let events = client.events(&session).await.unwrap();
    let mut indices: Vec<i64> = events
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["actionIndex"]
                .as_i64()
                .unwrap()
        })
        .collect();
    indices.dedup();
    assert_eq!(indices, vec![0, 1], "{events}");
    let rows: Vec<Value> = client
        .frame_events(&session)
        .await
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["frame"], shot.sequence);
    let mut carried: Vec<i64> = rows[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["actionIndex"].as_i64().unwrap())
        .collect();
    carried.dedup();
    assert_eq!(carried, vec![0, 1]);
    client.release(&session).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_focus_read_after_input_is_named_and_the_frame_returned() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let fault = [(WORKER_FAULT_ENV, "focus_after_input".to_string())];
    let broker = Broker::start_env(root.path(), &log, &fault);
    let client = broker.client();
    let session = leased_probe(&broker, "focus-fault").await;

    let first = act(&client, &session, "click-1", 0, click(150, 260))
        .await
        .expect("a failed focus read after input is no action failure");
    assert_eq!(first.receipt.observation_failures, vec!["focus"]);
    assert!(first.receipt.focus_before.is_some());
    assert!(first.receipt.focus_after.is_none());
    assert_eq!(first.receipt.pointer_on_target, None);
    assert!(first.screenshot.is_some(), "the settled frame is returned");
    assert_eq!(presses_after(&log, (150, 260)).get(&(150, 260)), Some(&1));

    let second = act(&client, &session, "click-2", 1, click(330, 120))
        .await
        .unwrap();
    assert!(second.receipt.observation_failures.is_empty());
    assert_eq!(second.receipt.pointer_on_target, Some(true));
    assert!(
        second.screenshot.as_ref().unwrap().sequence > first.screenshot.as_ref().unwrap().sequence
    );
    client.release(&session).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_encode_after_input_keeps_the_settle_result_without_a_frame() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let fault = [(WORKER_FAULT_ENV, "encode_after_input".to_string())];
    let broker = Broker::start_env(root.path(), &log, &fault);
    let client = broker.client();
    let session = leased_probe(&broker, "encode-fault").await;

    let first = act(&client, &session, "click-1", 0, click(270, 333))
        .await
        .expect("a failed encode after input is no action failure");
    assert_eq!(first.receipt.observation_failures, vec!["encode"]);
    assert!(first.screenshot.is_none());
    // The settle wait itself succeeded; only its frame could not be encoded.
    assert_ne!(
        first.receipt.settle.outcome,
        desk_contract::SettleOutcome::Unavailable
    );
    assert_eq!(first.receipt.pointer_on_target, Some(true));
    assert_eq!(presses_after(&log, (270, 333)).get(&(270, 333)), Some(&1));

    let second = act(&client, &session, "click-2", 1, click(90, 90))
        .await
        .unwrap();
    assert!(second.receipt.observation_failures.is_empty());
    assert!(second.screenshot.is_some());
    client.release(&session).await.unwrap();
}
