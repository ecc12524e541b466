//! Strict request parsing through the router, by table: one row per rejection kind, each
//! checked for its status, error code and the JSON path its message names, and for changing
//! nothing (action index, events log, the fake desktop's recorded input, sessions on disk).
//! Over 400 lines: the table is the test; one row per rejection kind keeps it reviewable.
//!
//! Requests are built here from raw bytes (invalid UTF-8 and odd content types included) and
//! carry the lease token read from the lease answer, when it has one.

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use desk_contract::strict::MAX_DEPTH;
use desk_server::{BODY_LIMIT_BYTES, Peer};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::Harness;

const JSON: Option<&str> = Some("application/json");

/// One request to the router with raw body bytes; returns the status and the JSON answer.
async fn send(
    harness: &Harness,
    path: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let mut builder = Request::builder()
        .method("POST")
        .uri(path)
        .extension(ConnectInfo(Peer::current_user()));
    if let Some(content_type) = content_type {
        builder = builder.header("content-type", content_type);
    }
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let request = builder.body(Body::from(body)).unwrap();
    let response = harness.app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let answer = serde_json::from_slice(&bytes).unwrap_or_else(|error| {
        panic!("{path}: non-JSON answer {bytes:?}: {error}");
    });
    (status, answer)
}

async fn get(harness: &Harness, path: &str, token: Option<&str>) -> (StatusCode, String) {
    let mut builder = Request::builder()
        .method("GET")
        .uri(path)
        .extension(ConnectInfo(Peer::current_user()));
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let response = harness
        .app
        .clone()
        .oneshot(builder.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A leased session: its id and lease token (when the broker issues one).
async fn lease(harness: &Harness, attempt: &str) -> (String, Option<String>) {
    let body = json!({"task_id": "strict", "attempt_id": attempt}).to_string();
    let (status, answer) = send(harness, "/v1/leases", None, JSON, body.into_bytes()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let id = answer["session_id"].as_str().unwrap().to_string();
    let token = answer["lease_token"].as_str().map(str::to_string);
    (id, token)
}

/// The session's `(state, next_action_index, action_count)` and its events log.
async fn snapshot(harness: &Harness, id: &str, token: Option<&str>) -> (Value, String) {
    let (status, text) = get(harness, &format!("/v1/sessions/{id}"), token).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let (status, events) = get(harness, &format!("/v1/sessions/{id}/events"), token).await;
    assert_eq!(status, StatusCode::OK, "{events}");
    let state = json!([
        body["state"],
        body["next_action_index"],
        body["action_count"]
    ]);
    (state, events)
}

struct Row {
    name: &'static str,
    body: Vec<u8>,
    content_type: Option<&'static str>,
    status: u16,
    code: &'static str,
    /// A fragment the message must contain (the JSON path, or the reason).
    names: &'static str,
}

fn row(
    name: &'static str,
    body: impl Into<Vec<u8>>,
    code: &'static str,
    names: &'static str,
) -> Row {
    Row {
        name,
        body: body.into(),
        content_type: JSON,
        status: 400,
        code,
        names,
    }
}

/// An action request around a raw action text.
fn with_action(action: &str) -> String {
    format!(r#"{{"request_id":"req-1","expected_action_index":0,"action":{action}}}"#)
}

/// An action request with a raw expected index.
fn with_index(index: &str) -> String {
    format!(
        r#"{{"request_id":"req-1","expected_action_index":{index},"action":{{"type":"done","intent":"stop"}}}}"#
    )
}

fn nested(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

fn action_rows() -> Vec<Row> {
    let action = "invalid_action";
    let request = "invalid_request";
    let click = |x: &str| {
        with_action(&format!(
            r#"{{"type":"click","x":{x},"y":5,"intent":"press"}}"#
        ))
    };
    let mut rows = vec![
        row("duplicate key, top level", r#"{"request_id":"a","request_id":"b","expected_action_index":0,"action":{"type":"done","intent":"x"}}"#, request, "$.request_id"),
        row("duplicate key, in the action", with_action(r#"{"type":"click","x":1,"x":2,"y":5,"intent":"press"}"#), action, "$.action.x"),
        row("duplicate key, nested in a drag point", with_action(r#"{"type":"drag","path":[{"x":1,"y":1,"y":2},{"x":2,"y":2}],"intent":"drag"}"#), action, "$.action.path[0].y"),
        row("duplicate action key", r#"{"request_id":"a","expected_action_index":0,"action":{"type":"done","intent":"x"},"action":{"type":"done","intent":"x"}}"#, request, "$.action"),
        row("NaN", click("NaN"), action, "$.action.x"),
        row("Infinity", click("Infinity"), action, "$.action.x"),
        row("-Infinity", click("-Infinity"), action, "$.action.x"),
        row("1e999", click("1e999"), action, "$.action.x"),
        row("integer beyond 2^53 in the action", click("1152921504606846976"), action, "$.action.x"),
        row("u64 overflow of the index", with_index("18446744073709551616"), request, "$.expected_action_index"),
        row("index beyond 2^53", with_index("9007199254740993"), request, "$.expected_action_index"),
        row("negative index", with_index("-1"), request, "$.expected_action_index"),
        row("boolean index", with_index("true"), request, "$.expected_action_index"),
        row("float index 0.0", with_index("0.0"), request, "$.expected_action_index"),
        row("string index", with_index(r#""0""#), request, "$.expected_action_index"),
        row("null index", with_index("null"), request, "$.expected_action_index"),
        row("boolean for a number", click("true"), action, "$.action.x"),
        row("float for an integer (1.0)", click("1.0"), action, "$.action.x"),
        row("float for an integer (1e2)", click("1e2"), action, "$.action.x"),
        row("string for a number", click(r#""10""#), action, "$.action.x"),
        row("null coordinate", click("null"), action, "$.action.x"),
        row("null intent", with_action(r#"{"type":"done","intent":null}"#), action, "$.action.intent"),
        row("null request_id", r#"{"request_id":null,"expected_action_index":0,"action":{"type":"done","intent":"x"}}"#, request, "$.request_id"),
        row("null action", with_action("null"), action, "$.action"),
        row("unknown field, top level", r#"{"request_id":"a","expected_action_index":0,"action":{"type":"done","intent":"x"},"priority":1}"#, request, "priority"),
        row("unknown field, in the action", with_action(r#"{"type":"click","x":1,"y":1,"intent":"press","force":true}"#), action, "force"),
        row("unknown field, in a drag point", with_action(r#"{"type":"drag","path":[{"x":1,"y":1,"z":0},{"x":2,"y":2}],"intent":"drag"}"#), action, "z"),
        row("unknown action type", with_action(r#"{"type":"hover","x":1,"y":1,"intent":"hover"}"#), action, "$.action.type"),
        row("deep nesting in the action", with_action(&format!(r#"{{"type":"done","intent":{}}}"#, nested(MAX_DEPTH + 5))), action, "nesting deeper than"),
        row("deep nesting outside the action", format!(r#"{{"request_id":"a","expected_action_index":0,"action":{{"type":"done","intent":"x"}},"extra":{}}}"#, nested(MAX_DEPTH + 5)), request, "nesting deeper than"),
        row("trailing garbage", with_index("0") + " {}", request, "trailing bytes"),
        row("two documents", with_index("0") + &with_index("0"), request, "trailing bytes"),
        row("invalid UTF-8", b"{\"request_id\":\"r\xff\",\"expected_action_index\":0,\"action\":{\"type\":\"done\",\"intent\":\"x\"}}".to_vec(), request, "not UTF-8"),
        row("lone surrogate", with_action(r#"{"type":"done","intent":"\ud800"}"#), request, "surrogate"),
        row("byte order mark", [&b"\xef\xbb\xbf"[..], with_index("0").as_bytes()].concat(), request, "unexpected character"),
        row("empty body", "", request, "empty document"),
        row("whitespace body", "  \n", request, "empty document"),
        row("array body", "[]", request, "$"),
        row("truncated body", r#"{"request_id":"r","expected_action_index":0,"action":{"type":"do"#, request, "unterminated"),
    ];
    rows.push(Row {
        content_type: Some("text/plain"),
        ..row(
            "text/plain content type",
            with_index("0"),
            request,
            "content-type",
        )
    });
    rows.push(Row {
        content_type: Some("application/x-www-form-urlencoded"),
        ..row(
            "form content type",
            with_index("0"),
            request,
            "content-type",
        )
    });
    rows.push(Row {
        status: 413,
        ..row(
            "oversized body",
            with_action(&format!(
                r#"{{"type":"type","text":"{}","intent":"x"}}"#,
                "x".repeat(BODY_LIMIT_BYTES)
            )),
            request,
            "exceeds",
        )
    });
    rows
}

async fn check_row(harness: &Harness, path: &str, token: Option<&str>, row: Row) {
    let input_len = row.body.len();
    let (status, answer) = send(harness, path, token, row.content_type, row.body).await;
    let name = row.name;
    assert_eq!(status.as_u16(), row.status, "{name}: {answer}");
    assert_eq!(answer["code"], row.code, "{name}: {answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(row.names),
        "{name}: message {message:?} lacks {:?}",
        row.names
    );
    assert!(
        message.len() < 600,
        "{name}: a {} byte message for a {input_len} byte body",
        message.len()
    );
}

#[tokio::test]
async fn rejected_action_requests_change_nothing() {
    let harness = Harness::new();
    let (id, token) = lease(&harness, "actions").await;
    let token = token.as_deref();
    let reset = json!({"request_id": "reset-1"}).to_string();
    let (status, answer) = send(
        &harness,
        &format!("/v1/sessions/{id}/reset"),
        token,
        JSON,
        reset.into_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let before = snapshot(&harness, &id, token).await;
    let n_inputs_before = harness.fake.n_inputs();
    let rows = action_rows();
    assert!(rows.len() >= 40, "only {} rows", rows.len());
    let path = format!("/v1/sessions/{id}/actions");
    for row in rows {
        let name = row.name;
        check_row(&harness, &path, token, row).await;
        assert_eq!(
            harness.fake.n_inputs(),
            n_inputs_before,
            "{name}: the desktop received input"
        );
        assert_eq!(
            snapshot(&harness, &id, token).await,
            before,
            "{name}: the session changed"
        );
    }
    // A query string on a body route is an unknown parameter.
    let query_path = format!("{path}?priority=1");
    check_row(
        &harness,
        &query_path,
        token,
        row("query string", with_index("0"), "invalid_request", "query"),
    )
    .await;
    assert_eq!(
        harness.fake.n_inputs(),
        n_inputs_before,
        "query string: input"
    );
    assert_eq!(
        snapshot(&harness, &id, token).await,
        before,
        "query string: state"
    );
    // The same session still takes a valid action at index 0: the refusals consumed nothing.
    let valid = with_action(r#"{"type":"click","x":10,"y":20,"intent":"press"}"#);
    let (status, answer) = send(&harness, &path, token, JSON, valid.into_bytes()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["action_index"], 0);
    assert!(harness.fake.n_inputs() > n_inputs_before);
    let (after, _) = snapshot(&harness, &id, token).await;
    assert_eq!(after[1], 1, "{after}");
}

fn n_session_dirs(harness: &Harness) -> usize {
    std::fs::read_dir(harness.dir.path().join("sessions"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

#[tokio::test]
async fn rejected_lease_and_reset_requests_change_nothing() {
    let harness = Harness::new();
    let request = "invalid_request";
    let lease_rows = vec![
        row(
            "duplicate key",
            r#"{"task_id":"t","attempt_id":"a","attempt_id":"b"}"#,
            request,
            "$.attempt_id",
        ),
        row(
            "unknown field",
            r#"{"task_id":"t","attempt_id":"a","priority":1}"#,
            request,
            "priority",
        ),
        row(
            "number for a string",
            r#"{"task_id":1,"attempt_id":"a"}"#,
            request,
            "$.task_id",
        ),
        row(
            "boolean profile",
            r#"{"task_id":"t","attempt_id":"a","profile":true}"#,
            request,
            "$.profile",
        ),
        row(
            "null task",
            r#"{"task_id":null,"attempt_id":"a"}"#,
            request,
            "$.task_id",
        ),
        row(
            "NaN",
            r#"{"task_id":"t","attempt_id":NaN}"#,
            request,
            "$.attempt_id",
        ),
        row(
            "deep nesting",
            format!(
                r#"{{"task_id":"t","attempt_id":"a","x":{}}}"#,
                nested(MAX_DEPTH + 1)
            ),
            request,
            "nesting deeper than",
        ),
        row(
            "trailing garbage",
            r#"{"task_id":"t","attempt_id":"a"}]"#,
            request,
            "trailing bytes",
        ),
        row(
            "invalid UTF-8",
            b"{\"task_id\":\"\xc3\",\"attempt_id\":\"a\"}".to_vec(),
            request,
            "not UTF-8",
        ),
        row("empty body", "", request, "empty document"),
    ];
    for lease_row in lease_rows {
        let name = lease_row.name;
        check_row(&harness, "/v1/leases", None, lease_row).await;
        assert_eq!(n_session_dirs(&harness), 0, "{name}: a session was created");
    }
    let (id, token) = lease(&harness, "reset").await;
    let token = token.as_deref();
    let before = snapshot(&harness, &id, token).await;
    let reset_rows = vec![
        row(
            "duplicate key",
            r#"{"request_id":"a","request_id":"b"}"#,
            request,
            "$.request_id",
        ),
        row(
            "unknown field",
            r#"{"request_id":"a","profile":"x"}"#,
            request,
            "profile",
        ),
        row(
            "number for a string",
            r#"{"request_id":7}"#,
            request,
            "$.request_id",
        ),
        row(
            "Infinity",
            r#"{"request_id":Infinity}"#,
            request,
            "$.request_id",
        ),
        row("empty body", "", request, "empty document"),
    ];
    let path = format!("/v1/sessions/{id}/reset");
    for reset_row in reset_rows {
        let name = reset_row.name;
        check_row(&harness, &path, token, reset_row).await;
        assert_eq!(
            snapshot(&harness, &id, token).await,
            before,
            "{name}: the session changed"
        );
        assert_eq!(
            harness.fake.n_inputs(),
            0,
            "{name}: the desktop received input"
        );
    }
    assert_eq!(before.0[0], "leased");
}

/// A small deterministic generator (xorshift64*) for the router fuzz below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % bound as u64).unwrap()
    }
}

const FUZZ_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "0",
    "-1",
    "1.5",
    "1e2",
    "1e999",
    "NaN",
    "true",
    "null",
    "9007199254740993",
    "\"x\"",
    "\"y\"",
    "\"type\"",
    "\"click\"",
    "\"intent\"",
    "\"\\ud800\"",
    "\u{ff}",
    " ",
];

/// Mutations of valid action bodies through the router: every answer is a JSON 200 or a typed
/// 4xx, and an answer other than a fresh 200 leaves the action index and the desktop's input
/// exactly as they were. `DESK_FUZZ_CASES` and `DESK_FUZZ_SEED` scale it (see
/// `docs/strict-parsing.md`).
#[tokio::test]
async fn mutated_action_bodies_through_the_router() {
    let n_cases: usize = std::env::var("DESK_FUZZ_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(400);
    let seed = std::env::var("DESK_FUZZ_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x00de_5c0f_u64);
    let mut rng = Rng(seed | 1);
    let harness = Harness::new();
    let (id, token) = lease(&harness, "fuzz").await;
    let token = token.as_deref();
    let reset = json!({"request_id": "reset-1"}).to_string();
    let (status, answer) = send(
        &harness,
        &format!("/v1/sessions/{id}/reset"),
        token,
        JSON,
        reset.into_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let path = format!("/v1/sessions/{id}/actions");
    let actions = [
        r#"{"type":"click","x":10,"y":20,"button":"right","modifiers":["shift"],"intent":"press"}"#,
        r#"{"type":"double_click","x":100,"y":200,"intent":"open"}"#,
        r#"{"type":"drag","path":[{"x":1,"y":2},{"x":30,"y":40}],"duration_ms":20,"intent":"drag"}"#,
        r#"{"type":"move","x":5,"y":6,"intent":"hover"}"#,
        r#"{"type":"scroll","dy":2,"intent":"scroll"}"#,
        r#"{"type":"key","keys":["ctrl","s"],"intent":"save"}"#,
        r#"{"type":"type","text":"hello","intent":"greet"}"#,
    ];
    let (mut n_accepted, mut n_refused) = (0, 0);
    for case_idx in 0..n_cases {
        let (before, _) = snapshot(&harness, &id, token).await;
        let index = before[1].as_u64().unwrap();
        let action = actions[rng.below(actions.len())];
        let mut body = format!(
            r#"{{"request_id":"fuzz-{case_idx}","expected_action_index":{index},"action":{action}}}"#
        )
        .into_bytes();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(body.len() + 1);
            match rng.below(3) {
                0 if at < body.len() => body[at] = u8::try_from(rng.below(256)).unwrap(),
                1 => {
                    let token = FUZZ_TOKENS[rng.below(FUZZ_TOKENS.len())];
                    body.splice(at..at, token.bytes());
                }
                _ => {
                    let end = (at + 1 + rng.below(6)).min(body.len());
                    body.drain(at.min(end)..end);
                }
            }
        }
        let n_inputs_before = harness.fake.n_inputs();
        let shown = String::from_utf8_lossy(&body).into_owned();
        let (status, answer) = send(&harness, &path, token, JSON, body).await;
        let (after, _) = snapshot(&harness, &id, token).await;
        let fresh = status == StatusCode::OK && answer["idempotent_replay"] == false;
        if fresh {
            n_accepted += 1;
            assert_eq!(after[1], index + 1, "{shown}: {answer}");
        } else {
            n_refused += 1;
            assert!(
                status.is_client_error() || status == StatusCode::OK,
                "{shown}: {status} {answer}"
            );
            if status != StatusCode::OK {
                assert!(
                    [
                        "invalid_request",
                        "invalid_action",
                        "action_sequence_conflict"
                    ]
                    .contains(&answer["code"].as_str().unwrap_or_default()),
                    "{shown}: {answer}"
                );
            }
            assert_eq!(after, before, "{shown}: {answer}");
            assert_eq!(
                harness.fake.n_inputs(),
                n_inputs_before,
                "{shown}: {answer}"
            );
        }
    }
    // Both branches ran: the mutations neither always break nor never break the body.
    assert!(
        n_accepted > 0 && n_refused > 0,
        "{n_accepted} accepted, {n_refused} refused"
    );
}
