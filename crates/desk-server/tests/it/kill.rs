//! The kill path's gaps on fake desktops: a kill whose killer died after its tombstone is
//! finished by the reconciler with exactly one receipt; every refused action is a signed
//! denial record carrying the refused-action count; a failed session's workspace is `stopped`
//! (directory kept) until release proves its removal; release removes the kill files (fence,
//! lock) of a session never killed, and only of such a session.

use axum::http::StatusCode;
use desk_broker::kill::Tombstone;
use desk_desktop::fake::FakeFailure;
use desk_evidence::record::ActionRefused;
use desk_evidence::{RecordBody, VerifyingKey};
use serde_json::json;

use crate::support::{Harness, click};

fn journal(harness: &Harness, id: &str) -> Vec<RecordBody> {
    let evidence = harness.dir.path().join("evidence");
    let key = VerifyingKey::read(&evidence.join("evidence.pub")).unwrap();
    desk_evidence::read_journal(&evidence.join(id).join("evidence.ndjson"), &key)
        .unwrap()
        .iter()
        .map(|record| record.record().body.clone())
        .collect()
}

fn spooled_for(harness: &Harness, id: &str) -> usize {
    let key =
        VerifyingKey::read(&harness.dir.path().join("evidence").join("evidence.pub")).unwrap();
    let spool = harness.dir.path().join("spool").join("terminal.ndjson");
    desk_evidence::spool::read(&spool, &key)
        .unwrap()
        .iter()
        .filter(|spooled| spooled.session_id == id)
        .count()
}

