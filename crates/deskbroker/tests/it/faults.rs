//! Faults with real processes against the probe window: a broker stopped for an upgrade, a
//! desktop process dying mid-session, a journal that cannot be written, a client that
//! disconnects mid-request, and a lease that expires while an action runs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use desk_client::ClientError;
use desk_contract::ErrorCode;
use desk_contract::api::SessionState;
use desk_desktop::launcher::{RecordedProcess, recorded_display, recorded_processes};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::probe::{ProbeSession, act, leased_probe, of_type, probe_events};
use crate::support::{Broker, assert_desktop_gone, xvfb_available};

fn click(x: i64, y: i64) -> Value {
    json!({"type": "click", "x": x, "y": y, "button": "left", "intent": "fault test click"})
}

/// Button presses the probe recorded, by root position.
fn presses(log: &std::path::Path) -> HashMap<(i64, i64), usize> {
    let mut counts = HashMap::new();
    for event in of_type(&probe_events(log), "button_press") {
        let point = (
            event["root_x"].as_i64().unwrap(),
            event["root_y"].as_i64().unwrap(),
        );
        *counts.entry(point).or_default() += 1;
    }
    counts
}

/// Waits until the probe recorded a press at `point` (X delivery is asynchronous).
fn wait_for_press(log: &std::path::Path, point: (i64, i64)) -> usize {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let n = presses(log).get(&point).copied().unwrap_or(0);
        if n > 0 || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn desktop_of(broker: &Broker, session: &str) -> (Vec<RecordedProcess>, String) {
    let dir = broker.session_dir(session);
    let processes = recorded_processes(&dir);
    assert!(
        !processes.is_empty(),
        "no processes recorded in {}",
        dir.display()
    );
    (processes, recorded_display(&dir).expect("display recorded"))
}

fn api_code(result: &Result<desk_contract::api::ActionResponse, ClientError>) -> Option<ErrorCode> {
    match result {
        Err(ClientError::Api(body)) => Some(body.code),
        _ => None,
    }
}

/// Stopping the broker (SIGTERM: a restart or an upgrade) leaves the desktop running; the next
/// broker on the same state reattaches and the session continues where it was, cached
/// responses included.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_broker_leaves_the_desktop_running_and_the_next_one_reattaches() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), None, &log);
    let session = leased_probe(&broker, "upgrade").await;
    act(
        &broker.client(),
        &session,
        "before-stop",
        0,
        click(300, 200),
    )
    .await
    .unwrap();
    let (processes, display) = desktop_of(&broker, &session);

    let status = broker.terminate();
    assert!(status.success(), "a stop is graceful: {status:?}");
    let dead: Vec<_> = processes.iter().filter(|p| !p.is_alive()).collect();
    assert!(dead.is_empty(), "a stop must not kill desktops: {dead:?}");

    broker.respawn();
    let client = broker.client();
    let status = client.status(&session).await.unwrap();
    assert_eq!(status.state, SessionState::Ready, "{status:?}");
    assert_eq!(status.next_action_index, 1);
    let replay = act(&client, &session, "before-stop", 0, click(300, 200))
        .await
        .unwrap();
    assert!(replay.idempotent_replay, "the journal answers a retry");
    let after = act(&client, &session, "after-restart", 1, click(340, 220))
        .await
        .unwrap();
    assert!(!after.idempotent_replay);
    assert_eq!(
        desktop_of(&broker, &session).0,
        processes,
        "the same desktop"
    );
    assert_eq!(wait_for_press(&log, (340, 220)), 1);
    assert_eq!(presses(&log).get(&(300, 200)), Some(&1), "never replayed");

    client.release(&session).await.unwrap();
    assert_desktop_gone(&processes, &display);
}

