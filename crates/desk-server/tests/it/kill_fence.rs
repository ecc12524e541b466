//! A kill never waits on the broker's fence (`<state_dir>/kills/<id>.fence`, held shared while
//! the broker writes an action's records) for more than `KILL_FENCE_BOUND`: with the fence held
//! by someone else and an action inside the desktop (a fake desktop gated on its first
//! `execute`), the kill goes on past the bound, its signed receipt names the action in doubt,
//! and the action is journaled `unknown` (never complete, never replayed); what a broker cut
//! past the bound writes after the kill removed the directory is removed when the kill is
//! applied.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use desk_broker::kill::KILL_FENCE_BOUND;
use desk_evidence::record::SessionKilled;
use desk_evidence::{RecordBody, VerifyingKey};
use serde_json::json;

use crate::hooked::gated_harness;
use crate::support::{Harness, click};

/// A fake desktop whose first `execute` tells the test it started and waits for its go-ahead.
fn public_key(harness: &Harness) -> VerifyingKey {
    VerifyingKey::read(&harness.dir.path().join("evidence").join("evidence.pub")).unwrap()
}

/// The spooled receipt of `id`, once there.
fn spooled(harness: &Harness, id: &str) -> Option<SessionKilled> {
    let spool = harness.dir.path().join("spool").join("terminal.ndjson");
    desk_evidence::spool::read(&spool, &public_key(harness))
        .unwrap()
        .into_iter()
        .find(|spooled| spooled.session_id == id)
        .map(|spooled| spooled.receipt)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_with_the_fence_held_goes_on_after_the_bound_and_the_action_is_in_doubt() {
    let (harness, started_rx, proceed_tx) = gated_harness(0);
    let id = harness.ready().await;

    // Action 0 is journaled and inside the desktop...
    let acting = {
        let (harness, id) = (Arc::clone(&harness), id.clone());
        tokio::spawn(async move { harness.act(&id, "a0", 0, click(5, 5)).await })
    };
    tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
        .await
        .unwrap();
    // ...and the fence is held shared, as a broker stopped inside an action's records holds it.
    let kills = harness.dir.path().join("kills");
    std::fs::create_dir_all(&kills).unwrap();
    let fence = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(kills.join(format!("{id}.fence")))
        .unwrap();
    fence.lock_shared().unwrap();

    let asked = Instant::now();
    let killing = {
        let (harness, id) = (Arc::clone(&harness), id.clone());
        tokio::spawn(async move {
            harness
                .call(
                    "POST",
                    &format!("/v1/sessions/{id}/kill"),
                    Some(json!({"reason": "operator: fence held"})),
                )
                .await
        })
    };
    let receipt = loop {
        if let Some(receipt) = spooled(&harness, &id) {
            break receipt;
        }
        assert!(
            asked.elapsed() < KILL_FENCE_BOUND + Duration::from_secs(4),
            "the kill waited on the held fence"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let took = asked.elapsed();
    eprintln!(
        "kill with the fence held: receipt spooled after {took:?} (bound {KILL_FENCE_BOUND:?})"
    );
    assert!(took >= KILL_FENCE_BOUND, "the kill waited the bound first");
    assert_eq!(receipt.outcome, "contained");
    assert_eq!(receipt.action_in_doubt, Some(0), "{receipt:?}");
    assert!(kills.join(format!("{id}.json")).exists(), "tombstone");
    assert!(
        !harness.dir.path().join("sessions").join(&id).exists(),
        "the session was destroyed while the fence was held"
    );

    // The action comes back from the desktop: in doubt, never complete.
    proceed_tx.send(()).unwrap();
    let (status, answer) = acting.await.unwrap();
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{answer}");
    assert_eq!(answer["code"], "input_outcome_unknown", "{answer}");
    let (status, body) = killing.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["killed_now"], true);
    drop(fence);

    let store = rusqlite::Connection::open(harness.dir.path().join("broker.sqlite3")).unwrap();
    let row: String = store
        .query_row(
            "SELECT status FROM actions WHERE session_id = ?1 AND action_index = 0",
            [&id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(row, "unknown");
    // A retry is not replayed: the session is killed.
    let (status, again) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::GONE, "{again}");
    assert_eq!(again["code"], "session_killed");
    assert_eq!(harness.fake.n_inputs(), 1, "nothing sent again");

    // The replayed receipt in the session's evidence names the action in doubt.
    harness.broker.reconcile().await.unwrap();
    let evidence = harness.dir.path().join("evidence");
    let bodies: Vec<RecordBody> = desk_evidence::read_journal(
        &evidence.join(&id).join("evidence.ndjson"),
        &public_key(&harness),
    )
    .unwrap()
    .iter()
    .map(|record| record.record().body.clone())
    .collect();
    match bodies.last() {
        Some(RecordBody::SessionKilled(killed)) => {
            // Replayed with its killer's signed spool entry.
            assert!(killed.signed_receipt.is_some());
            let unsigned = SessionKilled {
                signed_receipt: None,
                ..killed.clone()
            };
            assert_eq!(unsigned, receipt);
        }
        other => panic!("last record {other:?}"),
    }
}

#[tokio::test]
async fn what_a_broker_writes_after_a_kill_removed_the_directory_goes_when_the_kill_is_applied() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "a0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    // A kill from outside the broker (the watchdog's path), not applied yet.
    let state = desk_broker::StateDir::new(harness.dir.path());
    let key = desk_broker::kill::Signer::evidence(harness.dir.path(), None).unwrap();
    let session = desk_broker::SessionId::parse(&id).unwrap();
    let outcome = desk_broker::kill::kill_session(
        &state,
        &key,
        &session,
        "operator: late writes",
        &desk_broker::kill::KillSource::Operator,
    )
    .unwrap();
    assert!(matches!(outcome, desk_broker::kill::KillOutcome::Killed(_)));
    let dir = harness.dir.path().join("sessions").join(&id);
    assert!(!dir.exists(), "the kill removed the directory");
    // What a broker stopped inside an action's records past the bound writes when it resumes.
    std::fs::create_dir_all(dir.join("frames")).unwrap();
    std::fs::write(dir.join("frames").join("000001.png"), b"late").unwrap();
    let done = harness.broker.reconcile().await.unwrap();
    assert_eq!(done.kills_applied, 1);
    assert!(!dir.exists(), "applying the kill removed the late writes");
}
