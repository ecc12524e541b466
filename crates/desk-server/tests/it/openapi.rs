//! The served OpenAPI document against what the broker really answers: a scenario over the fake
//! backend (lease, reset, actions, program, zoom, checkpoint, logs, release and refusals) whose
//! every answer is validated with a JSON Schema validator against the schema the document
//! gives for that operation and status, and the error responses each operation documents
//! against the codes it names (every status of every code, from `ErrorCode::ALL`).

use std::collections::{BTreeSet, HashSet};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use desk_contract::ErrorCode;
use desk_server::{Peer, error_statuses};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::control::program;
use crate::support::{Harness, click};

/// The codes a response's description names.
fn named_codes(description: &str) -> HashSet<ErrorCode> {
    let words: BTreeSet<&str> = description
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    ErrorCode::ALL
        .iter()
        .copied()
        .filter(|code| words.contains(code.as_str()))
        .collect()
}

/// The served document, with a validator per (method, path, status) answer.
struct Document {
    document: Value,
    drift: Vec<String>,
    n_checked: usize,
}

impl Document {
    async fn served(harness: &Harness) -> Document {
        let (status, document) = harness.call("GET", "/v1/openapi.json", None).await;
        assert_eq!(status, StatusCode::OK);
        Document {
            document,
            drift: Vec::new(),
            n_checked: 0,
        }
    }

    fn operation(&self, method: &str, path: &str) -> &Value {
        &self.document["paths"][path][method.to_lowercase()]
    }

    /// Validates one real answer against the schema documented for its status.
    fn check(&mut self, method: &str, path: &str, status: StatusCode, body: &Value) {
        self.n_checked += 1;
        let operation = self.operation(method, path).clone();
        let label = format!("{method} {path} {}", status.as_u16());
        if !operation.is_object() {
            self.drift
                .push(format!("{label}: operation not documented"));
            return;
        }
        let response = &operation["responses"][status.as_u16().to_string()];
        if !response.is_object() {
            self.drift.push(format!(
                "{label}: status not documented (answer {})",
                clip(body)
            ));
            return;
        }
        if let Some(code) = body["code"].as_str().filter(|_| !status.is_success()) {
            let named = named_codes(response["description"].as_str().unwrap_or(""));
            if !named.iter().any(|named| named.as_str() == code) {
                self.drift
                    .push(format!("{label}: code {code} not among those documented"));
            }
        }
        let schema = &response["content"]["application/json"]["schema"];
        if !schema.is_object() {
            self.drift.push(format!("{label}: no JSON schema"));
            return;
        }
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.document["components"],
            "allOf": [schema],
        });
        let validator = match jsonschema::validator_for(&root) {
            Ok(validator) => validator,
            Err(error) => {
                self.drift
                    .push(format!("{label}: schema unusable: {error}"));
                return;
            }
        };
        for error in validator.iter_errors(body) {
            self.drift.push(format!(
                "{label}: at {}: {}",
                error.instance_path(),
                clip_text(&error.to_string())
            ));
        }
    }
}

impl Document {
    /// An NDJSON answer: the 200 documents that media type, and each line is a JSON object.
    fn check_ndjson(&mut self, method: &str, path: &str, text: &str) {
        self.n_checked += 1;
        let content = &self.operation(method, path)["responses"]["200"]["content"];
        if !content["application/x-ndjson"].is_object() {
            self.drift.push(format!(
                "{method} {path} 200: application/x-ndjson not documented"
            ));
        }
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            assert!(record.is_object(), "{line}");
        }
    }
}

fn clip(value: &Value) -> String {
    clip_text(&value.to_string())
}

fn clip_text(text: &str) -> String {
    text.chars().take(200).collect()
}