/// Kills one process group of a ready session's desktop; the next action sends nothing and
/// puts the session in `error` with a reason naming the dead process; release still cleans up.
async fn desktop_death_case(role: &str, named: &str) {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start(role).await;
    act(&probe.client, &probe.session, "alive", 0, click(250, 250))
        .await
        .unwrap();
    assert_eq!(wait_for_press(&probe.log, (250, 250)), 1);
    let (processes, display) = desktop_of(&probe.broker, &probe.session);
    let victim = processes
        .iter()
        .find(|p| p.role == role)
        .unwrap_or_else(|| panic!("no {role} in {processes:?}"))
        .clone();
    killpg(Pid::from_raw(victim.pid as i32), Signal::SIGKILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while victim.is_alive() {
        assert!(Instant::now() < deadline, "{role} did not die");
        std::thread::sleep(Duration::from_millis(20));
    }

    let refused = act(&probe.client, &probe.session, "dead", 1, click(260, 260)).await;
    assert_eq!(
        api_code(&refused),
        Some(ErrorCode::DesktopFailed),
        "{refused:?}"
    );
    let status = probe.client.status(&probe.session).await.unwrap();
    assert_eq!(status.state, SessionState::Error);
    let error = status.last_error.expect("a reason");
    assert_eq!(error.code, ErrorCode::DesktopFailed);
    let expected = format!("{named} (pid {})", victim.pid);
    assert!(
        error.message.contains(&expected),
        "the reason must name {expected:?}: {:?}",
        error.message
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        presses(&probe.log).get(&(260, 260)),
        None,
        "nothing was sent"
    );
    let again = act(&probe.client, &probe.session, "dead-2", 1, click(260, 260)).await;
    assert_eq!(api_code(&again), Some(ErrorCode::InvalidState), "{again:?}");

    probe.client.release(&probe.session).await.unwrap();
    assert_desktop_gone(&processes, &display);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_app_dying_fails_the_session_with_its_name_and_release_cleans_up() {
    desktop_death_case("app", "the app").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn xvfb_dying_fails_the_session_with_its_name_and_release_cleans_up() {
    desktop_death_case("xvfb", "the X server (Xvfb)").await;
}

/// The journal cannot be written (the broker's soft file size limit drops to one byte, so
/// every write fails with EFBIG): an action is refused with `journal_unavailable` before any input, the
/// session is unchanged, and once storage is back the same request executes exactly once.
#[tokio::test(flavor = "multi_thread")]
async fn an_unwritable_journal_refuses_the_action_and_sends_nothing() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("journal-full").await;
    act(&probe.client, &probe.session, "ok", 0, click(200, 300))
        .await
        .unwrap();
    let limit = |value: &str| {
        let status = std::process::Command::new("prlimit")
            .args([
                "--pid",
                &probe.broker.pid().to_string(),
                &format!("--fsize={value}"),
            ])
            .status()
            .expect("prlimit (util-linux) is needed");
        assert!(status.success(), "prlimit --fsize={value} failed");
    };

    limit("1:");
    let refused = act(&probe.client, &probe.session, "blocked", 1, click(220, 320)).await;
    let Err(ClientError::Api(body)) = &refused else {
        panic!("the action must be refused: {refused:?}");
    };
    assert_eq!(body.code, ErrorCode::JournalUnavailable, "{body:?}");
    assert!(
        body.message.contains("journal") && body.message.contains("no input was sent"),
        "the broker says why: {:?}",
        body.message
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        presses(&probe.log).get(&(220, 320)),
        None,
        "no input without a journal record"
    );
    let status = probe.client.status(&probe.session).await.unwrap();
    assert_eq!(
        (status.state, status.next_action_index),
        (SessionState::Ready, 1),
        "nothing changed"
    );

    limit("unlimited:");
    let retried = act(&probe.client, &probe.session, "blocked", 1, click(220, 320))
        .await
        .unwrap();
    assert!(!retried.idempotent_replay);
    assert_eq!(wait_for_press(&probe.log, (220, 320)), 1);
    probe.client.release(&probe.session).await.unwrap();
}

/// A client that disconnects while its action settles: the action completes and is journaled
/// once, a retry with the same request id gets the cached response, the probe saw one input.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_disconnects_mid_request_gets_the_cached_response_on_retry() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("disconnect").await;
    // A long settle (the probe window is static, so settling alone takes ~200 ms) and a drop
    // well inside it: the HTTP connection closes while the broker executes.
    let dropped = tokio::time::timeout(
        Duration::from_millis(40),
        act(&probe.client, &probe.session, "dropped", 0, click(420, 300)),
    )
    .await;
    assert!(
        dropped.is_err(),
        "the request must still be running when dropped"
    );

    let retried = act(&probe.client, &probe.session, "dropped", 0, click(420, 300))
        .await
        .unwrap();
    assert!(
        retried.idempotent_replay,
        "the retry is answered from the journal"
    );
    assert_eq!(retried.action_index, 0);
    let next = act(&probe.client, &probe.session, "next", 1, click(440, 310))
        .await
        .unwrap();
    assert_eq!(next.action_index, 1);
    assert_eq!(wait_for_press(&probe.log, (440, 310)), 1);
    assert_eq!(
        presses(&probe.log).get(&(420, 300)),
        Some(&1),
        "exactly one input"
    );
    probe.client.release(&probe.session).await.unwrap();
}

/// A lease that expires while an action runs: the action, accepted under a live lease, runs to
/// completion and answers (the reaper waits for the session lock); the next request gets
/// `lease_expired`; the reaper then releases the session and its desktop.
#[tokio::test(flavor = "multi_thread")]
async fn a_lease_expiring_during_an_action_lets_it_finish_then_releases() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let broker = Broker::start_with(root.path(), None, &log, &["--lease-ttl-secs", "2"]);
    let client = broker.client();
    let session = leased_probe(&broker, "expiry").await;
    let (processes, display) = desktop_of(&broker, &session);
    let started = Instant::now();
    let waited = act(
        &client,
        &session,
        "long-wait",
        0,
        json!({"type": "wait", "milliseconds": 3000, "intent": "outlive the lease"}),
    )
    .await
    .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(3000));
    assert_eq!(waited.receipt.delivery.as_str(), "waited");

    let late = act(&client, &session, "late", 1, click(300, 300)).await;
    assert_eq!(api_code(&late), Some(ErrorCode::LeaseExpired), "{late:?}");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match client.status(&session).await {
            Ok(status) if status.state == SessionState::Released => break,
            Ok(_) => {}
            Err(ClientError::Api(body)) if body.code == ErrorCode::LeaseExpired => break,
            Err(other) => panic!("status failed: {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "the reaper did not release the session"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_desktop_gone(&processes, &display);
    assert_eq!(presses(&log).get(&(300, 300)), None);
}
