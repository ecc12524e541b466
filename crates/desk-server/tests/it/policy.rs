//! The workspace policy at lease: the built-in default (its key, its digest in the lease
//! answer, the status and the evidence), a configured signed policy, and every refusal
//! (unsigned, altered, wrong key, expired, not yet valid, failing lint, a network allowlist,
//! a profile it does not allow) leaving nothing leased.

use axum::http::StatusCode;
use desk_broker::{Broker, BrokerConfig, PolicyConfig};
use desk_desktop::fake::FakeHandle;
use desk_evidence::{Envelope, SigningKey};
use serde_json::{Value, json};

use crate::support::{Harness, config};

const POLICY: &str = r#"schema_version: deskbroker.workspace-policy.v1
policy_version: test-1
workspace: {disposable: true, logged_out: true}
apps: {allowed_profiles: [fake]}
writable_directories: [attempt]
network: {mode: none, allowed_domains: []}
clipboard: none
limits: {max_task_minutes: 5, max_refused_actions: 3, idle_seconds: 60}
validity: {not_before: "2020-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}
"#;

pub(crate) fn policy_key() -> SigningKey {
    SigningKey::from_bytes(&[42; 32])
}

/// `POLICY` with `edits` applied, signed with `key`.
pub(crate) fn signed(edits: &[(&str, &str)], key: &SigningKey) -> Vec<u8> {
    let mut text = POLICY.to_string();
    for (from, to) in edits {
        assert!(text.contains(from), "{from:?}");
        text = text.replace(from, to);
    }
    let policy = desk_policy::Policy::from_yaml(&text).unwrap();
    desk_policy::sign(&policy, key)
        .unwrap()
        .canonical_bytes()
        .unwrap()
}

pub(crate) fn with_policy(signed: Vec<u8>) -> Harness {
    Harness::with(move |config| {
        config.policy = Some(PolicyConfig {
            signed,
            public_key: policy_key().verifying_key(),
        })
    })
}

async fn lease_answer(harness: &Harness, body: Value) -> (StatusCode, Value) {
    harness.call("POST", "/v1/leases", Some(body)).await
}

fn n_session_dirs(harness: &Harness) -> usize {
    std::fs::read_dir(harness.dir.path().join("sessions"))
        .unwrap()
        .count()
}

/// A refused lease: 403 with `code`, a message containing `says`, and nothing leased.
async fn assert_refused(harness: &Harness, code: &str, says: &str) {
    let (status, body) = lease_answer(harness, json!({"task_id": "t", "attempt_id": "a"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], code, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(says), "{message:?} lacks {says:?}");
    assert_eq!(n_session_dirs(harness), 0, "nothing is leased");
}

#[tokio::test]
async fn the_default_policy_is_signed_at_start_and_named_in_lease_status_and_evidence() {
    use std::os::unix::fs::PermissionsExt as _;
    let harness = Harness::new();
    let policy_dir = desk_broker::policy_dir(harness.dir.path());
    let mode = |name: &str| {
        std::fs::metadata(policy_dir.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(""), 0o700);
    assert_eq!(mode(desk_broker::POLICY_KEY_FILE), 0o600);
    assert_eq!(mode(desk_broker::DEFAULT_POLICY_FILE), 0o600);
    let policy_pub =
        desk_evidence::VerifyingKey::read(&policy_dir.join(desk_broker::POLICY_PUBLIC_KEY_FILE))
            .unwrap();
    let evidence_pub =
        desk_evidence::VerifyingKey::read(&desk_broker::public_key_path(harness.dir.path()))
            .unwrap();
    assert_ne!(policy_pub, evidence_pub);
    let signed = std::fs::read(policy_dir.join(desk_broker::DEFAULT_POLICY_FILE)).unwrap();
    let verified = desk_policy::verify(&signed, &policy_pub, 1_900_000_000).unwrap();
    let policy = verified.policy();
    assert_eq!(policy.network(), desk_policy::Network::None);
    assert_eq!(policy.clipboard_mode(), desk_policy::ClipboardMode::None);
    assert_eq!(policy.allowed_profiles(), ["fake", "other"]);

    let (status, lease) = lease_answer(&harness, json!({"task_id": "t", "attempt_id": "a"})).await;
    assert_eq!(status, StatusCode::OK, "{lease}");
    assert_eq!(lease["policy_sha256"], verified.sha256());
    let id = lease["session_id"].as_str().unwrap();
    assert_eq!(harness.status(id).await["policy_sha256"], verified.sha256());
    let (_, replay) = lease_answer(&harness, json!({"task_id": "t", "attempt_id": "a"})).await;
    assert_eq!(replay["policy_sha256"], verified.sha256());

    let journal = harness
        .dir
        .path()
        .join("evidence")
        .join(id)
        .join(desk_evidence::bundle::JOURNAL_FILE);
    let records = desk_evidence::read_journal(&journal, &evidence_pub).unwrap();
    let desk_evidence::RecordBody::SessionStarted(started) = &records[0].record().body else {
        panic!("the journal starts with session_started");
    };
    assert_eq!(started.policy_sha256.as_deref(), Some(verified.sha256()));
}

#[tokio::test]
async fn a_signed_policy_is_enforced_with_its_digest() {
    let bytes = signed(&[], &policy_key());
    let expected = desk_policy::verify(&bytes, &policy_key().verifying_key(), 1_900_000_000)
        .unwrap()
        .sha256()
        .to_string();
    let harness = with_policy(bytes);
    let (status, lease) = lease_answer(&harness, json!({"task_id": "t", "attempt_id": "a"})).await;
    assert_eq!(status, StatusCode::OK, "{lease}");
    assert_eq!(lease["policy_sha256"], expected);
    let (status, body) = lease_answer(
        &harness,
        json!({"task_id": "t", "attempt_id": "b", "profile": "other"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "profile_not_allowed");
}

#[tokio::test]
async fn unsigned_altered_foreign_expired_early_and_unenforceable_policies_lease_nothing() {
    let key = policy_key();
    let good = String::from_utf8(signed(&[], &key)).unwrap();

    let yaml = with_policy(POLICY.as_bytes().to_vec());
    assert_refused(&yaml, "policy_invalid", "not signed").await;

    let altered = good.replace("\"max_refused_actions\":3", "\"max_refused_actions\":300");
    assert_ne!(altered, good);
    assert_refused(
        &with_policy(altered.into_bytes()),
        "policy_invalid",
        "signature",
    )
    .await;

    let foreign = signed(&[], &SigningKey::from_bytes(&[43; 32]));
    assert_refused(&with_policy(foreign), "policy_invalid", "signature").await;

    let expired = signed(&[("2099-01-01", "2021-01-01")], &key);
    assert_refused(&with_policy(expired), "policy_invalid", "expired").await;

    let early = signed(&[("2020-01-01", "2098-01-01")], &key);
    assert_refused(&with_policy(early), "policy_invalid", "not valid before").await;

    let allowlist = signed(
        &[(
            "{mode: none, allowed_domains: []}",
            "{mode: allowlist, allowed_domains: [docs.example.com]}",
        )],
        &key,
    );
    assert_refused(
        &with_policy(allowlist),
        "policy_invalid",
        "network allowlist not enforceable by this sandbox",
    )
    .await;

    // Signed with the right key but failing lint (written by hand, not by `policy sign`).
    let mut value = desk_policy::Policy::from_yaml(POLICY)
        .unwrap()
        .to_value()
        .unwrap();
    value["workspace"]["logged_out"] = Value::Bool(false);
    let bad = Envelope::sign(&value, &key)
        .unwrap()
        .canonical_bytes()
        .unwrap();
    assert_refused(&with_policy(bad), "policy_invalid", "POL-021").await;
}

#[test]
fn the_evidence_key_cannot_be_the_policy_key() {
    let dir = tempfile::tempdir().unwrap();
    let evidence_key = dir.path().join("shared.key");
    policy_key().write(&evidence_key).unwrap();
    let mut settings: BrokerConfig = config(dir.path().join("state"));
    settings.evidence.signing_key = Some(evidence_key);
    settings.policy = Some(PolicyConfig {
        signed: signed(&[], &policy_key()),
        public_key: policy_key().verifying_key(),
    });
    let fake = FakeHandle::default();
    let opened = Broker::open(settings, move |request: &desk_broker::BackendRequest| {
        let desktop: Box<dyn desk_desktop::DesktopBackend> = Box::new(
            desk_desktop::FakeDesktop::with_handle(request.display, fake.clone()),
        );
        Ok::<_, desk_desktop::BackendError>(desktop)
    });
    let error = opened.expect_err("the broker refuses to open");
    assert!(
        error.to_string().contains("evidence signing key"),
        "{error}"
    );
}
