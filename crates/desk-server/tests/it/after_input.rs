//! Once input was delivered the action counts: a failed observation after it (the frame file,
//! the event logs, the evidence receipt) is named in the receipt's `observation_failures`, the
//! session continues, and an identical retry replays the same answer without input.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::{Harness, click};

/// `(kind, index)` of every record of the session's evidence journal.
fn evidence_records(harness: &Harness, id: &str) -> Vec<(String, Option<u64>)> {
    let journal = harness
        .dir
        .path()
        .join("evidence")
        .join(id)
        .join("evidence.ndjson");
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|line| {
            let envelope: Value = serde_json::from_str(line).unwrap();
            let payload = &envelope["payload"];
            (
                payload["kind"].as_str().unwrap().to_string(),
                payload["body"]["index"].as_u64(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_frame_that_cannot_be_stored_is_named_and_still_returned_and_replayed() {
    let harness = Harness::new();
    let id = harness.ready().await;
    // A regular file where the frames directory belongs: the frame file cannot be created.
    let frames = harness.session_file(&id, "frames");
    if frames.exists() {
        std::fs::remove_dir_all(&frames).unwrap();
    }
    std::fs::write(&frames, b"not a directory").unwrap();
    let (status, answer) = harness.act(&id, "a0", 0, click(5, 6)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["receipt"]["delivery"], "input_injected");
    assert_eq!(
        answer["receipt"]["observation_failures"],
        json!(["frame_store"])
    );
    let png = answer["screenshot"]["png_base64"].as_str().unwrap();
    assert!(!png.is_empty());
    assert_eq!(harness.fake.n_inputs(), 1);
    assert_eq!(harness.status(&id).await["state"], "ready");
    // The replay carries the same frame (kept in the journal row), and sends nothing.
    let (status, replay) = harness.act(&id, "a0", 0, click(5, 6)).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["idempotent_replay"], true);
    assert_eq!(replay["screenshot"], answer["screenshot"]);
    assert_eq!(replay["receipt"], answer["receipt"]);
    assert_eq!(harness.fake.n_inputs(), 1);
    // The evidence receipt of the action names the frame it was answered with.
    assert!(
        evidence_records(&harness, &id).contains(&("action_receipt".to_string(), Some(0))),
        "{:?}",
        evidence_records(&harness, &id)
    );
    std::fs::remove_file(&frames).unwrap();
    let (status, next) = harness.act(&id, "a1", 1, click(7, 8)).await;
    assert_eq!(status, StatusCode::OK, "{next}");
    assert!(next["receipt"].get("observation_failures").is_none());
    assert_eq!(harness.fake.n_inputs(), 2);
}

#[tokio::test]
async fn an_evidence_receipt_that_cannot_be_written_leaves_the_action_counted_and_open() {
    let harness = Harness::new();
    let id = harness.ready().await;
    // A directory where events.json belongs: the log append fails, and so does the receipt,
    // which digests the log (action_accepted does not read it, so input is still sent).
    let events = harness.session_file(&id, "events.json");
    std::fs::remove_file(&events).unwrap();
    std::fs::create_dir(&events).unwrap();
    let (status, answer) = harness.act(&id, "a0", 0, click(5, 6)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["receipt"]["observation_failures"],
        json!(["event_log", "evidence"])
    );
    assert_eq!(harness.fake.n_inputs(), 1);
    let status_body = harness.status(&id).await;
    assert_eq!(status_body["state"], "ready", "{status_body}");
    assert_eq!(status_body["next_action_index"], 1, "{status_body}");
    // Exactly-once rests on the journal: the identical retry replays and sends nothing.
    let (status, replay) = harness.act(&id, "a0", 0, click(5, 6)).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["idempotent_replay"], true);
    assert_eq!(replay["receipt"], answer["receipt"]);
    assert_eq!(harness.fake.n_inputs(), 1);
    // The evidence shows the action accepted and never closed.
    let records = evidence_records(&harness, &id);
    assert_eq!(
        records.last(),
        Some(&("action_accepted".to_string(), Some(0))),
        "{records:?}"
    );
    std::fs::remove_dir(&events).unwrap();
    let (status, next) = harness.act(&id, "a1", 1, click(7, 8)).await;
    assert_eq!(status, StatusCode::OK, "{next}");
    assert!(next["receipt"].get("observation_failures").is_none());
    assert_eq!(harness.fake.n_inputs(), 2);
    let records = evidence_records(&harness, &id);
    let receipts: Vec<_> = records
        .iter()
        .filter(|(kind, _)| kind == "action_receipt")
        .map(|(_, index)| *index)
        .collect();
    assert_eq!(receipts, vec![Some(1)], "{records:?}");
}
