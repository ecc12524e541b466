//! Strict request parsing through the whole stack: bad action bodies sent as raw HTTP over the
//! broker's Unix socket to a session on a real Xvfb desktop are refused with typed errors, the
//! probe window records nothing and the action index does not move; a valid body sent the same
//! way afterwards reaches the probe at index 0.

use std::path::Path;
use std::time::Duration;

use desk_contract::api::{LeaseRequest, ResetRequest};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::probe::{of_type, probe_events, wait_for_events};
use crate::support::{Broker, xvfb_available};

/// One raw HTTP/1.1 exchange; returns the status and the JSON body.
async fn raw_post(
    socket: &Path,
    path: &str,
    token: Option<&str>,
    content_type: &str,
    body: &[u8],
) -> (u16, Value) {
    let mut stream = UnixStream::connect(socket).await.unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: deskbroker\r\nconnection: close\r\n\
         content-type: {content_type}\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("authorization: Bearer {token}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    // The broker may answer 413 and close before reading a large body.
    let _ = stream.write_all(body).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let json = text
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or_else(|| panic!("no JSON body in {text:?}"));
    (status, json)
}

fn envelope(action: &str) -> String {
    format!(r#"{{"request_id":"strict-1","expected_action_index":0,"action":{action}}}"#)
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_action_bodies_reach_nothing() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let broker = Broker::start(root.path(), None, &log);
    let client = broker.client();
    let lease = client
        .lease(&LeaseRequest {
            task_id: "strict".into(),
            attempt_id: "strict-1".into(),
            profile: Some("probe".into()),
        })
        .await
        .unwrap();
    let session = lease.session_id.clone();
    // Read the token from the lease answer's JSON, so this works with and without one.
    let lease_json = serde_json::to_value(&lease).unwrap();
    let token = lease_json["lease_token"].as_str().map(str::to_string);
    client
        .reset(
            &session,
            &ResetRequest {
                request_id: "reset-1".into(),
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = probe_events(&log).len();
    let before = client.status(&session).await.unwrap();

    let deep = "[".repeat(80) + &"]".repeat(80);
    // A 0xff byte inside the text: the body is not UTF-8.
    let invalid_utf8: Vec<u8> = envelope(r#"{"type":"type","text":"ab~","intent":"t"}"#)
        .bytes()
        .map(|byte| if byte == b'~' { 0xff } else { byte })
        .collect();
    let bad: Vec<(&str, Vec<u8>, &str, u16, &str)> = vec![
        ("duplicate key", envelope(r#"{"type":"click","x":10,"x":500,"y":300,"intent":"dup"}"#).into_bytes(), "application/json", 400, "invalid_action"),
        ("NaN", envelope(r#"{"type":"click","x":NaN,"y":300,"intent":"nan"}"#).into_bytes(), "application/json", 400, "invalid_action"),
        ("1e999", envelope(r#"{"type":"click","x":1e999,"y":300,"intent":"inf"}"#).into_bytes(), "application/json", 400, "invalid_action"),
        ("boolean coordinate", envelope(r#"{"type":"click","x":true,"y":300,"intent":"bool"}"#).into_bytes(), "application/json", 400, "invalid_action"),
        ("float coordinate", envelope(r#"{"type":"click","x":300.0,"y":300,"intent":"float"}"#).into_bytes(), "application/json", 400, "invalid_action"),
        ("unknown action field", envelope(r#"{"type":"type","text":"abc","intent":"t","delay":1}"#).into_bytes(), "application/json", 400, "invalid_action"),
        ("deep nesting", envelope(&format!(r#"{{"type":"type","text":"abc","intent":{deep}}}"#)).into_bytes(), "application/json", 400, "invalid_action"),
        ("u64 overflow index", br#"{"request_id":"strict-1","expected_action_index":18446744073709551616,"action":{"type":"type","text":"abc","intent":"t"}}"#.to_vec(), "application/json", 400, "invalid_request"),
        ("trailing garbage", (envelope(r#"{"type":"type","text":"abc","intent":"t"}"#) + "x").into_bytes(), "application/json", 400, "invalid_request"),
        ("invalid UTF-8", invalid_utf8, "application/json", 400, "invalid_request"),
        ("wrong content type", envelope(r#"{"type":"type","text":"abc","intent":"t"}"#).into_bytes(), "text/plain", 400, "invalid_request"),
        ("oversized", envelope(&format!(r#"{{"type":"type","text":"{}","intent":"t"}}"#, "a".repeat(300 * 1024))).into_bytes(), "application/json", 413, "invalid_request"),
    ];
    let path = format!("/v1/sessions/{session}/actions");
    for (name, body, content_type, status, code) in bad {
        let (got_status, answer) =
            raw_post(&broker.socket, &path, token.as_deref(), content_type, &body).await;
        assert_eq!(got_status, status, "{name}: {answer}");
        assert_eq!(answer["code"], code, "{name}: {answer}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = client.status(&session).await.unwrap();
    assert_eq!(after.next_action_index, before.next_action_index);
    assert_eq!(after.action_count, before.action_count);
    assert_eq!(after.state, before.state);
    let events = probe_events(&log);
    assert_eq!(
        events.len(),
        baseline,
        "the probe received input: {:?}",
        &events[baseline..]
    );

    // The same raw path with a valid body does reach the desktop, at index 0.
    let valid = envelope(r#"{"type":"click","x":321,"y":234,"intent":"valid click"}"#);
    let (status, answer) = raw_post(
        &broker.socket,
        &path,
        token.as_deref(),
        "application/json",
        valid.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["action_index"], 0);
    let events = wait_for_events(&log, baseline + 2);
    let presses = of_type(&events[baseline..], "button_press");
    assert_eq!(presses.len(), 1, "{presses:?}");
    assert_eq!(
        (presses[0]["root_x"].as_i64(), presses[0]["root_y"].as_i64()),
        (Some(321), Some(234))
    );
    client.release(&session).await.unwrap();
}
