//! Unit tests of the evidence hooks over `FakeDesktop`: which records each operation appends, in
//! which order, and that an evidence failure refuses an action before any input.

use std::path::{Path, PathBuf};

use desk_contract::api::{ActionRequest, ActionResponse, LeaseRequest, ResetRequest, SessionState};
use desk_contract::{DisplaySize, ErrorCode};
use desk_desktop::fake::{FakeFailure, FakeHandle, FakeSave};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
use desk_evidence::{RecordBody, VerifiedRecord, VerifyingKey, read_journal};
use serde_json::json;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::fault::FaultHook;
use crate::ids::{SessionId, sid};
use crate::{Broker, PUBLIC_KEY_FILE};
use desk_desktop::BackendRequest;

const PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
save_keys = ["ctrl", "s"]
save_timeout_ms = 300
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
"#;

struct Setup {
    dir: tempfile::TempDir,
    broker: Broker,
    fake: FakeHandle,
}

fn config(state_dir: &Path) -> BrokerConfig {
    let mut profiles = ProfileSet::default();
    profiles.insert(AppProfile::from_toml("fake", PROFILE).unwrap());
    let mut config = BrokerConfig::new(state_dir, profiles);
    config.display = DisplaySize {
        width: 640,
        height: 400,
    };
    config.default_profile = "fake".to_string();
    config.fault = FaultHook::None;
    config
}

fn open(config: BrokerConfig, fake: &FakeHandle) -> Broker {
    let handle = fake.clone();
    Broker::open(config, move |request: &BackendRequest| {
        let desktop: Box<dyn DesktopBackend> =
            Box::new(FakeDesktop::with_handle(request.display, handle.clone()));
        Ok::<_, BackendError>(desktop)
    })
    .unwrap()
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let fake = FakeHandle::default();
        fake.set_save(FakeSave::AttemptFromArgv);
        let broker = open(config(dir.path()), &fake);
        Setup { dir, broker, fake }
    }

    async fn ready(&self, attempt: &str) -> SessionId {
        let lease: LeaseRequest =
            serde_json::from_value(json!({"task_id": "task-1", "attempt_id": attempt})).unwrap();
        let session_id = sid(&self.broker.lease(lease).await.unwrap().session_id);
        self.broker
            .reset(
                &session_id,
                ResetRequest {
                    request_id: "reset-1".to_string(),
                },
            )
            .await
            .unwrap();
        session_id
    }

    async fn click(
        &self,
        session_id: &SessionId,
        index: u64,
    ) -> Result<ActionResponse, BrokerError> {
        let request = ActionRequest {
            request_id: format!("click-{index}-{}", self.fake.n_inputs()),
            expected_action_index: index,
            screenshot_id: None,
            action: serde_json::from_value(
                json!({"type": "click", "x": 10, "y": 20, "intent": "press the button"}),
            )
            .unwrap(),
        };
        self.broker.execute(session_id, request).await
    }

    fn journal_path(&self, session_id: &SessionId) -> PathBuf {
        self.dir
            .path()
            .join("evidence")
            .join(session_id.as_str())
            .join("evidence.ndjson")
    }

    fn public_key(&self) -> VerifyingKey {
        VerifyingKey::read(&self.dir.path().join("evidence").join(PUBLIC_KEY_FILE)).unwrap()
    }

    fn records(&self, session_id: &SessionId) -> Vec<VerifiedRecord> {
        read_journal(&self.journal_path(session_id), &self.public_key()).unwrap()
    }

    fn kinds(&self, session_id: &SessionId) -> Vec<String> {
        self.records(session_id)
            .iter()
            .map(|record| match &record.record().body {
                RecordBody::ActionAccepted(body) => format!("action_accepted {}", body.index),
                RecordBody::ActionReceipt(body) => {
                    format!("action_receipt {} {}", body.index, body.settle_outcome)
                }
                RecordBody::Screenshot(body) => format!("screenshot {}", body.sequence),
                other => other.kind().as_str().to_string(),
            })
            .collect()
    }
}

