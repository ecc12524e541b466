//! Table-driven refusals: every invalid action or request answers a stable status and code, and
//! the desktop records nothing.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::Harness;

const BAD_REQUEST: u16 = 400;
const CONFLICT: u16 = 409;

/// An action envelope with a valid request id and index around `action`.
fn envelope(action: Value) -> String {
    json!({"request_id": "req", "expected_action_index": 0, "action": action}).to_string()
}

fn with_intent(mut action: Value) -> String {
    action["intent"] = json!("test");
    envelope(action)
}

fn drag_points(n_points: usize) -> Value {
    (0..n_points)
        .map(|point_idx| json!({"x": point_idx, "y": 1}))
        .collect()
}

fn cases() -> Vec<(&'static str, String, u16, &'static str)> {
    let invalid = |name, body| (name, body, BAD_REQUEST, "invalid_action");
    let request = |name, body| (name, body, BAD_REQUEST, "invalid_request");
    let key = |keys: Value| with_intent(json!({"type": "key", "keys": keys}));
    vec![
        invalid("click x at width", with_intent(json!({"type": "click", "x": 640, "y": 10}))),
        invalid("click y at height", with_intent(json!({"type": "click", "x": 10, "y": 400}))),
        invalid("click negative x", with_intent(json!({"type": "click", "x": -1, "y": 10}))),
        invalid("click negative y", with_intent(json!({"type": "click", "x": 10, "y": -5}))),
        invalid("click huge x", with_intent(json!({"type": "click", "x": 1_000_000_000_000i64, "y": 1}))),
        invalid("double click out of bounds", with_intent(json!({"type": "double_click", "x": 700, "y": 1}))),
        invalid("move out of bounds", with_intent(json!({"type": "move", "x": 1, "y": 4000}))),
        invalid("move negative duration", with_intent(json!({"type": "move", "x": 1, "y": 1, "duration_ms": -1}))),
        invalid("move too slow", with_intent(json!({"type": "move", "x": 1, "y": 1, "duration_ms": 5_001}))),
        invalid("drag with 0 points", with_intent(json!({"type": "drag", "path": []}))),
        invalid("drag with 1 point", with_intent(json!({"type": "drag", "path": drag_points(1)}))),
        invalid("drag with 65 points", with_intent(json!({"type": "drag", "path": drag_points(65)}))),
        invalid(
            "drag point out of bounds",
            with_intent(json!({"type": "drag", "path": [{"x": 1, "y": 1}, {"x": 641, "y": 1}]})),
        ),
        invalid(
            "drag negative duration",
            with_intent(json!({"type": "drag", "path": drag_points(2), "duration_ms": -10})),
        ),
        invalid(
            "drag too slow",
            with_intent(json!({"type": "drag", "path": drag_points(2), "duration_ms": 10_001})),
        ),
        invalid(
            "drag point with extra field",
            with_intent(json!({"type": "drag", "path": [{"x": 1, "y": 1, "z": 0}, {"x": 2, "y": 2}]})),
        ),
        invalid("wait 0", with_intent(json!({"type": "wait", "milliseconds": 0}))),
        invalid("wait negative", with_intent(json!({"type": "wait", "milliseconds": -3}))),
        invalid("wait too long", with_intent(json!({"type": "wait", "milliseconds": 10_001}))),
        invalid("scroll 0,0", with_intent(json!({"type": "scroll", "dx": 0, "dy": 0}))),
        invalid("scroll too far down", with_intent(json!({"type": "scroll", "dy": 26}))),
        invalid("scroll too far left", with_intent(json!({"type": "scroll", "dx": -26}))),
        invalid("type with newline", with_intent(json!({"type": "type", "text": "a\nb"}))),
        invalid("type with tab", with_intent(json!({"type": "type", "text": "a\tb"}))),
        invalid("type non-ASCII", with_intent(json!({"type": "type", "text": "caf\u{e9}"}))),
        invalid("type 2001 characters", with_intent(json!({"type": "type", "text": "x".repeat(2_001)}))),
        invalid("type empty", with_intent(json!({"type": "type", "text": ""}))),
        invalid("type escape character", with_intent(json!({"type": "type", "text": "a\u{1b}[2J"}))),
        invalid("unknown key", key(json!(["hyperdrive"]))),
        invalid("empty chord", key(json!([]))),
        invalid("win key", key(json!(["win"]))),
        invalid("super+l", key(json!(["super", "l"]))),
        invalid("alt+f4", key(json!(["alt", "f4"]))),
        invalid("ctrl+alt+delete", key(json!(["ctrl+alt+delete"]))),
        invalid("ctrl+shift+esc", key(json!(["ctrl", "shift", "esc"]))),
        invalid("ctrl+alt+backspace", key(json!(["ctrl", "alt", "backspace"]))),
        invalid("ctrl+alt+f3", key(json!(["ctrl+alt+f3"]))),
        invalid(
            "duplicate modifier",
            with_intent(json!({"type": "click", "x": 1, "y": 1, "modifiers": ["ctrl", "ctrl"]})),
        ),
        invalid("unknown modifier", with_intent(json!({"type": "click", "x": 1, "y": 1, "modifiers": ["meta"]}))),
        invalid("unknown button", with_intent(json!({"type": "click", "x": 1, "y": 1, "button": "fourth"}))),
        invalid("missing intent", envelope(json!({"type": "click", "x": 1, "y": 1}))),
        invalid("blank intent", envelope(json!({"type": "click", "x": 1, "y": 1, "intent": "   "}))),
        invalid("intent too long", envelope(json!({"type": "click", "x": 1, "y": 1, "intent": "i".repeat(501)}))),
        invalid("intent with control character", envelope(json!({"type": "click", "x": 1, "y": 1, "intent": "a\u{7}"}))),
        invalid("intent of wrong type", envelope(json!({"type": "click", "x": 1, "y": 1, "intent": 5}))),
        invalid("unknown action type", with_intent(json!({"type": "hover", "x": 1, "y": 1}))),
        invalid("missing action type", with_intent(json!({"x": 1, "y": 1}))),
        invalid("unknown action field", with_intent(json!({"type": "click", "x": 1, "y": 1, "force": true}))),
        invalid("missing coordinate", with_intent(json!({"type": "click", "x": 1}))),
        invalid("string coordinate", with_intent(json!({"type": "click", "x": "10", "y": 1}))),
        invalid("float coordinate", with_intent(json!({"type": "click", "x": 10.5, "y": 1}))),
        invalid("boolean coordinate", with_intent(json!({"type": "click", "x": true, "y": 1}))),
        invalid("null coordinate", with_intent(json!({"type": "click", "x": null, "y": 1}))),
        invalid("action is not an object", envelope(json!("click"))),
        request("missing request_id", json!({"expected_action_index": 0, "action": {"type": "done", "intent": "x"}}).to_string()),
        request("empty request_id", json!({"request_id": "", "expected_action_index": 0, "action": {"type": "done", "intent": "x"}}).to_string()),
        request("request_id with spaces", json!({"request_id": "a b", "expected_action_index": 0, "action": {"type": "done", "intent": "x"}}).to_string()),
        request("missing expected_action_index", json!({"request_id": "r", "action": {"type": "done", "intent": "x"}}).to_string()),
        request("negative expected_action_index", json!({"request_id": "r", "expected_action_index": -1, "action": {"type": "done", "intent": "x"}}).to_string()),
        request("string expected_action_index", json!({"request_id": "r", "expected_action_index": "0", "action": {"type": "done", "intent": "x"}}).to_string()),
        request("missing action", json!({"request_id": "r", "expected_action_index": 0}).to_string()),
        request("unknown envelope field", json!({"request_id": "r", "expected_action_index": 0, "action": {"type": "done", "intent": "x"}, "priority": 1}).to_string()),
        request("malformed JSON", "{\"request_id\": \"r\", ".to_string()),
        request("empty body", String::new()),
        request("JSON array body", "[]".to_string()),
        (
            "body over the limit",
            with_intent(json!({"type": "type", "text": "x".repeat(300 * 1024)})),
            413,
            "invalid_request",
        ),
        (
            "unexpected index",
            json!({"request_id": "r", "expected_action_index": 3, "action": {"type": "done", "intent": "x"}}).to_string(),
            CONFLICT,
            "action_sequence_conflict",
        ),
    ]
}

