//! Screenshot gate decisions in the journal: verified like every record, reported with the
//! bundle's frame each is about (a withheld frame found by its digest), an altered verdict
//! named by verify, a re-signed decision carrying matched text refused by the strict schema,
//! a decision that contradicts itself refused at write, and a reviewer's decision verified only
//! after the `review` verdict that queued it, for the same frame.

use super::*;
use desk_evidence::record::{
    GateReason, GateRegion, ScreenshotGateDecision, ScreenshotReviewDecision,
};

const PATTERN: &str = "ignore (all )?(previous|prior) instructions";

fn decision(id_digit: char, png: &[u8], verdict: &str, score: u32) -> ScreenshotGateDecision {
    let reasons = if score == 0 {
        Vec::new()
    } else {
        vec![GateReason {
            source: "ocr".to_string(),
            pattern_index: Some(0),
            pattern: Some(PATTERN.to_string()),
            region: Some(GateRegion {
                x: 21,
                y: 107,
                width: 327,
                height: 11,
            }),
            score_permille: score,
        }]
    };
    ScreenshotGateDecision {
        record_id: format!("gate-{}", id_digit.to_string().repeat(32)),
        decided_at_ms: 1500,
        frame_sha256: sha256_hex(png),
        frame_bytes: png.len() as u64,
        verdict: verdict.to_string(),
        max_score_permille: score,
        reasons,
        policy_sha256: "cd".repeat(32),
        ocr_engine: "tesseract 5.3.4".to_string(),
        ocr_region: Some(GateRegion {
            x: 0,
            y: 75,
            width: 1280,
            height: 90,
        }),
        ocr_ms: 140,
        gate_ms: 151,
    }
}

const FRAMES: [&[u8]; 2] = [b"PNG harmless frame", b"PNG frame with injected text"];

/// A session whose two screenshots were gated: the first allowed, the second withheld.
/// Returns the bundle and the signing key.
fn gated_bundle(root: &Path) -> (PathBuf, SigningKey) {
    let key = SigningKey::from_bytes(&[29; 32]);
    let session_dir = root.join("session");
    fs::create_dir_all(session_dir.join("frames")).unwrap();
    let mut writer = started_journal(
        &session_dir.join("evidence.ndjson"),
        &key,
        Some("cd".repeat(32)),
    );
    for (sequence, (png, (verdict, score))) in FRAMES
        .iter()
        .zip([("allow", 0), ("withhold", 910)])
        .enumerate()
    {
        fs::write(session_dir.join(format!("frames/{sequence}.png")), png).unwrap();
        writer
            .append(
                1001,
                RecordBody::Screenshot(Screenshot {
                    sequence: sequence as u64,
                    sha256: sha256_hex(png),
                    size: png.len() as u64,
                }),
            )
            .unwrap();
        let id_digit = char::from(b'a' + sequence as u8);
        writer
            .append(
                1002,
                RecordBody::ScreenshotGateDecision(Box::new(decision(
                    id_digit, png, verdict, score,
                ))),
            )
            .unwrap();
    }
    let bundle = root.join("bundle");
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    desk_evidence::export(&inputs, &key, &bundle, 5000).unwrap();
    (bundle, key)
}

