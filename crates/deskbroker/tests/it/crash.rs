//! The broker is SIGKILLed between journaling an action and responding; after a restart the
//! retried request is reported honestly (`input_outcome_unknown`) and never re-injected.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use desk_client::ClientError;
use desk_contract::ErrorCode;
use desk_contract::api::SessionState;
use serde_json::json;

use crate::probe::{act, leased_probe, of_type, probe_events, wait_for_events};
use crate::support::{Broker, processes_mentioning, xvfb_available};

async fn crash_case(fault: &str, expected_presses: usize) {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), Some(fault), &log);
    let session = leased_probe(&broker, fault).await;
    let baseline = probe_events(&log).len();
    let click = json!({"type": "click", "x": 200, "y": 150, "button": "left", "intent": "click before the crash"});

    let lost = act(&broker.client(), &session, "crash-1", 0, click.clone()).await;
    assert!(
        matches!(lost, Err(ClientError::Transport(_))),
        "the response must be lost: {lost:?}"
    );
    let status = broker.wait_exit(Duration::from_secs(10));
    assert_eq!(status.signal(), Some(9), "the broker must die by SIGKILL");

    let events = wait_for_events(&log, baseline + expected_presses * 2);
    assert_eq!(
        of_type(&events[baseline..], "button_press").len(),
        expected_presses
    );

    broker.restart(None);
    let client = broker.client();
    let retry = act(&client, &session, "crash-1", 0, click.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(retry, ClientError::Api(ref body) if body.code == ErrorCode::InputOutcomeUnknown),
        "a retry after the crash must report the unknown outcome: {retry:?}"
    );
    let status = client.status(&session).await.unwrap();
    assert_eq!(status.state, SessionState::Error);
    assert_eq!(
        status.last_error.map(|error| error.code),
        Some(ErrorCode::InputOutcomeUnknown)
    );
    let next = act(&client, &session, "crash-2", 1, click)
        .await
        .unwrap_err();
    assert!(
        matches!(next, ClientError::Api(ref body) if body.code == ErrorCode::InvalidState),
        "{next:?}"
    );

    std::thread::sleep(Duration::from_millis(300));
    let after = probe_events(&log);
    assert_eq!(
        of_type(&after[baseline..], "button_press").len(),
        expected_presses,
        "never replayed"
    );

    client.release(&session).await.unwrap();
    let leftovers = processes_mentioning(&log.display().to_string());
    assert!(
        leftovers.is_empty(),
        "release must reap the crashed session's processes: {leftovers:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_input_is_reported_unknown_and_never_replayed() {
    crash_case("kill_after_input", 1).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_journal_before_input_is_reported_unknown() {
    crash_case("kill_before_input", 0).await;
}