#[tokio::test]
async fn invalid_actions_and_requests_send_nothing() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let path = format!("/v1/sessions/{id}/actions");
    for (name, body, expected_status, expected_code) in cases {
        let (status, text) = harness.raw("POST", &path, Some(body)).await;
        let answer: Value = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("{name}: non-JSON answer {text:?}: {error}"));
        assert_eq!(status.as_u16(), expected_status, "{name}: {answer}");
        assert_eq!(answer["code"], expected_code, "{name}: {answer}");
        assert!(
            answer["message"]
                .as_str()
                .is_some_and(|message| !message.is_empty()),
            "{name}"
        );
        assert_eq!(
            harness.fake.n_inputs(),
            0,
            "{name}: the desktop received input"
        );
    }
    let status = harness.status(&id).await;
    assert_eq!(status["state"], "ready");
    assert_eq!(status["next_action_index"], 0);
    let (status, events) = harness
        .raw("GET", &format!("/v1/sessions/{id}/events"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(events.is_empty(), "{events}");
}

#[tokio::test]
async fn invalid_lease_and_reset_requests() {
    let harness = Harness::new();
    let cases = [
        ("/v1/leases", "{}".to_string()),
        ("/v1/leases", json!({"task_id": "t"}).to_string()),
        (
            "/v1/leases",
            json!({"task_id": "", "attempt_id": "a"}).to_string(),
        ),
        (
            "/v1/leases",
            json!({"task_id": "t", "attempt_id": "a", "extra": 1}).to_string(),
        ),
        (
            "/v1/leases",
            json!({"task_id": 1, "attempt_id": "a"}).to_string(),
        ),
        ("/v1/leases", "not json".to_string()),
    ];
    for (path, body) in cases {
        let (status, text) = harness.raw("POST", path, Some(body.clone())).await;
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["code"], "invalid_request", "{body}");
    }
    let id = harness.lease("t", "a").await;
    for body in [
        "{}",
        "{\"request_id\": 3}",
        "{\"request_id\": \"r\", \"x\": 1}",
        "{",
    ] {
        let (status, text) = harness
            .raw(
                "POST",
                &format!("/v1/sessions/{id}/reset"),
                Some(body.to_string()),
            )
            .await;
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_request")),
            "{body}"
        );
    }
    assert_eq!(harness.status(&id).await["state"], "leased");
}

