//! Restart recovery: a `pending` journal row left by a crash becomes `unknown`, its session
//! `error`, and a retry is refused without touching the new desktop.

use axum::http::StatusCode;
use desk_desktop::fake::FakeHandle;
use desk_server::router;

use crate::support::{Harness, click, config, open_broker};

#[tokio::test]
async fn pending_action_becomes_unknown_after_restart() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, _) = harness.act(&id, "r0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK);
    let state_dir = harness.dir.path().to_path_buf();
    drop(harness.app);
    drop(harness.broker);

    // Simulate a crash between the pending commit and the outcome: the row is still pending.
    let db = rusqlite::Connection::open(state_dir.join("broker.sqlite3")).unwrap();
    db.execute("UPDATE actions SET status = 'pending', response = NULL", [])
        .unwrap();
    db.execute("UPDATE sessions SET state = 'running'", [])
        .unwrap();
    drop(db);

    let fresh = FakeHandle::default();
    let broker = open_broker(config(state_dir.clone()), &fresh);
    let restarted = Harness {
        app: router(broker.clone()),
        broker,
        fake: fresh,
        dir: harness.dir,
    };
    let status_body = restarted.status(&id).await;
    assert_eq!(status_body["state"], "error");
    assert_eq!(status_body["last_error"]["code"], "input_outcome_unknown");

    let (status, body) = restarted.act(&id, "r0", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("input_outcome_unknown")
        )
    );
    let (status, body) = restarted.act(&id, "r1", 1, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("invalid_state"))
    );
    assert_eq!(
        restarted.fake.n_inputs(),
        0,
        "the new desktop received nothing"
    );

    let db = rusqlite::Connection::open(state_dir.join("broker.sqlite3")).unwrap();
    let journal_status: String = db
        .query_row("SELECT status FROM actions", [], |row| row.get(0))
        .unwrap();
    assert_eq!(journal_status, "unknown");

    // Release still works and is idempotent.
    let (status, _) = restarted
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn ready_sessions_lose_their_desktop_on_restart() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let state_dir = harness.dir.path().to_path_buf();
    drop(harness.broker);
    let fresh = FakeHandle::default();
    let broker = open_broker(config(state_dir), &fresh);
    let restarted = Harness {
        app: router(broker.clone()),
        broker,
        fake: fresh,
        dir: harness.dir,
    };
    let status_body = restarted.status(&id).await;
    assert_eq!(status_body["state"], "error");
    assert_eq!(status_body["last_error"]["code"], "desktop_failed");
}

/// Records the directories it is asked to reap.
#[derive(Clone, Default)]
struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<std::path::PathBuf>>>);

impl desk_broker::BackendFactory for Recorder {
    fn create(
        &self,
        request: &desk_broker::BackendRequest,
    ) -> Result<Box<dyn desk_desktop::DesktopBackend>, desk_desktop::BackendError> {
        Ok(Box::new(desk_desktop::fake::FakeDesktop::new(
            request.display,
        )))
    }

    fn reap_orphans(&self, session_dir: &desk_broker::SessionDir) -> usize {
        self.0
            .lock()
            .unwrap()
            .push(session_dir.path().to_path_buf());
        1
    }
}

#[tokio::test]
async fn desktops_on_disk_unknown_to_the_journal_are_reaped_at_start() {
    let harness = Harness::new();
    let live = harness.ready().await;
    let state_dir = harness.dir.path().to_path_buf();
    drop(harness.app);
    drop(harness.broker);
    // A desktop the journal does not know: its journal was lost, or belonged to another run.
    let orphan = state_dir.join("sessions").join("s_orphan");
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::write(state_dir.join("sessions").join("not-a-dir"), b"").unwrap();

    let recorder = Recorder::default();
    let _broker = desk_broker::Broker::open(config(state_dir.clone()), recorder.clone()).unwrap();
    let reaped = recorder.0.lock().unwrap().clone();
    assert!(reaped.contains(&orphan), "{reaped:?}");
    // The known session (not reattached by this factory) is reaped once, as before.
    let known = state_dir.join("sessions").join(&live);
    assert_eq!(
        reaped.iter().filter(|dir| **dir == known).count(),
        1,
        "{reaped:?}"
    );
    assert_eq!(reaped.len(), 2, "{reaped:?}");
}