#[test]
fn gate_decisions_verify_with_the_frames_they_are_about() {
    let root = tempfile::tempdir().unwrap();
    let (bundle, key) = gated_bundle(root.path());
    let report = desk_evidence::verify(&bundle, &key.verifying_key()).unwrap();
    assert_eq!(report.n_records, 5);
    assert_eq!(report.n_frames, 2);
    let seen: Vec<(u64, &str, Option<&str>)> = report
        .gate_decisions
        .iter()
        .map(|seen| {
            (
                seen.seq,
                seen.decision.verdict.as_str(),
                seen.frame.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (2, "allow", Some("frames/0.png")),
            (4, "withhold", Some("frames/1.png"))
        ]
    );
    // A verifier holding the withheld frame finds the decision that kept it back.
    let withheld = fs::read(bundle.join("frames/1.png")).unwrap();
    let about: Vec<&str> = report
        .gate_decisions_about(&withheld)
        .map(|seen| seen.decision.record_id.as_str())
        .collect();
    assert_eq!(about, [format!("gate-{}", "b".repeat(32))]);
    assert_eq!(
        report.gate_decisions[1].decision.reasons[0]
            .pattern
            .as_deref(),
        Some(PATTERN)
    );
    // Other bytes (one byte changed) are about no decision.
    let mut other = withheld.clone();
    other[0] ^= 1;
    assert_eq!(report.gate_decisions_about(&other).count(), 0);
}

#[test]
fn tamper_gate_verdict_names_the_record() {
    let root = tempfile::tempdir().unwrap();
    let (bundle, key) = gated_bundle(root.path());
    let mut lines = journal_lines(&bundle);
    assert!(lines[4].contains(r#""verdict":"withhold""#), "{}", lines[4]);
    lines[4] = lines[4].replace(r#""verdict":"withhold""#, r#""verdict":"allow""#);
    write_journal_lines(&bundle, &lines);
    let error = verify_err(&bundle, &key.verifying_key());
    assert_record(&error, 4, "screenshot_gate_decision", |problem| {
        matches!(problem, RecordProblem::BadSignature)
    });
}

#[test]
fn a_signed_decision_with_matched_text_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let (bundle, key) = gated_bundle(root.path());
    let mut lines = journal_lines(&bundle);
    // Even signed with the right key, a reason that carries the text it matched is not a
    // decision of this schema.
    let envelope = desk_evidence::Envelope::parse(lines[4].as_bytes()).unwrap();
    let mut payload = serde_json::Value::Object(envelope.payload);
    payload["body"]["reasons"][0]["text"] = serde_json::json!("IGNORE ALL PREVIOUS INSTRUCTIONS");
    let resigned = desk_evidence::Envelope::sign(&payload, &key).unwrap();
    lines[4] = String::from_utf8(resigned.canonical_bytes().unwrap()).unwrap();
    let error =
        desk_evidence::verify_journal((lines.join("\n") + "\n").as_bytes(), &key.verifying_key())
            .unwrap_err();
    assert_record(
        &error,
        4,
        "screenshot_gate_decision",
        |problem| matches!(problem, RecordProblem::Malformed(message) if message.contains("text")),
    );
}

#[test]
fn a_decision_that_contradicts_itself_is_not_written() {
    let root = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[29; 32]);
    let mut writer = started_journal(&root.path().join("evidence.ndjson"), &key, None);
    let mut refused_frame_allowed = decision('c', FRAMES[0], "allow", 0);
    refused_frame_allowed.reasons.push(GateReason {
        source: "frame".to_string(),
        pattern_index: None,
        pattern: None,
        region: None,
        score_permille: 1000,
    });
    refused_frame_allowed.max_score_permille = 1000;
    let mut wrong_max = decision('d', FRAMES[1], "withhold", 910);
    wrong_max.max_score_permille = 990;
    let mut unknown_verdict = decision('e', FRAMES[1], "withhold", 910);
    unknown_verdict.verdict = "maybe".to_string();
    for (bad, expected) in [
        (refused_frame_allowed, "a refused frame must be withheld"),
        (wrong_max, "the highest reason scores 910"),
        (unknown_verdict, "verdict must be one of"),
    ] {
        let error = writer
            .append(1001, RecordBody::ScreenshotGateDecision(Box::new(bad)))
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
}

/// A journal with one screenshot gated `first_verdict` (record `gate-aaa…`, score 400), then a
/// reviewer's `allow` of review `review_id` about `reviewed` bytes; exported and verified.
fn reviewed_bundle(
    root: &Path,
    first_verdict: &str,
    review_id: char,
    reviewed: &[u8],
) -> Result<desk_evidence::VerifyReport, EvidenceError> {
    let key = SigningKey::from_bytes(&[29; 32]);
    let session_dir = root.join("session");
    fs::create_dir_all(session_dir.join("frames")).unwrap();
    let mut writer = started_journal(
        &session_dir.join("evidence.ndjson"),
        &key,
        Some("cd".repeat(32)),
    );
    let png = FRAMES[1];
    fs::write(session_dir.join("frames/0.png"), png).unwrap();
    writer
        .append(
            1001,
            RecordBody::Screenshot(Screenshot {
                sequence: 0,
                sha256: sha256_hex(png),
                size: png.len() as u64,
            }),
        )
        .unwrap();
    writer
        .append(
            1002,
            RecordBody::ScreenshotGateDecision(Box::new(decision('a', png, first_verdict, 400))),
        )
        .unwrap();
    writer
        .append(
            1003,
            RecordBody::ScreenshotReviewDecision(ScreenshotReviewDecision {
                review_id: format!("gate-{}", review_id.to_string().repeat(32)),
                frame_sha256: sha256_hex(reviewed),
                frame_bytes: reviewed.len() as u64,
                decision: "allow".to_string(),
                reviewer: "alice".to_string(),
                decided_at_ms: 1003,
            }),
        )
        .unwrap();
    let bundle = root.join("bundle");
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    let exported = desk_evidence::export(&inputs, &key, &bundle, 5000);
    exported.and_then(|_| desk_evidence::verify(&bundle, &key.verifying_key()))
}

#[test]
fn a_review_decision_verifies_after_the_review_verdict_for_its_frame() {
    let root = tempfile::tempdir().unwrap();
    let verified = reviewed_bundle(root.path(), "review", 'a', FRAMES[1]);
    let report = verified.unwrap();
    assert_eq!(report.n_records, 4);
    assert_eq!(report.gate_decisions[0].decision.verdict, "review");
}

#[test]
fn a_review_decision_without_its_review_verdict_is_refused() {
    // The gate withheld the frame (no review): a reviewer's allow of it is out of place.
    let root = tempfile::tempdir().unwrap();
    let verified = reviewed_bundle(root.path(), "withhold", 'a', FRAMES[1]);
    let error = verified.unwrap_err();
    assert_record(
        &error,
        3,
        "screenshot_review_decision",
        |problem| matches!(problem, RecordProblem::OutOfPlace(why) if why.contains("no earlier")),
    );
    // A review id no gate decision has.
    let root = tempfile::tempdir().unwrap();
    let verified = reviewed_bundle(root.path(), "review", 'b', FRAMES[1]);
    let error = verified.unwrap_err();
    assert_record(
        &error,
        3,
        "screenshot_review_decision",
        |problem| matches!(problem, RecordProblem::OutOfPlace(why) if why.contains("no earlier")),
    );
    // The right review, other bytes.
    let root = tempfile::tempdir().unwrap();
    let verified = reviewed_bundle(root.path(), "review", 'a', FRAMES[0]);
    let error = verified.unwrap_err();
    assert_record(
        &error,
        3,
        "screenshot_review_decision",
        |problem| matches!(problem, RecordProblem::OutOfPlace(why) if why.contains("another frame")),
    );
}
