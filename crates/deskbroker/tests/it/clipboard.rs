//! The task-scoped clipboard on a real desktop (broker process, sandboxed worker, the probe
//! window as the app): text put on the clipboard arrives in the probe's paste (ctrl+v), the
//! probe's copy (ctrl+c) is what the broker reads, NUL is refused before the desktop, and a
//! broker on the default policy (`clipboard: none`) refuses both directions.

use std::time::{Duration, Instant};

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::clipboard::ClipboardWriteRequest;
use serde_json::{Value, json};

use crate::probe::{ProbeSession, act, leased_probe, of_type, probe_events};
use crate::support::{Broker, signed_policy_args, xvfb_available};

const POLICY: &str = r#"schema_version: deskbroker.workspace-policy.v1
policy_version: clipboard-it
workspace: {disposable: true, logged_out: true}
apps: {allowed_profiles: [probe]}
writable_directories: [attempt]
network: {mode: none, allowed_domains: []}
clipboard: read_write
limits: {max_task_minutes: 30, max_refused_actions: 10, idle_seconds: 600}
validity: {not_before: "2020-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}
"#;

/// Writes the signed read-write policy and its public key under `root`; the serve arguments.
fn read_write_policy(root: &std::path::Path) -> Vec<String> {
    signed_policy_args(root, POLICY, 9)
}

/// The probe's `kind` records after `baseline`, waiting up to 5 s for at least one.
fn wait_for(log: &std::path::Path, baseline: usize, kind: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let events = probe_events(log);
        let found: Vec<Value> = of_type(&events[baseline.min(events.len())..], kind)
            .into_iter()
            .cloned()
            .collect();
        if !found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn refused_with<T: std::fmt::Debug>(result: Result<T, ClientError>, code: ErrorCode) {
    assert!(
        matches!(result, Err(ClientError::Api(ref body)) if body.code == code),
        "expected {code:?}: {result:?}"
    );
}

fn write_request(text: &str) -> ClipboardWriteRequest {
    ClipboardWriteRequest {
        text: text.to_string(),
        control: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn put_text_is_pasted_and_the_apps_copy_is_read() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let args = read_write_policy(root.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let broker = Broker::start_with(root.path(), None, &log, &args);
    let client: Client = broker.client();
    let session = leased_probe(&broker, "clipboard").await;

    let text = "pasted by deskbroker: a\r\nb 文本🙂";
    let before_write = probe_events(&log).len();
    let started = Instant::now();
    let written = client
        .clipboard_write(&session, &write_request(text))
        .await
        .unwrap();
    let write_ms = started.elapsed().as_millis();
    assert_eq!(written.byte_length, text.len() as u64);
    println!("clipboard write took {write_ms} ms");
    std::thread::sleep(Duration::from_millis(200));
    let baseline = probe_events(&log).len();
    assert_eq!(
        baseline, before_write,
        "a clipboard write sends the app nothing"
    );
    let paste = json!({"type": "key", "keys": ["ctrl", "v"], "intent": "paste"});
    act(&client, &session, "paste-1", 0, paste).await.unwrap();
    let pastes = wait_for(&log, baseline, "paste");
    assert_eq!(pastes.len(), 1, "{pastes:?}");
    assert_eq!(pastes[0]["char"], text);

    let baseline = probe_events(&log).len();
    let copy = json!({"type": "key", "keys": ["ctrl", "c"], "intent": "copy"});
    act(&client, &session, "copy-1", 1, copy).await.unwrap();
    let copies = wait_for(&log, baseline, "copy");
    assert_eq!(copies.len(), 1, "{copies:?}");
    let started = Instant::now();
    let read = client.clipboard_read(&session, None, None).await.unwrap();
    println!("clipboard read took {} ms", started.elapsed().as_millis());
    assert_eq!(read.text, copies[0]["char"].as_str().unwrap());
    assert_eq!(read.text, "probe copy 1");
    assert!(!read.truncated);
    let capped = client
        .clipboard_read(&session, Some(5), None)
        .await
        .unwrap();
    assert_eq!((capped.text.as_str(), capped.truncated), ("probe", true));

    // NUL is refused before the desktop: the app's copy is still there.
    refused_with(
        client
            .clipboard_write(&session, &write_request("a\0b"))
            .await,
        ErrorCode::InvalidParams,
    );
    refused_with(
        client
            .clipboard_read(&session, Some(2 * 1024 * 1024), None)
            .await,
        ErrorCode::InvalidParams,
    );
    let read = client.clipboard_read(&session, None, None).await.unwrap();
    assert_eq!(read.text, "probe copy 1");

    // Empty text clears; the next paste gets nothing.
    client
        .clipboard_write(&session, &write_request(""))
        .await
        .unwrap();
    let read = client.clipboard_read(&session, None, None).await.unwrap();
    assert_eq!((read.text.as_str(), read.byte_length), ("", 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_policy_refuses_the_clipboard_on_a_real_desktop() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("clipboard-none").await;
    refused_with(
        probe
            .client
            .clipboard_read(&probe.session, None, None)
            .await,
        ErrorCode::ClipboardDisabled,
    );
    refused_with(
        probe
            .client
            .clipboard_write(&probe.session, &write_request("x"))
            .await,
        ErrorCode::ClipboardDisabled,
    );
}