#[tokio::test]
async fn a_kill_cut_after_its_tombstone_is_finished_once_by_the_reconciler() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    // What a killer leaves when it dies right after its tombstone: no receipt, no destruction.
    let tombstone = Tombstone {
        session_id: desk_broker::SessionId::parse(&id).unwrap(),
        reason: "operator: cut".to_string(),
        record_id: "kill-0123456789abcdef0123456789abcdef".to_string(),
        killed_at_ms: 1,
        source: "operator".to_string(),
        limit: None,
        process: None,
    };
    let kills = harness.dir.path().join("kills");
    std::fs::create_dir_all(&kills).unwrap();
    std::fs::write(
        kills.join(format!("{id}.json")),
        serde_json::to_vec(&tombstone).unwrap(),
    )
    .unwrap();
    let (status, body) = harness
        .call("GET", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert_eq!(body["code"], "session_killed");
    assert_eq!(spooled_for(&harness, &id), 0);

    let done = harness.broker.reconcile().await.unwrap();
    assert_eq!(done.kills_applied, 1);
    assert_eq!(spooled_for(&harness, &id), 1);
    assert!(!harness.dir.path().join("sessions").join(&id).exists());
    for _ in 0..2 {
        harness.broker.reconcile().await.unwrap();
    }
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/kill"),
            Some(json!({"reason": "again"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["killed_now"], false);
    assert_eq!(body["record_id"], tombstone.record_id);
    assert_eq!(spooled_for(&harness, &id), 1, "the receipt is written once");
    let bodies = journal(&harness, &id);
    let kills: Vec<_> = bodies
        .iter()
        .filter_map(|body| match body {
            RecordBody::SessionKilled(killed) => Some(killed),
            _ => None,
        })
        .collect();
    assert_eq!(kills.len(), 1);
    assert_eq!(kills[0].record_id, tombstone.record_id);
    assert_eq!(kills[0].reason, "operator: cut");
    assert_eq!(kills[0].last_action_index, Some(0));
    assert!(matches!(bodies.last(), Some(RecordBody::SessionKilled(_))));
}

#[tokio::test]
async fn every_refused_action_is_a_signed_denial_with_the_count() {
    let harness = Harness::new();
    let id = harness.ready().await;
    for request_id in ["bad-0", "bad-1"] {
        let (status, body) = harness.act(&id, request_id, 0, click(9999, 5)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/programs"),
            Some(json!({"request_id": "bad-2", "expected_action_index": 0,
                        "steps": [click(1, 1), click(1, 9999)]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let program_code = body["code"].as_str().unwrap().to_string();
    let (status, _) = harness.act(&id, "bad 3", 0, click(9999, 5)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(harness.fake.n_inputs(), 0, "nothing was sent");
    let denials: Vec<ActionRefused> = journal(&harness, &id)
        .into_iter()
        .filter_map(|body| match body {
            RecordBody::ActionRefused(denial) => Some(denial),
            _ => None,
        })
        .collect();
    let counts: Vec<_> = denials.iter().map(|denial| denial.refused_count).collect();
    assert_eq!(counts, vec![Some(1), Some(2), Some(3), Some(4)]);
    let request_ids: Vec<_> = denials
        .iter()
        .map(|denial| denial.request_id.clone())
        .collect();
    assert_eq!(
        request_ids,
        vec![
            Some("bad-0".to_string()),
            Some("bad-1".to_string()),
            Some("bad-2".to_string()),
            None
        ],
        "a request id that is not a valid identifier is not recorded"
    );
    let codes: Vec<_> = denials
        .iter()
        .map(|denial| denial.error_code.as_str())
        .collect();
    assert_eq!(
        codes,
        vec![
            "invalid_action",
            "invalid_action",
            program_code.as_str(),
            "invalid_action"
        ]
    );
    for denial in &denials {
        assert_eq!(
            (
                denial.control_id.as_str(),
                denial.stage.as_str(),
                denial.outcome.as_str()
            ),
            ("AID-I-008.004-G005", "action_validation", "refused")
        );
        assert!(denial.record_id.starts_with("deny-"));
    }
}

#[tokio::test]
async fn a_failed_sessions_workspace_is_stopped_until_release_destroys_it() {
    let harness = Harness::new();
    let id = harness.ready().await;
    assert_eq!(harness.status(&id).await["workspace_state"], "running");
    harness.fake.fail_execute(1, FakeFailure::OutcomeUnknown);
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let status_body = harness.status(&id).await;
    assert_eq!(status_body["state"], "error");
    harness.broker.reconcile().await.unwrap();
    assert_eq!(harness.status(&id).await["workspace_state"], "stopped");
    assert!(
        harness.dir.path().join("sessions").join(&id).exists(),
        "the directory (logs) is kept until release"
    );
    harness.broker.reconcile().await.unwrap();
    assert_eq!(harness.status(&id).await["workspace_state"], "stopped");
    let (status, _) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    // Release removes what it can; the reconciler proves the rest (the fake's out-of-tree
    // workspace directory) removed.
    harness.broker.reconcile().await.unwrap();
    assert_eq!(harness.status(&id).await["workspace_state"], "destroyed");
}

/// Session `id`'s fence (held shared by the broker while it writes an action's records), kill
/// lock (taken by killers only) and tombstone.
fn kill_files(
    harness: &Harness,
    id: &str,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let kills = harness.dir.path().join("kills");
    (
        kills.join(format!("{id}.fence")),
        kills.join(format!("{id}.lock")),
        kills.join(format!("{id}.json")),
    )
}

#[tokio::test]
async fn release_removes_the_kill_lock_of_a_session_never_killed() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    let (fence, lock, tombstone) = kill_files(&harness, &id);
    assert!(
        fence.exists(),
        "the action's records were written under the fence"
    );
    assert!(!lock.exists(), "only a kill takes the kill lock");
    let (status, body) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!fence.exists(), "release removed the fence");
    assert!(!tombstone.exists());
}

#[tokio::test]
async fn release_leaves_a_kill_lock_that_is_held() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    let (fence, _, _) = kill_files(&harness, &id);
    // What a kill under way holds (a second open file description conflicts with it).
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(&fence)
        .unwrap();
    held.lock().unwrap();
    let (status, body) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(fence.exists(), "a held fence is left");
}

#[tokio::test]
async fn a_killed_session_keeps_its_tombstone_and_its_lock() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/kill"),
            Some(json!({"reason": "operator: test"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let released = harness
        .broker
        .release(&desk_broker::SessionId::parse(&id).unwrap())
        .await
        .unwrap();
    assert!(!released.released_now, "a killed session is not released");
    let (fence, lock, tombstone) = kill_files(&harness, &id);
    assert!(tombstone.exists());
    assert!(lock.exists() && fence.exists());
}

#[tokio::test]
async fn release_leaves_the_lock_when_a_tombstone_exists() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    // A kill landed that the broker has not applied yet (the reaper releases first).
    let (fence, _, tombstone) = kill_files(&harness, &id);
    std::fs::write(&tombstone, b"{}").unwrap();
    let released = harness
        .broker
        .release(&desk_broker::SessionId::parse(&id).unwrap())
        .await
        .unwrap();
    assert!(released.released_now);
    assert!(fence.exists(), "a tombstone keeps the fence");
    assert!(tombstone.exists());
}