#[tokio::test]
async fn every_operation_appends_its_records_in_order_and_the_bundle_verifies() {
    let setup = Setup::new();
    let session_id = setup.ready("attempt-1").await;
    assert_eq!(
        setup.kinds(&session_id),
        ["session_started", "workspace_launched", "screenshot 1"],
        "lease and reset"
    );
    let first = setup.click(&session_id, 0).await.unwrap();
    let second = setup.click(&session_id, 1).await.unwrap();
    let screenshot = setup.broker.screenshot(&session_id).await.unwrap();
    let checkpoint = setup.broker.checkpoint(&session_id).await.unwrap();
    setup.broker.artifact(&session_id).await.unwrap();
    let key_bytes = std::fs::read(setup.dir.path().join("evidence/signing.key")).unwrap();
    setup.broker.release(&session_id).await.unwrap();

    assert_eq!(
        setup.kinds(&session_id),
        [
            "session_started",
            "workspace_launched",
            "screenshot 1",
            "action_accepted 0",
            "action_receipt 0 stable",
            "action_accepted 1",
            "action_receipt 1 stable",
            &format!("screenshot {}", screenshot.sequence),
            "checkpoint",
            "artifact",
            "session_released",
        ]
    );
    let records = setup.records(&session_id);
    let RecordBody::ActionAccepted(accepted) = &records[3].record().body else {
        panic!("record 3 is not action_accepted");
    };
    assert_eq!(accepted.intent.as_deref(), Some("press the button"));
    assert_eq!(accepted.action_type, "click");
    let RecordBody::ActionReceipt(receipt) = &records[6].record().body else {
        panic!("record 6 is not a receipt");
    };
    assert_eq!(
        receipt.screenshot_sha256.as_deref(),
        Some(second.screenshot.as_ref().unwrap().sha256.as_str())
    );
    assert_ne!(
        first.screenshot.as_ref().unwrap().sha256,
        second.screenshot.as_ref().unwrap().sha256
    );
    let RecordBody::Checkpoint(recorded) = &records[8].record().body else {
        panic!("record 8 is not a checkpoint");
    };
    assert_eq!(recorded.sha256, checkpoint.sha256);
    assert_eq!(recorded.method, "controller_save");
    let RecordBody::SessionReleased(released) = &records[10].record().body else {
        panic!("record 10 is not session_released");
    };
    assert_eq!(released.n_actions, 2);
    assert!(
        released.events.len > 0,
        "the checkpoint's save chord is logged"
    );

    // The session directory is gone, and release deleted the attempt data (frames, artifact,
    // logs); the journal alone is enough for a bundle that verifies them by digest.
    assert!(
        !setup
            .dir
            .path()
            .join("sessions")
            .join(session_id.as_str())
            .exists()
    );
    let bundle = setup.dir.path().join("bundle");
    crate::export_evidence(setup.dir.path(), &session_id, None, &bundle).unwrap();
    let report = crate::verify_evidence(
        &bundle,
        &setup.dir.path().join("evidence").join(PUBLIC_KEY_FILE),
        None,
    )
    .unwrap();
    assert_eq!(report.n_records, 11);
    assert_eq!(report.n_actions, 2);
    assert_eq!(report.n_frames, 0);
    assert_eq!(report.artifacts.len(), 1);
    assert_eq!(
        report.not_retained,
        ["artifact/attempt.txt", "events.json", "frame_events.json"]
    );
    assert!(report.released);

    // The signing key stays private: mode 0600, and not in the journal or the bundle.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(setup.dir.path().join("evidence/signing.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let secret_line = String::from_utf8(key_bytes).unwrap();
    let secret_line = secret_line.lines().nth(1).unwrap();
    let journal = std::fs::read_to_string(bundle.join("evidence.ndjson")).unwrap();
    assert!(!journal.contains(secret_line));
}

#[tokio::test]
async fn an_unwritable_journal_refuses_the_action_before_any_input() {
    let setup = Setup::new();
    let session_id = setup.ready("attempt-1").await;
    setup.click(&session_id, 0).await.unwrap();
    assert_eq!(setup.fake.n_inputs(), 1);

    // Something else wrote to the journal: the writer no longer knows its tail.
    let mut bytes = std::fs::read(setup.journal_path(&session_id)).unwrap();
    bytes.extend_from_slice(b"{\"torn");
    std::fs::write(setup.journal_path(&session_id), bytes).unwrap();

    for attempt in 0..2 {
        let error = setup.click(&session_id, 1).await.unwrap_err();
        assert!(
            matches!(error, BrokerError::Evidence { .. }),
            "attempt {attempt}: {error:?}"
        );
        let body = error.to_body();
        assert_eq!(body.code, ErrorCode::JournalUnavailable);
        assert!(!body.message.contains("torn"), "{}", body.message);
        assert_eq!(
            setup.fake.n_inputs(),
            1,
            "attempt {attempt}: nothing injected"
        );
        let status = setup.broker.status(&session_id).await.unwrap();
        assert_eq!(status.state, SessionState::Ready);
        assert_eq!(status.next_action_index, 1, "the index was not used up");
    }
}

