//! The lint table (each bad policy and the rule ids it must produce), strict YAML, signing,
//! verification against a clock, and the default policy. Over 400 lines: the lint table holds
//! one row per bad policy (60 of them), which reads best in one place.

use super::*;

const GOOD: &str = r#"schema_version: deskbroker.workspace-policy.v1
policy_version: "2026.12-a"
workspace:
  disposable: true
  logged_out: true
apps:
  allowed_profiles: [librecad, freecad]
writable_directories:
  - attempt
  - attempt/exports
network:
  mode: none
  allowed_domains: []
clipboard: read
limits:
  max_task_minutes: 30
  max_refused_actions: 20
  idle_seconds: 600
validity:
  not_before: "2026-01-01T00:00:00Z"
  not_after: "2027-01-01T00:00:00Z"
"#;

/// `GOOD` with each `(from, to)` replaced once (the replacement must apply).
fn edit(edits: &[(&str, &str)]) -> String {
    let mut text = GOOD.to_string();
    for (from, to) in edits {
        assert!(
            text.contains(from),
            "edit target {from:?} not in the policy"
        );
        text = text.replacen(from, to, 1);
    }
    text
}

/// `GOOD` with [`GATE_SECTION`], each `(from, to)` replaced once in the section.
fn gate(edits: &[(&str, &str)]) -> String {
    let mut section = GATE_SECTION.to_string();
    for (from, to) in edits {
        assert!(
            section.contains(from),
            "edit target {from:?} not in the gate"
        );
        section = section.replacen(from, to, 1);
    }
    format!("{GOOD}{section}")
}

const GATE_SECTION: &str = r#"screenshot_gate:
  prefilter_patterns:
    - "ignore (all )?(previous|prior) instructions"
    - "click (approve|allow|yes|confirm)"
  allow_max_permille: 150
  block_min_permille: 650
  max_frame_bytes: 12582912
  max_pixels: 8294400
  ocr_timeout_ms: 5000
"#;

/// No `screenshot_gate`: no gate, and the document (so its digest) is as before the key
/// existed; with one, its settings as written.
#[test]
fn the_screenshot_gate_is_optional_and_read_as_written() {
    let plain = Policy::from_yaml(GOOD).unwrap();
    assert_eq!(plain.screenshot_gate(), None);
    assert!(plain.to_value().unwrap().get("screenshot_gate").is_none());
    let gated = Policy::from_yaml(&gate(&[])).unwrap();
    let settings = gated.screenshot_gate().unwrap();
    assert_eq!(settings.patterns.len(), 2);
    assert_eq!(
        (settings.allow_max_permille, settings.block_min_permille),
        (150, 650)
    );
    assert_eq!(settings.max_frame_bytes, 12_582_912);
    assert_eq!(settings.max_pixels, 8_294_400);
    assert_eq!(settings.ocr_timeout_ms, 5000);
    // What the lint passed, the gate accepts.
    assert!(desk_gate::GatePolicy::new(settings, &"a".repeat(64)).is_ok());
    assert_eq!(
        gated.to_value().unwrap()["screenshot_gate"]["block_min_permille"],
        650
    );
}