#[tokio::test]
async fn a_reused_request_id_with_invalid_content_is_a_sequence_conflict() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let path = format!("/v1/sessions/{id}/actions");
    let used = json!({"request_id": "used", "expected_action_index": 0,
        "action": {"type": "click", "x": 1, "y": 1, "intent": "first"}});
    let (status, text) = harness.raw("POST", &path, Some(used.to_string())).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let n_inputs = harness.fake.n_inputs();
    let reuses = [
        (
            "out of bounds",
            json!({"type": "click", "x": 640, "y": 1, "intent": "again"}),
        ),
        (
            "unknown type",
            json!({"type": "hover", "x": 1, "y": 1, "intent": "again"}),
        ),
        ("missing intent", json!({"type": "click", "x": 1, "y": 1})),
    ];
    for (name, action) in reuses {
        for request_id in ["used", "fresh"] {
            let body =
                json!({"request_id": request_id, "expected_action_index": 1, "action": action});
            let (status, text) = harness.raw("POST", &path, Some(body.to_string())).await;
            let answer: Value = serde_json::from_str(&text).unwrap();
            let expected = if request_id == "used" {
                (CONFLICT, "action_sequence_conflict")
            } else {
                (BAD_REQUEST, "invalid_action")
            };
            assert_eq!(
                (status.as_u16(), answer["code"].as_str().unwrap()),
                expected,
                "{name} under {request_id:?}: {answer}"
            );
        }
    }
    assert_eq!(
        harness.fake.n_inputs(),
        n_inputs,
        "the desktop received input"
    );
    assert_eq!(harness.status(&id).await["next_action_index"], 1);
}

#[tokio::test]
async fn a_missing_session_directory_is_detected_before_input() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let session_dir = harness.dir.path().join("sessions").join(&id);
    assert!(session_dir.is_dir());
    std::fs::remove_dir_all(&session_dir).unwrap();
    let body = json!({"request_id": "after-delete", "expected_action_index": 0,
        "action": {"type": "click", "x": 1, "y": 1, "intent": "click"}});
    let (status, text) = harness
        .raw(
            "POST",
            &format!("/v1/sessions/{id}/actions"),
            Some(body.to_string()),
        )
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert_eq!(harness.fake.n_inputs(), 0, "the desktop received input");
    let status = harness.status(&id).await;
    assert_eq!(status["state"], "error", "{status}");
    assert_eq!(status["next_action_index"], 0, "{status}");
}