#[tokio::test]
async fn a_failure_before_input_withdraws_the_index_and_in_doubt_is_recorded() {
    let setup = Setup::new();
    let session_id = setup.ready("attempt-1").await;
    setup.fake.fail_execute(1, FakeFailure::BeforeInput);
    let error = setup.click(&session_id, 0).await.unwrap_err();
    assert!(matches!(error, BrokerError::Desktop { .. }), "{error:?}");
    setup.click(&session_id, 0).await.unwrap();
    setup.fake.fail_execute(3, FakeFailure::OutcomeUnknown);
    let error = setup.click(&session_id, 1).await.unwrap_err();
    assert!(
        matches!(error, BrokerError::OutcomeUnknown { .. }),
        "{error:?}"
    );
    setup.broker.release(&session_id).await.unwrap();
    assert_eq!(
        setup.kinds(&session_id),
        [
            "session_started",
            "workspace_launched",
            "screenshot 1",
            "action_accepted 0",
            "action_receipt 0 not_injected",
            "action_accepted 0",
            "action_receipt 0 stable",
            "action_accepted 1",
            "action_receipt 1 in_doubt",
            "session_released",
        ]
    );
    let records = setup.records(&session_id);
    let RecordBody::SessionReleased(released) = &records[9].record().body else {
        panic!("last record is not session_released");
    };
    assert_eq!(
        released.n_actions, 2,
        "the withdrawn acceptance does not count"
    );
    assert_eq!(released.reason, "error: input_outcome_unknown");
}

#[tokio::test]
async fn a_restart_closes_an_open_action_with_an_in_doubt_receipt() {
    let setup = Setup::new();
    let session_id = setup.ready("attempt-1").await;
    // The broker accepted action 0 (journal row and evidence) and died before its outcome.
    let session = setup.broker.inner.load(&session_id).unwrap();
    let request = ActionRequest {
        request_id: "click-0".to_string(),
        expected_action_index: 0,
        screenshot_id: None,
        action: serde_json::from_value(json!({"type": "click", "x": 1, "y": 1, "intent": "probe"}))
            .unwrap(),
    };
    let mut running = session.clone();
    running.lifecycle = session.lifecycle.accept(0).unwrap().0;
    setup
        .broker
        .inner
        .store
        .begin_action(
            &running,
            &crate::journal::JournalEntry {
                session_id: session_id.clone(),
                action_index: 0,
                request_id: crate::ids::RequestId::parse(&request.request_id).unwrap(),
                request_digest: "0".repeat(64),
                action_type: "click".to_string(),
                intent: String::new(),
                status: crate::journal::JournalStatus::Pending,
                response: None,
            },
        )
        .unwrap();
    super::action_accepted(
        setup.broker.inner.evidence(),
        &session,
        0,
        &request.request_id,
        &serde_json::to_value(&request).unwrap(),
        "click",
        "probe",
    )
    .unwrap();
    drop(setup.broker);

    let restarted = open(config(setup.dir.path()), &setup.fake);
    let status = restarted.status(&session_id).await.unwrap();
    assert_eq!(status.state, SessionState::Error);
    assert_eq!(
        status.last_error.map(|error| error.code),
        Some(ErrorCode::InputOutcomeUnknown)
    );
    let kinds: Vec<String> = read_journal(
        &setup
            .dir
            .path()
            .join("evidence")
            .join(session_id.as_str())
            .join("evidence.ndjson"),
        &VerifyingKey::read(&setup.dir.path().join("evidence").join(PUBLIC_KEY_FILE)).unwrap(),
    )
    .unwrap()
    .iter()
    .map(|record| match &record.record().body {
        RecordBody::ActionReceipt(body) => format!("action_receipt {}", body.settle_outcome),
        other => other.kind().as_str().to_string(),
    })
    .collect();
    assert_eq!(
        kinds,
        [
            "session_started",
            "workspace_launched",
            "screenshot",
            "action_accepted",
            "action_receipt in_doubt"
        ]
    );
    assert_eq!(setup.fake.n_inputs(), 0, "nothing was ever injected");
}