fn ids(text: &str) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = lint(text).iter().map(|v| v.rule.id()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

#[test]
fn the_good_policy_passes() {
    assert_eq!(lint(GOOD), Vec::new());
    let policy = Policy::from_yaml(GOOD).unwrap();
    assert_eq!(
        policy.limits(),
        Limits {
            max_task_minutes: 30,
            max_refused_actions: 20,
            idle_seconds: 600
        }
    );
    assert_eq!(policy.clipboard_mode(), ClipboardMode::Read);
    assert_eq!(policy.network(), Network::None);
    assert!(policy.allows_profile("freecad"));
    assert!(!policy.allows_profile("generic"));
}

/// Frames are deleted at release unless the policy says `retention: {frames: keep}`; a
/// policy without the key keeps its JSON form (and so its digest).
#[test]
fn frame_retention_defaults_to_delete_at_release() {
    let policy = Policy::from_yaml(GOOD).unwrap();
    assert_eq!(policy.frame_retention(), FrameRetention::DeleteAtRelease);
    assert!(policy.to_value().unwrap().get("retention").is_none());
    for (rule, expected) in [
        ("delete_at_release", FrameRetention::DeleteAtRelease),
        ("keep", FrameRetention::Keep),
    ] {
        let text = format!("{GOOD}retention:\n  frames: {rule}\n");
        assert_eq!(lint(&text), Vec::new());
        let policy = Policy::from_yaml(&text).unwrap();
        assert_eq!(policy.frame_retention(), expected);
        assert_eq!(expected.as_str(), rule);
        assert_eq!(
            policy.to_value().unwrap()["retention"]["frames"],
            serde_json::json!(rule)
        );
        assert_ne!(
            digest(&policy).unwrap(),
            digest(&Policy::from_yaml(GOOD).unwrap()).unwrap()
        );
    }
}

/// At least 20 bad policies; each must produce exactly the listed rule ids.
#[test]
fn lint_table() {
    let table: Vec<(&str, String, &[&str])> = vec![
        (
            "syntax",
            edit(&[("workspace:\n", "workspace: [\n")]),
            &["POL-001"],
        ),
        ("empty", String::new(), &["POL-001"]),
        (
            "duplicate key",
            edit(&[("clipboard: read\n", "clipboard: read\nclipboard: none\n")]),
            &["POL-002"],
        ),
        (
            "nested duplicate key",
            edit(&[(
                "  disposable: true\n",
                "  disposable: true\n  disposable: true\n",
            )]),
            &["POL-002"],
        ),
        (
            "anchor and alias",
            edit(&[(
                "  disposable: true\n  logged_out: true\n",
                "  disposable: &t true\n  logged_out: *t\n",
            )]),
            &["POL-003", "POL-013"],
        ),
        (
            "tag",
            edit(&[("clipboard: read", "clipboard: !!str read")]),
            &["POL-004"],
        ),
        (
            "yes for true",
            edit(&[("disposable: true", "disposable: yes")]),
            &["POL-005", "POL-013"],
        ),
        (
            "on for true",
            edit(&[("logged_out: true", "logged_out: on")]),
            &["POL-005", "POL-013"],
        ),
        (
            "True capitalised",
            edit(&[("disposable: true", "disposable: True")]),
            &["POL-005", "POL-013"],
        ),
        (
            "boolean as number",
            edit(&[("disposable: true", "disposable: 1")]),
            &["POL-013"],
        ),
        (
            "boolean as quoted string",
            edit(&[("logged_out: true", "logged_out: \"true\"")]),
            &["POL-013"],
        ),
        (
            "hex number",
            edit(&[("max_task_minutes: 30", "max_task_minutes: 0x1e")]),
            &["POL-006", "POL-013"],
        ),
        (
            "separated number",
            edit(&[("idle_seconds: 600", "idle_seconds: 6_00")]),
            &["POL-006", "POL-013"],
        ),
        (
            "null",
            edit(&[("clipboard: read", "clipboard: ~")]),
            &["POL-006", "POL-060"],
        ),
        ("two documents", format!("{GOOD}---\n{GOOD}"), &["POL-007"]),
        (
            "merge key",
            edit(&[("  disposable: true\n", "  <<: {disposable: true}\n")]),
            &["POL-008", "POL-011", "POL-012"],
        ),
        (
            "schema version",
            edit(&[("workspace-policy.v1", "workspace-policy.v2")]),
            &["POL-010"],
        ),
        (
            "unknown key",
            edit(&[("clipboard: read\n", "clipboard: read\nscreenshots: all\n")]),
            &["POL-011"],
        ),
        (
            "missing key",
            edit(&[("clipboard: read\n", "")]),
            &["POL-012"],
        ),
        (
            "policy version",
            edit(&[("\"2026.12-a\"", "\"has space\"")]),
            &["POL-014"],
        ),
        (
            "not disposable",
            edit(&[("disposable: true", "disposable: false")]),
            &["POL-020"],
        ),
        (
            "not logged out",
            edit(&[("logged_out: true", "logged_out: false")]),
            &["POL-021"],
        ),
        (
            "no apps",
            edit(&[("[librecad, freecad]", "[]")]),
            &["POL-030"],
        ),
        (
            "bad app name",
            edit(&[("[librecad, freecad]", "[LibreCAD, \"../x\"]")]),
            &["POL-031"],
        ),
        (
            "duplicate app",
            edit(&[("[librecad, freecad]", "[librecad, librecad]")]),
            &["POL-032"],
        ),
        (
            "no writable directory",
            edit(&[(
                "writable_directories:\n  - attempt\n  - attempt/exports\n",
                "writable_directories: []\n",
            )]),
            &["POL-040"],
        ),
        (
            "dot dot",
            edit(&[("attempt/exports", "attempt/../home")]),
            &["POL-041"],
        ),
        (
            "home directory",
            edit(&[("attempt/exports", "/home/user")]),
            &["POL-042"],
        ),
        (
            "outside and unsafe",
            edit(&[("attempt/exports", "~/.ssh")]),
            &["POL-041", "POL-042"],
        ),
        (
            "duplicate writable",
            edit(&[("attempt/exports", "attempt")]),
            &["POL-043"],
        ),
        (
            "network mode",
            edit(&[("mode: none", "mode: open")]),
            &["POL-050"],
        ),
        (
            "domains without allowlist",
            edit(&[("allowed_domains: []", "allowed_domains: [example.com]")]),
            &["POL-051"],
        ),
        (
            "empty allowlist",
            edit(&[("mode: none", "mode: allowlist")]),
            &["POL-052"],
        ),
        (
            "bad domains",
            edit(&[(
                "mode: none\n  allowed_domains: []",
                "mode: allowlist\n  allowed_domains: [\"*.example.com\", \"https://example.com\", \"10.0.0.1\", \"example.com:443\"]",
            )]),
            &["POL-053"],
        ),
        (
            "duplicate domain",
            edit(&[(
                "mode: none\n  allowed_domains: []",
                "mode: allowlist\n  allowed_domains: [docs.example.com, docs.example.com]",
            )]),
            &["POL-054"],
        ),
        (
            "clipboard mode",
            edit(&[("clipboard: read", "clipboard: global")]),
            &["POL-060"],
        ),
        (
            "clipboard off",
            edit(&[("clipboard: read", "clipboard: off")]),
            &["POL-005", "POL-060"],
        ),
        (
            "task too long",
            edit(&[("max_task_minutes: 30", "max_task_minutes: 1441")]),
            &["POL-070"],
        ),
        (
            "task zero",
            edit(&[("max_task_minutes: 30", "max_task_minutes: 0")]),
            &["POL-070"],
        ),
        (
            "refused negative",
            edit(&[("max_refused_actions: 20", "max_refused_actions: -1")]),
            &["POL-071"],
        ),
        (
            "idle zero",
            edit(&[("idle_seconds: 600", "idle_seconds: 0")]),
            &["POL-072"],
        ),
        (
            "idle over task",
            edit(&[("idle_seconds: 600", "idle_seconds: 1801")]),
            &["POL-073"],
        ),
        (
            "timestamp with offset",
            edit(&[("2026-01-01T00:00:00Z", "2026-01-01T00:00:00+01:00")]),
            &["POL-080"],
        ),
        (
            "impossible date",
            edit(&[("2027-01-01T00:00:00Z", "2027-02-30T00:00:00Z")]),
            &["POL-080"],
        ),
        (
            "empty window",
            edit(&[("2027-01-01T00:00:00Z", "2026-01-01T00:00:00Z")]),
            &["POL-081"],
        ),
        ("root is a list", "- a\n- b\n".to_string(), &["POL-013"]),
        (
            "frames retention unknown",
            format!("{GOOD}retention:\n  frames: forever\n"),
            &["POL-090"],
        ),
        (
            "retention without frames",
            format!("{GOOD}retention:\n  screenshots: keep\n"),
            &["POL-011", "POL-012"],
        ),
        (
            "frames retention not a string",
            format!("{GOOD}retention:\n  frames: 3\n"),
            &["POL-013"],
        ),
        (
            "gate without patterns",
            gate(&[(
                "  prefilter_patterns:\n    - \"ignore (all )?(previous|prior) instructions\"\n    - \"click (approve|allow|yes|confirm)\"\n",
                "  prefilter_patterns: []\n",
            )]),
            &["POL-100"],
        ),
        (
            "gate pattern empty",
            gate(&[("\"click (approve|allow|yes|confirm)\"", "\"\"")]),
            &["POL-101"],
        ),
        (
            "gate pattern invalid",
            gate(&[("\"click (approve|allow|yes|confirm)\"", "\"(\"")]),
            &["POL-101"],
        ),
        (
            "gate pattern matching everything",
            gate(&[("\"click (approve|allow|yes|confirm)\"", "\"x*\"")]),
            &["POL-101"],
        ),
        (
            "gate pattern not a string",
            gate(&[("\"click (approve|allow|yes|confirm)\"", "5")]),
            &["POL-013"],
        ),
        (
            "gate pattern twice",
            gate(&[(
                "\"click (approve|allow|yes|confirm)\"",
                "\"ignore (all )?(previous|prior) instructions\"",
            )]),
            &["POL-102"],
        ),
        (
            "gate thresholds equal",
            gate(&[("allow_max_permille: 150", "allow_max_permille: 650")]),
            &["POL-103"],
        ),
        (
            "gate thresholds inverted",
            gate(&[("allow_max_permille: 150", "allow_max_permille: 700")]),
            &["POL-103"],
        ),
        (
            "gate block above one",
            gate(&[("block_min_permille: 650", "block_min_permille: 1001")]),
            &["POL-103"],
        ),
        (
            "gate threshold negative",
            gate(&[("allow_max_permille: 150", "allow_max_permille: -1")]),
            &["POL-103"],
        ),
        (
            "gate frame bytes zero",
            gate(&[("max_frame_bytes: 12582912", "max_frame_bytes: 0")]),
            &["POL-104"],
        ),
        (
            "gate timeout too long",
            gate(&[("ocr_timeout_ms: 5000", "ocr_timeout_ms: 60001")]),
            &["POL-104"],
        ),
        (
            "gate key unknown, one missing",
            gate(&[("max_pixels: 8294400", "max_pixel: 8294400")]),
            &["POL-011", "POL-012"],
        ),
        (
            "gate threshold a fraction",
            gate(&[("allow_max_permille: 150", "allow_max_permille: 0.15")]),
            &["POL-006", "POL-013"],
        ),
    ];
    assert!(table.len() >= 20);
    let mut failures = Vec::new();
    for (name, text, expected) in &table {
        let found = ids(text);
        if found != *expected {
            failures.push(format!(
                "{name}: expected {expected:?}, found {found:?}: {:?}",
                lint(text)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lint_reports_every_violation_not_the_first() {
    let text = edit(&[
        ("disposable: true", "disposable: false"),
        ("logged_out: true", "logged_out: no"),
        ("attempt/exports", "/etc"),
        ("clipboard: read", "clipboard: everything"),
        ("max_task_minutes: 30", "max_task_minutes: 99999"),
    ]);
    assert_eq!(
        ids(&text),
        [
            "POL-005", "POL-013", "POL-020", "POL-042", "POL-060", "POL-070"
        ]
    );
    let violations = lint(&text);
    let disposable = violations
        .iter()
        .find(|v| v.rule == Rule::DisposableRequired)
        .unwrap();
    assert_eq!(disposable.path, "workspace.disposable");
    assert!(
        disposable
            .to_string()
            .starts_with("POL-020 disposable_required at workspace.disposable")
    );
}

#[test]
fn rule_ids_are_unique_and_named() {
    let mut ids: Vec<&str> = Rule::ALL.iter().map(|rule| rule.id()).collect();
    let n_rules = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n_rules);
    assert!(
        Rule::ALL
            .iter()
            .all(|rule| rule.id().starts_with("POL-") && !rule.name().is_empty())
    );
}

fn keys() -> (SigningKey, VerifyingKey) {
    let key = SigningKey::from_bytes(&[7; 32]);
    let public = key.verifying_key();
    (key, public)
}

fn now(text: &str) -> i64 {
    parse_utc(text).unwrap()
}

#[test]
fn sign_then_verify_round_trips_with_a_stable_digest() {
    let (key, public) = keys();
    let policy = Policy::from_yaml(GOOD).unwrap();
    let envelope = sign(&policy, &key).unwrap();
    let bytes = envelope.canonical_bytes().unwrap();
    let verified = verify(&bytes, &public, now("2026-06-01T00:00:00Z")).unwrap();
    assert_eq!(verified.policy(), &policy);
    assert_eq!(verified.sha256(), digest(&policy).unwrap());
    assert_eq!(verified.sha256().len(), 64);
    // The digest is of the content: the same policy written differently has the same digest.
    let reordered = GOOD
        .replace("clipboard: read\n", "")
        .replace("limits:", "clipboard: read\nlimits:");
    assert_eq!(
        digest(&Policy::from_yaml(&reordered).unwrap()).unwrap(),
        verified.sha256()
    );
    // Both window bounds are inclusive.
    assert!(verify(&bytes, &public, now("2026-01-01T00:00:00Z")).is_ok());
    assert!(verify(&bytes, &public, now("2027-01-01T00:00:00Z")).is_ok());
}

#[test]
fn altered_wrong_key_unsigned_expired_and_early_policies_are_refused() {
    let (key, public) = keys();
    let policy = Policy::from_yaml(GOOD).unwrap();
    let bytes = sign(&policy, &key).unwrap().canonical_bytes().unwrap();
    let inside = now("2026-06-01T00:00:00Z");
    let text = String::from_utf8(bytes.clone()).unwrap();

    let altered = text.replace("\"max_task_minutes\":30", "\"max_task_minutes\":600");
    assert_ne!(altered, text);
    let error = verify(altered.as_bytes(), &public, inside).unwrap_err();
    assert!(matches!(error, PolicyError::Signature(_)), "{error}");

    let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
    assert!(matches!(
        verify(&bytes, &other, inside),
        Err(PolicyError::Signature(_))
    ));

    for unsigned in [
        GOOD.as_bytes().to_vec(),
        policy.to_value().unwrap().to_string().into_bytes(),
    ] {
        assert!(matches!(
            verify(&unsigned, &public, inside),
            Err(PolicyError::Unsigned(_))
        ));
    }
    let no_signature = text.replace("\"signature_b64\"", "\"signature\"");
    assert!(matches!(
        verify(no_signature.as_bytes(), &public, inside),
        Err(PolicyError::Unsigned(_))
    ));

    assert!(matches!(
        verify(&bytes, &public, now("2027-01-01T00:00:01Z")),
        Err(PolicyError::Expired { .. })
    ));
    assert!(matches!(
        verify(&bytes, &public, now("2025-12-31T23:59:59Z")),
        Err(PolicyError::NotYetValid { .. })
    ));
}

#[test]
fn a_validly_signed_payload_that_fails_lint_is_refused() {
    let (key, public) = keys();
    let mut value = Policy::from_yaml(GOOD).unwrap().to_value().unwrap();
    value["workspace"]["disposable"] = serde_json::Value::Bool(false);
    value["limits"]["idle_seconds"] = serde_json::json!(1);
    value["extra"] = serde_json::json!("x");
    let bytes = Envelope::sign(&value, &key)
        .unwrap()
        .canonical_bytes()
        .unwrap();
    let Err(PolicyError::Lint(violations)) = verify(&bytes, &public, now("2026-06-01T00:00:00Z"))
    else {
        panic!("expected a lint refusal");
    };
    let found: Vec<&str> = violations.iter().map(|v| v.rule.id()).collect();
    assert_eq!(found, ["POL-011", "POL-020"]);
    // A duplicate key in the signed JSON is refused before the signature is looked at.
    let text = String::from_utf8(bytes).unwrap();
    let duplicated = text.replacen(
        "\"clipboard\":\"read\"",
        "\"clipboard\":\"read\",\"clipboard\":\"read\"",
        1,
    );
    assert!(matches!(
        verify(duplicated.as_bytes(), &public, 0),
        Err(PolicyError::Unsigned(_))
    ));
}

#[test]
fn the_evidence_key_is_refused_as_the_policy_key() {
    let (_, public) = keys();
    let other = SigningKey::from_bytes(&[9; 32]).verifying_key();
    assert!(check_distinct(&public, &other).is_ok());
    assert!(matches!(
        check_distinct(&public, &public),
        Err(PolicyError::EvidenceKey { .. })
    ));
}

#[test]
fn the_default_policy_is_tight_and_lints_clean() {
    let policy = default_policy(&["librecad", "freecad", "generic"]).unwrap();
    assert_eq!(policy.network(), Network::None);
    assert_eq!(policy.clipboard_mode(), ClipboardMode::None);
    assert_eq!(policy.writable_directories(), ["attempt"]);
    assert!(policy.allows_profile("generic"));
    assert!(policy.limits().max_task_minutes <= 60);
    // Profile names cannot change the document's shape.
    let Err(PolicyError::Lint(violations)) = default_policy(&["x\"]\nextra: [\""]) else {
        panic!("expected a lint refusal");
    };
    assert!(
        violations.iter().all(|v| v.rule == Rule::AppNameInvalid),
        "{violations:?}"
    );
}

#[test]
fn parse_utc_is_exact() {
    assert_eq!(parse_utc("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(parse_utc("2000-03-01T00:00:00Z"), Some(951_868_800));
    assert_eq!(parse_utc("2024-02-29T23:59:59Z"), Some(1_709_251_199));
    for bad in [
        "2023-02-29T00:00:00Z",
        "2026-01-01 00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-1-01T00:00:00Z",
        "2026-01-01T00:00:00.5Z",
        "",
    ] {
        assert_eq!(parse_utc(bad), None, "{bad}");
    }
}

/// `screenshot_gate.classifier`: optional (absent, the gate has none); when present, exactly
/// its keys, a loopback `http://` endpoint with a port, a pinned model digest and a bounded
/// time, or POL-105.
#[test]
fn the_gate_classifier_is_optional_and_linted() {
    let digest = "ab".repeat(32);
    let with = |body: &str| {
        gate(&[(
            "ocr_timeout_ms: 5000\n",
            &format!("ocr_timeout_ms: 5000\n  classifier: {body}\n"),
        )])
    };
    assert_eq!(
        Policy::from_yaml(&gate(&[]))
            .unwrap()
            .screenshot_gate_classifier(),
        None
    );
    let good = with(&format!(
        "{{endpoint: \"http://127.0.0.1:8790/v1/classify\", timeout_ms: 2000, model_sha256: \"{digest}\"}}"
    ));
    assert_eq!(ids(&good), Vec::<&str>::new());
    let classifier = Policy::from_yaml(&good)
        .unwrap()
        .screenshot_gate_classifier()
        .unwrap();
    assert_eq!(classifier.timeout_ms, 2000);
    assert_eq!(classifier.model_sha256, digest);
    for bad in [
        format!(
            "{{endpoint: \"https://127.0.0.1:8790/\", timeout_ms: 2000, model_sha256: \"{digest}\"}}"
        ),
        format!(
            "{{endpoint: \"http://10.1.2.3:8790/\", timeout_ms: 2000, model_sha256: \"{digest}\"}}"
        ),
        format!(
            "{{endpoint: \"http://127.0.0.1:8790/\", timeout_ms: 0, model_sha256: \"{digest}\"}}"
        ),
        "{endpoint: \"http://127.0.0.1:8790/\", timeout_ms: 2000, model_sha256: \"abc\"}"
            .to_string(),
        format!("{{endpoint: \"http://127.0.0.1:8790/\", model_sha256: \"{digest}\"}}"),
        format!(
            "{{endpoint: \"http://127.0.0.1:8790/\", timeout_ms: 2000, model_sha256: \"{digest}\", send_frame: true}}"
        ),
        "[]".to_string(),
    ] {
        assert_eq!(ids(&with(&bad)), ["POL-105"], "{bad}");
    }
}
