//! The task-scoped clipboard over the router with `FakeDesktop`: the policy's modes (the
//! default `none` refuses everything), the limits refused before the desktop is asked, control
//! admission (observe reads, never writes), a failed write reported unknown and never retried,
//! and the signed evidence of every access.

use axum::http::StatusCode;
use desk_broker::PolicyConfig;
use desk_evidence::{RecordBody, SigningKey};
use serde_json::{Value, json};

use crate::support::Harness;

const POLICY: &str = r#"schema_version: deskbroker.workspace-policy.v1
policy_version: clip-1
workspace: {disposable: true, logged_out: true}
apps: {allowed_profiles: [fake]}
writable_directories: [attempt]
network: {mode: none, allowed_domains: []}
clipboard: MODE
limits: {max_task_minutes: 5, max_refused_actions: 3, idle_seconds: 60}
validity: {not_before: "2020-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}
"#;

/// A broker whose signed policy has clipboard `mode` (`None`: the built-in default policy).
fn with_clipboard(mode: Option<&str>) -> Harness {
    let Some(mode) = mode else {
        return Harness::new();
    };
    let key = SigningKey::from_bytes(&[7; 32]);
    let policy = desk_policy::Policy::from_yaml(&POLICY.replace("MODE", mode)).unwrap();
    let signed = desk_policy::sign(&policy, &key)
        .unwrap()
        .canonical_bytes()
        .unwrap();
    Harness::with(move |config| {
        config.policy = Some(PolicyConfig {
            signed,
            public_key: key.verifying_key(),
        })
    })
}

async fn put(harness: &Harness, id: &str, body: Value) -> (StatusCode, Value) {
    harness
        .call("PUT", &format!("/v1/sessions/{id}/clipboard"), Some(body))
        .await
}

async fn get(harness: &Harness, id: &str, query: &str) -> (StatusCode, Value) {
    harness
        .call("GET", &format!("/v1/sessions/{id}/clipboard{query}"), None)
        .await
}

/// The session's `clipboard_access` records as `(direction, outcome, error_code)`.
fn accesses(harness: &Harness, id: &str) -> Vec<(String, String, Option<String>)> {
    let key = desk_evidence::VerifyingKey::read(&desk_broker::public_key_path(harness.dir.path()))
        .unwrap();
    let journal = harness
        .dir
        .path()
        .join("evidence")
        .join(id)
        .join(desk_evidence::bundle::JOURNAL_FILE);
    desk_evidence::read_journal(&journal, &key)
        .unwrap()
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::ClipboardAccess(access) => Some((
                access.direction.clone(),
                access.outcome.clone(),
                access.error_code.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn access(direction: &str, outcome: &str, code: Option<&str>) -> (String, String, Option<String>) {
    (
        direction.to_string(),
        outcome.to_string(),
        code.map(str::to_string),
    )
}

#[tokio::test]
async fn the_default_policy_refuses_every_access_and_asks_nothing_of_the_desktop() {
    let harness = with_clipboard(None);
    let id = harness.ready().await;
    let (status, body) = put(&harness, &id, json!({"text": "secret"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "clipboard_disabled");
    assert!(
        body["message"].as_str().unwrap().contains("(none)"),
        "{body}"
    );
    let (status, body) = get(&harness, &id, "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "clipboard_disabled");
    assert_eq!(harness.fake.n_clipboard_ops(), 0);
    assert_eq!(harness.fake.clipboard(), None);
    assert_eq!(
        accesses(&harness, &id),
        [
            access("write", "refused", Some("clipboard_disabled")),
            access("read", "refused", Some("clipboard_disabled")),
        ]
    );
}

#[tokio::test]
async fn read_mode_reads_and_refuses_writes() {
    let harness = with_clipboard(Some("read"));
    let id = harness.ready().await;
    harness.fake.set_clipboard("copied by the app");
    let (status, body) = get(&harness, &id, "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"text": "copied by the app", "byte_length": 17, "truncated": false})
    );
    let (status, body) = put(&harness, &id, json!({"text": "x"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "clipboard_disabled");
    assert_eq!(
        harness.fake.clipboard().as_deref(),
        Some("copied by the app")
    );
}

#[tokio::test]
async fn read_write_round_trips_and_limits_are_refused_before_the_desktop() {
    let harness = with_clipboard(Some("read_write"));
    let id = harness.ready().await;
    let text = "a\r\nb\rc\n文本🙂";
    let (status, body) = put(&harness, &id, json!({"text": text})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"byte_length": text.len()}));
    let (status, body) = get(&harness, &id, "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], text);
    let n_ops = harness.fake.n_clipboard_ops();
    assert_eq!(n_ops, 2);

    // Refused, each before the desktop is asked: NUL, a cap above 1 MiB or 0, a bad query.
    let (status, body) = put(&harness, &id, json!({"text": "a\u{0}b"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "invalid_params");
    assert!(body["message"].as_str().unwrap().contains("NUL"), "{body}");
    for query in ["?max_output_bytes=1048577", "?max_output_bytes=0"] {
        let (status, body) = get(&harness, &id, query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["code"], "invalid_params", "{query}");
    }
    for query in [
        "?max_bytes=10",
        "?owner=a",
        "?max_output_bytes=1&max_output_bytes=2",
    ] {
        let (status, body) = get(&harness, &id, query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["code"], "invalid_request", "{query}");
    }
    let (status, body) = put(&harness, &id, json!({"text": "x", "extra": 1})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        harness.fake.n_clipboard_ops(),
        n_ops,
        "nothing reached the desktop"
    );
    assert_eq!(harness.fake.clipboard().as_deref(), Some(text));

    // A cap cuts at a character boundary and says so.
    let (status, body) = get(&harness, &id, "?max_output_bytes=12").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"text": "a\r\nb\rc\n文", "byte_length": text.len(), "truncated": true})
    );
    // Empty text clears.
    let (status, _) = put(&harness, &id, json!({"text": ""})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = get(&harness, &id, "").await;
    assert_eq!(
        body,
        json!({"text": "", "byte_length": 0, "truncated": false})
    );
    let records = accesses(&harness, &id);
    assert_eq!(
        records[..3],
        [
            access("write", "requested", None),
            access("write", "done", None),
            access("read", "done", None),
        ]
    );
    assert_eq!(
        records[3],
        access("write", "refused", Some("invalid_params"))
    );
}

#[tokio::test]
async fn a_body_over_the_ceiling_is_refused_whole() {
    let harness = with_clipboard(Some("read_write"));
    let id = harness.ready().await;
    let ceiling = usize::try_from(desk_contract::clipboard::CEILING_BYTES).unwrap();
    let (status, body) = put(&harness, &id, json!({"text": "x".repeat(ceiling + 1)})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "invalid_params");
    assert!(
        body["message"].as_str().unwrap().contains("ceiling"),
        "{body}"
    );
    let over_limit = "\\n".repeat(ceiling + 64 * 1024);
    let (status, text) = harness
        .raw(
            "PUT",
            &format!("/v1/sessions/{id}/clipboard"),
            Some(format!("{{\"text\": \"{over_limit}\"}}")),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text:.200}");
    assert_eq!(harness.fake.n_clipboard_ops(), 0);
}

#[tokio::test]
async fn observe_mode_reads_but_never_writes_and_a_failed_write_is_never_retried() {
    let harness = with_clipboard(Some("read_write"));
    let id = harness.ready().await;
    let (status, claimed) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/control"),
            Some(json!({"owner": "agent", "mode": "observe"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    let generation = claimed["generation"].as_u64().unwrap();
    let token = json!({"owner": "agent", "generation": generation});
    harness.fake.set_clipboard("seen");
    let (status, body) = get(&harness, &id, "").await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a claimed session needs the token: {body}"
    );
    assert_eq!(body["code"], "control_busy");
    let query = format!("?owner=agent&generation={generation}");
    let (status, body) = get(&harness, &id, &query).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "seen");
    let (status, body) = put(&harness, &id, json!({"text": "x", "control": token})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "control_observe_only");

    let (status, acting) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/control"),
            Some(json!({"owner": "agent", "mode": "act"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // A mode change is a new generation: the observe generation's token is stale now.
    let (status, body) = put(&harness, &id, json!({"text": "x", "control": token})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "control_stale_generation");
    let generation = acting["generation"].as_u64().unwrap();
    let token = json!({"owner": "agent", "generation": generation});
    let query = format!("?owner=agent&generation={generation}");
    harness.fake.fail_clipboard_writes();
    let n_ops = harness.fake.n_clipboard_ops();
    let (status, body) = put(&harness, &id, json!({"text": "x", "control": token})).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["code"], "clipboard_outcome_unknown");
    assert_eq!(
        harness.fake.n_clipboard_ops(),
        n_ops + 1,
        "asked once, never retried"
    );
    let records = accesses(&harness, &id);
    assert_eq!(
        records[records.len() - 2..],
        [
            access("write", "requested", None),
            access("write", "unknown", Some("clipboard_outcome_unknown")),
        ]
    );
    // Stop: a stopped generation reads nothing.
    let (status, _) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/stop"),
            Some(json!({"reason": "user_stopped"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(&harness, &id, &query).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "control_stopped");
}