/// Sends `method path` with `authorization` as the only credential (none when `None`).
async fn send_with(
    harness: &Harness,
    method: &str,
    path: &str,
    authorization: Option<&str>,
) -> (StatusCode, Value) {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .extension(ConnectInfo(Peer::current_user()));
    if let Some(authorization) = authorization {
        builder = builder.header("authorization", authorization);
    }
    let request = builder.body(Body::from("{}")).unwrap();
    let response = harness.app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn every_answer_of_a_session_matches_the_served_document() {
    let harness = Harness::new();
    let mut document = Document::served(&harness).await;
    let lease_body = json!({"task_id": "task-1", "attempt_id": "attempt-1"});
    let (status, lease) = harness
        .call("POST", "/v1/leases", Some(lease_body.clone()))
        .await;
    document.check("POST", "/v1/leases", status, &lease);
    let id = lease["session_id"].as_str().unwrap().to_string();
    let session = |tail: &str| format!("/v1/sessions/{id}{tail}");
    let (status, replay) = harness.call("POST", "/v1/leases", Some(lease_body)).await;
    document.check("POST", "/v1/leases", status, &replay);
    let (status, refused) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "a", "profile": "nope"})),
        )
        .await;
    document.check("POST", "/v1/leases", status, &refused);

    let (status, reset) = harness
        .call(
            "POST",
            &session("/reset"),
            Some(json!({"request_id": "r0"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    document.check("POST", "/v1/sessions/{id}/reset", status, &reset);
    let (status, shot) = harness.call("GET", &session("/screenshot"), None).await;
    document.check("GET", "/v1/sessions/{id}/screenshot", status, &shot);

    let actions = [
        click(10, 20),
        json!({"type": "drag", "path": [{"x": 5, "y": 5}, {"x": 40, "y": 30}], "intent": "draw"}),
        json!({"type": "type", "text": "LINE", "intent": "enter a command"}),
        json!({"type": "key", "keys": ["return"], "intent": "run it"}),
    ];
    for (index, action) in actions.iter().enumerate() {
        let (status, answer) = harness
            .act(&id, &format!("a{index}"), index as u64, action.clone())
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        document.check("POST", "/v1/sessions/{id}/actions", status, &answer);
    }
    // Refusals: an invalid action, a reused request id, a skipped index.
    let refusals = [
        (
            "b0",
            4,
            json!({"type": "click", "x": -1, "y": 0, "intent": "off"}),
        ),
        ("a0", 4, click(1, 1)),
        ("b1", 9, click(1, 1)),
    ];
    for (request_id, index, action) in refusals {
        let (status, answer) = harness.act(&id, request_id, index, action).await;
        assert!(status.is_client_error(), "{answer}");
        document.check("POST", "/v1/sessions/{id}/actions", status, &answer);
    }

    let (status, claimed) = harness
        .call(
            "POST",
            &session("/control"),
            Some(json!({"owner": "agent"})),
        )
        .await;
    document.check("POST", "/v1/sessions/{id}/control", status, &claimed);
    let (status, control) = harness.call("GET", &session("/control"), None).await;
    document.check("GET", "/v1/sessions/{id}/control", status, &control);
    let token = json!({"control": {"owner": "agent", "generation": claimed["generation"]}});
    let steps = json!([click(3, 3), {"type": "type", "text": "x", "intent": "t"}]);
    let (status, ran) = harness
        .call(
            "POST",
            &session("/programs"),
            Some(program("p0", 4, steps, token)),
        )
        .await;
    document.check("POST", "/v1/sessions/{id}/programs", status, &ran);
    let screenshot_id = ran["screenshot"]["screenshot_id"].clone();
    let zoom = json!({"screenshot_id": screenshot_id, "x": 0, "y": 0, "width": 64, "height": 40});
    let (status, zoomed) = harness.call("POST", &session("/zoom"), Some(zoom)).await;
    document.check("POST", "/v1/sessions/{id}/zoom", status, &zoomed);
    let (status, capabilities) = harness.call("GET", &session("/capabilities"), None).await;
    document.check(
        "GET",
        "/v1/sessions/{id}/capabilities",
        status,
        &capabilities,
    );
    for path in ["/v1/capabilities", "/v1/capabilities/input_programs"] {
        let (status, answer) = harness.call("GET", path, None).await;
        let template = if path.ends_with("programs") {
            "/v1/capabilities/{feature}"
        } else {
            path
        };
        document.check("GET", template, status, &answer);
    }
    let (status, windows) = harness.call("GET", &session("/windows"), None).await;
    document.check("GET", "/v1/sessions/{id}/windows", status, &windows);

    let (status, refused) = harness.call("GET", &session("/artifact"), None).await;
    document.check("GET", "/v1/sessions/{id}/artifact", status, &refused);
    let (status, checkpoint) = harness.call("POST", &session("/checkpoint"), None).await;
    assert_eq!(status, StatusCode::OK, "{checkpoint}");
    document.check("POST", "/v1/sessions/{id}/checkpoint", status, &checkpoint);
    let (status, artifact) = harness.call("GET", &session("/artifact"), None).await;
    document.check("GET", "/v1/sessions/{id}/artifact", status, &artifact);
    for tail in ["/events", "/frame-events"] {
        let (status, text) = harness.raw("GET", &session(tail), None).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        let path = format!("/v1/sessions/{{id}}{tail}");
        document.check_ndjson("GET", &path, &text);
    }
    let (status, answer) = harness.call("GET", &session(""), None).await;
    document.check("GET", "/v1/sessions/{id}", status, &answer);

    // A wrong and a missing lease token.
    for authorization in [Some("Bearer wrong"), None] {
        let (status, answer) = send_with(&harness, "GET", &session(""), authorization).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
        document.check("GET", "/v1/sessions/{id}", status, &answer);
        let (status, answer) =
            send_with(&harness, "POST", &session("/actions"), authorization).await;
        document.check("POST", "/v1/sessions/{id}/actions", status, &answer);
    }

    let (status, released) = harness.call("DELETE", &session(""), None).await;
    document.check("DELETE", "/v1/sessions/{id}", status, &released);
    let (status, after) = harness.act(&id, "late", 6, click(1, 1)).await;
    document.check("POST", "/v1/sessions/{id}/actions", status, &after);
    let (status, drained) = harness.call("POST", "/v1/drain", None).await;
    document.check("POST", "/v1/drain", status, &drained);
    let (status, refused) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "after-drain"})),
        )
        .await;
    assert_eq!(refused["code"], "lease_conflict", "{refused}");
    document.check("POST", "/v1/leases", status, &refused);

    assert!(document.n_checked >= 30, "{}", document.n_checked);
    // The checks refuse what the document does not allow: an unknown code, a wrong type.
    let drift_before = document.drift.len();
    let mut broken = after.clone();
    broken["code"] = json!("no_such_code");
    document.check("POST", "/v1/sessions/{id}/actions", status, &broken);
    let after_code = document.drift.len();
    assert!(after_code > drift_before, "an unknown code passed");
    let mut broken = replay.clone();
    broken["idempotent_replay"] = json!("yes");
    document.check("POST", "/v1/leases", StatusCode::OK, &broken);
    assert!(document.drift.len() > after_code, "a wrong type passed");
    document.drift.truncate(drift_before);
    assert!(
        document.drift.is_empty(),
        "{} of {} answers drift from the served document:\n{}",
        document.drift.len(),
        document.n_checked,
        document.drift.join("\n")
    );
}

