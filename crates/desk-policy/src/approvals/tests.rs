//! The `approvals` section: optional (absent: no high-risk target, the document unchanged),
//! read as written, matched case-insensitively, and each of its lint rules (POL-110..114).

use crate::{Policy, Rule, SigningKey, default_policy, lint};

const BASE: &str = r#"schema_version: deskbroker.workspace-policy.v1
policy_version: "2026.12-a"
workspace: {disposable: true, logged_out: true}
apps: {allowed_profiles: [axfixture]}
writable_directories: [attempt]
network: {mode: none, allowed_domains: []}
clipboard: none
limits: {max_task_minutes: 30, max_refused_actions: 20, idle_seconds: 600}
validity: {not_before: "2026-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}
"#;

fn key() -> String {
    SigningKey::from_bytes(&[7; 32]).verifying_key().to_base64()
}

fn section() -> String {
    format!(
        "approvals:\n  approver_id: release-approver\n  approver_public_key: \"{}\"\n  \
         receipt_ttl_seconds: 120\n  high_risk_targets:\n    \
         - {{role: push button, name_pattern: \"^press me$\"}}\n    \
         - {{role: Menu Item, name_pattern: \"delete|erase\"}}\n",
        key()
    )
}

/// [`BASE`] with [`section`], each `(from, to)` replaced once in the section.
fn with(edits: &[(&str, &str)]) -> String {
    let mut text = section();
    for (from, to) in edits {
        assert!(
            text.contains(from),
            "edit target {from:?} not in the section"
        );
        text = text.replacen(from, to, 1);
    }
    format!("{BASE}{text}")
}

fn ids(text: &str) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = lint(text).iter().map(|v| v.rule.id()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

#[test]
fn without_the_section_nothing_is_high_risk_and_the_document_is_unchanged() {
    let plain = Policy::from_yaml(BASE).unwrap();
    assert!(plain.approvals().unwrap().is_none());
    assert!(plain.to_value().unwrap().get("approvals").is_none());
    assert!(
        default_policy(&["librecad"])
            .unwrap()
            .approvals()
            .unwrap()
            .is_none()
    );
}

#[test]
fn the_section_is_read_as_written_and_matches_case_insensitively() {
    let policy = Policy::from_yaml(&with(&[])).unwrap();
    let approvals = policy.approvals().unwrap().unwrap();
    assert_eq!(approvals.approver_id, "release-approver");
    assert_eq!(approvals.approver_key.to_base64(), key());
    assert_eq!(approvals.receipt_ttl.as_secs(), 120);
    assert_eq!(approvals.targets.len(), 2);
    assert!(approvals.high_risk("push button", "Press me").is_some());
    assert!(approvals.high_risk("Push Button", "PRESS ME").is_some());
    assert!(
        approvals
            .high_risk("push button", "Press me twice")
            .is_none()
    );
    assert!(approvals.high_risk("label", "Press me").is_none());
    let menu = approvals.high_risk("menu item", "Delete layer").unwrap();
    assert_eq!(menu.role, "menu item");
    assert!(approvals.high_risk("menu item", "Open").is_none());
    assert_eq!(
        policy.to_value().unwrap()["approvals"]["receipt_ttl_seconds"],
        120
    );
}

#[test]
fn every_rule_of_the_section() {
    let cases: Vec<(String, &[&str])> = vec![
        (
            with(&[("release-approver", "Release Approver")]),
            &["POL-110"],
        ),
        (with(&[(&key(), "not-a-key")]), &["POL-110"]),
        (
            with(&[("receipt_ttl_seconds: 120", "receipt_ttl_seconds: 0")]),
            &["POL-111"],
        ),
        (
            with(&[("receipt_ttl_seconds: 120", "receipt_ttl_seconds: 3601")]),
            &["POL-111"],
        ),
        (
            with(&[("receipt_ttl_seconds: 120", "receipt_ttl_seconds: \"120\"")]),
            &["POL-013"],
        ),
        (
            format!(
                "{BASE}approvals:\n  approver_id: a\n  approver_public_key: \"{}\"\n  \
                 receipt_ttl_seconds: 1\n  high_risk_targets: []\n",
                key()
            ),
            &["POL-112"],
        ),
        (
            with(&[("role: push button", "role: \"push-button!\"")]),
            &["POL-113"],
        ),
        (with(&[("\"^press me$\"", "\"(\"")]), &["POL-113"]),
        (with(&[("\"^press me$\"", "\".*\"")]), &["POL-113"]),
        (
            with(&[(
                "role: Menu Item, name_pattern: \"delete|erase\"",
                "role: PUSH BUTTON, name_pattern: \"^press me$\"",
            )]),
            &["POL-114"],
        ),
        (with(&[("  receipt_ttl_seconds: 120\n", "")]), &["POL-012"]),
        (
            with(&[("approver_id", "approver")]),
            &["POL-011", "POL-012"],
        ),
        (
            with(&[("{role: push button, ", "{role: push button, state: armed, ")]),
            &["POL-011"],
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(ids(&text), expected.to_vec(), "{text}");
    }
    assert!(Rule::ALL.contains(&Rule::ApprovalTargetDuplicate));
}