#[tokio::test]
async fn every_operation_documents_every_status_its_codes_take() {
    let harness = Harness::new();
    let document = Document::served(&harness).await;
    let mut missing = Vec::new();
    let mut codes_seen = HashSet::new();
    for (path, item) in document.document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            let has_body = operation["requestBody"].is_object();
            let mut codes: HashSet<ErrorCode> = responses
                .values()
                .flat_map(|response| named_codes(response["description"].as_str().unwrap_or("")))
                .collect();
            // Every route is behind the peer check (403 unauthorized) and can fail inside.
            codes.extend([ErrorCode::Unauthorized, ErrorCode::Internal]);
            // After a kill every session route answers 410 session_killed.
            if path.starts_with("/v1/sessions/") {
                codes.insert(ErrorCode::SessionKilled);
            }
            codes_seen.extend(codes.iter().copied());
            let documented: BTreeSet<&str> = responses.keys().map(String::as_str).collect();
            let takes_credential = path.starts_with("/v1/sessions/")
                || operation["security"]
                    .as_array()
                    .is_some_and(|schemes| schemes.iter().any(|scheme| scheme != &json!({})));
            if takes_credential && !documented.contains("401") {
                missing.push(format!("{method} {path}: 401 (unauthorized credential)"));
            }
            for code in codes {
                for status in error_statuses(code, has_body) {
                    // 401 is checked above, on the operations that take a credential.
                    if *status == StatusCode::UNAUTHORIZED {
                        continue;
                    }
                    if !documented.contains(status.as_str()) {
                        missing.push(format!("{method} {path}: {status} ({code})"));
                    }
                }
            }
        }
    }
    for code in ErrorCode::ALL {
        if !codes_seen.contains(code) {
            missing.push(format!("no operation names {code}"));
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "{} undocumented statuses:\n{}",
        missing.len(),
        missing.join("\n")
    );
}
