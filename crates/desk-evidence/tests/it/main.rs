//! Integration tests of desk-evidence: a session journal written through `EvidenceWriter`,
//! exported as a bundle, verified, and then tampered with in every way the done-criterion of
//! issue 3 names, each on a fresh copy, asserting that verify fails and names the place.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use desk_evidence::record::{
    ActionAccepted, ActionReceipt, Artifact, Checkpoint, LogDigest, Screenshot, SessionReleased,
    SessionStarted,
};
use desk_evidence::{
    EvidenceError, EvidenceWriter, ExportInputs, FileProblem, ManifestProblem, RecordBody,
    RecordProblem, SigningKey, VerifyingKey, sha256_hex,
};

const SESSION: &str = "session-7";
const ARTIFACT: &str = "attempt.dxf";

struct Fixture {
    _directory: tempfile::TempDir,
    root: PathBuf,
    key: SigningKey,
    bundle: PathBuf,
}

fn append_log(path: &Path, line: &str) -> LogDigest {
    let mut bytes = fs::read(path).unwrap_or_default();
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    fs::write(path, &bytes).unwrap();
    LogDigest::of(&bytes)
}

/// A journal at `path` signed by `key` whose first record (at 1000 ms) starts the session
/// under `policy_sha256`: the opening every test session shares.
fn started_journal(path: &Path, key: &SigningKey, policy_sha256: Option<String>) -> EvidenceWriter {
    let mut writer = EvidenceWriter::create(path, key.clone(), SESSION).unwrap();
    writer
        .append(
            1000,
            RecordBody::SessionStarted(SessionStarted {
                lease_id: "lease-3".to_string(),
                backend: "fake".to_string(),
                screen_width: 1280,
                screen_height: 800,
                signer_fingerprint: key.verifying_key().fingerprint(),
                policy_sha256,
            }),
        )
        .unwrap();
    writer
}

/// A two-action session with frames, a checkpoint, an artifact and a release.
fn session(session_dir: &Path, key: &SigningKey) {
    session_with(session_dir, key, None);
}

/// [`session`], its release recording `frame_retention`.
fn session_with(session_dir: &Path, key: &SigningKey, frame_retention: Option<&str>) {
    fs::create_dir_all(session_dir.join("frames")).unwrap();
    fs::create_dir_all(session_dir.join("checkpoint")).unwrap();
    let events = session_dir.join("events.json");
    let frame_events = session_dir.join("frame_events.json");
    let mut writer = started_journal(
        &session_dir.join("evidence.ndjson"),
        key,
        Some("ab".repeat(32)),
    );
    let mut at_ms = 1001;
    let mut append = |body: RecordBody| {
        let record = writer.append(at_ms, body).unwrap();
        at_ms += 1;
        record
    };
    for index in 0..2_u64 {
        append(RecordBody::ActionAccepted(ActionAccepted {
            index,
            request_id: format!("req-{index}"),
            action_type: "click".to_string(),
            intent: (index == 0).then(|| "open the file menu".to_string()),
            request_sha256: sha256_hex(format!("request {index}").as_bytes()),
        }));
        let png = format!("PNG frame {index}").into_bytes();
        fs::write(session_dir.join(format!("frames/{index}.png")), &png).unwrap();
        append(RecordBody::Screenshot(Screenshot {
            sequence: index,
            sha256: sha256_hex(&png),
            size: png.len() as u64,
        }));
        let events_digest = append_log(
            &events,
            &format!(r#"{{"type":"click","actionIndex":{index}}}"#),
        );
        let frame_digest = append_log(
            &frame_events,
            &format!(r#"{{"frame":{index},"events":[]}}"#),
        );
        append(RecordBody::ActionReceipt(ActionReceipt {
            index,
            settle_outcome: "settled".to_string(),
            error_code: None,
            screenshot_sha256: Some(sha256_hex(&png)),
            events: events_digest,
            frame_events: frame_digest,
        }));
    }
    let artifact = b"0\nSECTION\n2\nENTITIES\n0\nENDSEC\n0\nEOF\n";
    fs::write(session_dir.join("checkpoint").join(ARTIFACT), artifact).unwrap();
    append(RecordBody::Checkpoint(Checkpoint {
        file_name: ARTIFACT.to_string(),
        sha256: sha256_hex(artifact),
        size: artifact.len() as u64,
        method: "controller_save".to_string(),
    }));
    append(RecordBody::Artifact(Artifact {
        name: ARTIFACT.to_string(),
        sha256: sha256_hex(artifact),
        size: artifact.len() as u64,
    }));
    let events_digest = LogDigest::of(&fs::read(&events).unwrap());
    let frame_digest = LogDigest::of(&fs::read(&frame_events).unwrap());
    append(RecordBody::SessionReleased(SessionReleased {
        reason: "released".to_string(),
        n_actions: 2,
        events: events_digest,
        frame_events: frame_digest,
        frame_retention: frame_retention.map(str::to_string),
    }));
}

fn fixture() -> Fixture {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().to_path_buf();
    let key = SigningKey::from_bytes(&[42; 32]);
    let session_dir = root.join("session");
    session(&session_dir, &key);
    let bundle = root.join("bundle");
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    desk_evidence::export(&inputs, &key, &bundle, 5000).unwrap();
    Fixture {
        _directory: directory,
        root,
        key,
        bundle,
    }
}

/// A fresh copy of the fixture's bundle.
fn copy_bundle(fixture: &Fixture, name: &str) -> PathBuf {
    let target = fixture.root.join(name);
    copy_dir(&fixture.bundle, &target);
    target
}

fn copy_dir(source: &Path, target: &Path) {
    fs::create_dir_all(target).unwrap();
    for entry in fs::read_dir(source).unwrap() {
        let entry = entry.unwrap();
        let destination = target.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &destination);
        } else {
            fs::copy(entry.path(), destination).unwrap();
        }
    }
}

fn journal_lines(bundle: &Path) -> Vec<String> {
    fs::read_to_string(bundle.join("evidence.ndjson"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_journal_lines(bundle: &Path, lines: &[String]) {
    fs::write(bundle.join("evidence.ndjson"), lines.join("\n") + "\n").unwrap();
}

fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset] ^= 0x01;
    fs::write(path, bytes).unwrap();
}

fn verify_err(bundle: &Path, key: &VerifyingKey) -> EvidenceError {
    match desk_evidence::verify(bundle, key) {
        Ok(report) => panic!("tampered bundle verified: {report:?}"),
        Err(error) => error,
    }
}

fn assert_record(error: &EvidenceError, seq: u64, kind: &str, check: fn(&RecordProblem) -> bool) {
    match error {
        EvidenceError::Record {
            seq: Some(found_seq),
            kind: Some(found_kind),
            problem,
            ..
        } if *found_seq == seq && found_kind == kind && check(problem) => {}
        other => panic!("expected record seq {seq} ({kind}) to be named, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&format!("seq {seq}")) && message.contains(kind),
        "{message}"
    );
}

fn assert_file(error: &EvidenceError, name: &str, check: fn(&FileProblem) -> bool) {
    match error {
        EvidenceError::File {
            name: found,
            problem,
        } if found == name && check(problem) => {}
        other => panic!("expected file {name} to be named, got {other:?}"),
    }
    assert!(error.to_string().contains(name));
}

#[test]
fn exported_bundle_verifies() {
    let fixture = fixture();
    let report = desk_evidence::verify(&fixture.bundle, &fixture.key.verifying_key()).unwrap();
    assert_eq!(report.session_id, SESSION);
    assert_eq!(report.n_records, 10);
    assert_eq!(report.n_actions, 2);
    assert_eq!(report.n_receipts, 2);
    assert!(report.released);
    assert_eq!(report.n_frames, 2);
    assert_eq!(report.n_files, 6);
    assert_eq!(report.artifacts.len(), 1);
    assert_eq!(
        report.signer_fingerprint,
        fixture.key.verifying_key().fingerprint()
    );
}

#[test]
fn tamper_one_byte_of_a_record_payload() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-byte");
    let mut lines = journal_lines(&bundle);
    assert!(lines[2].contains(r#""at_ms":1002"#));
    lines[2] = lines[2].replacen(r#""at_ms":1002"#, r#""at_ms":1003"#, 1);
    write_journal_lines(&bundle, &lines);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_record(&error, 2, "screenshot", |problem| {
        matches!(problem, RecordProblem::BadSignature)
    });
}

#[test]
fn tamper_drop_a_record() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-drop");
    let mut lines = journal_lines(&bundle);
    lines.remove(2);
    write_journal_lines(&bundle, &lines);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_record(&error, 3, "action_receipt", |problem| {
        matches!(
            problem,
            RecordProblem::SeqOutOfOrder {
                expected: 2,
                found: 3
            }
        )
    });
}

#[test]
fn tamper_drop_the_last_record() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-drop-last");
    let mut lines = journal_lines(&bundle);
    lines.pop();
    write_journal_lines(&bundle, &lines);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::JournalMismatch(_))
        ),
        "{error:?}"
    );
}

#[test]
fn tamper_reorder_two_records() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-reorder");
    let mut lines = journal_lines(&bundle);
    lines.swap(4, 5);
    write_journal_lines(&bundle, &lines);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_record(&error, 5, "screenshot", |problem| {
        matches!(
            problem,
            RecordProblem::SeqOutOfOrder {
                expected: 4,
                found: 5
            }
        )
    });
}

#[test]
fn tamper_swap_the_signature_of_one_record() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-signature");
    let mut lines = journal_lines(&bundle);
    let signature_of = |line: &str| line[line.find(r#""signature_b64":"#).unwrap()..].to_string();
    let foreign = signature_of(&lines[1]);
    let own = signature_of(&lines[3]);
    lines[3] = lines[3].replace(&own, &foreign);
    write_journal_lines(&bundle, &lines);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_record(&error, 3, "action_receipt", |problem| {
        matches!(problem, RecordProblem::BadSignature)
    });
}

#[test]
fn tamper_the_artifact() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-artifact");
    flip_byte(&bundle.join("artifact").join(ARTIFACT), 3);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_file(&error, "artifact/attempt.dxf", |problem| {
        matches!(problem, FileProblem::Sha256Mismatch { .. })
    });
}

#[test]
fn tamper_events_json() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-events");
    flip_byte(&bundle.join("events.json"), 5);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_file(&error, "events.json", |problem| {
        matches!(problem, FileProblem::Sha256Mismatch { .. })
    });
}

#[test]
fn tamper_frame_events_json() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-frame-events");
    let path = bundle.join("frame_events.json");
    let mut bytes = fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 1);
    fs::write(&path, bytes).unwrap();
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_file(&error, "frame_events.json", |problem| {
        matches!(problem, FileProblem::SizeMismatch { .. })
    });
}

#[test]
fn tamper_a_frame_and_extra_files() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-frame");
    flip_byte(&bundle.join("frames/1.png"), 0);
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_file(&error, "frames/1.png", |problem| {
        matches!(problem, FileProblem::Sha256Mismatch { .. })
    });

    let bundle = copy_bundle(&fixture, "t-extra");
    fs::write(bundle.join("frames/9.png"), b"planted").unwrap();
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_file(&error, "frames/9.png", |problem| {
        matches!(problem, FileProblem::Unlisted)
    });

    let bundle = copy_bundle(&fixture, "t-missing");
    fs::remove_file(bundle.join("frames/0.png")).unwrap();
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert_file(&error, "frames/0.png", |problem| {
        matches!(problem, FileProblem::Missing)
    });
}

#[test]
fn tamper_the_manifest() {
    let fixture = fixture();
    let bundle = copy_bundle(&fixture, "t-manifest");
    let path = bundle.join("manifest.json");
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""created_at_ms":5000"#));
    fs::write(
        &path,
        text.replace(r#""created_at_ms":5000"#, r#""created_at_ms":5001"#),
    )
    .unwrap();
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::BadSignature)
        ),
        "{error:?}"
    );

    let bundle = copy_bundle(&fixture, "t-manifest-dup");
    let text = fs::read_to_string(bundle.join("manifest.json")).unwrap();
    fs::write(
        bundle.join("manifest.json"),
        text.replacen('{', r#"{"payload":{},"#, 1),
    )
    .unwrap();
    let error = verify_err(&bundle, &fixture.key.verifying_key());
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::Malformed(_))
        ),
        "{error:?}"
    );
}

#[test]
fn tamper_replace_the_key() {
    let fixture = fixture();
    let real_key = fixture.key.verifying_key();
    let attacker = SigningKey::from_bytes(&[99; 32]);

    // Verifying with another key fails on the manifest's signer.
    let error = verify_err(&fixture.bundle, &attacker.verifying_key());
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::KeyMismatch { .. })
        ),
        "{error:?}"
    );

    // A whole session forged and exported with the attacker's key does not verify with ours.
    let forged_session = fixture.root.join("forged-session");
    session(&forged_session, &attacker);
    let forged = fixture.root.join("forged-bundle");
    desk_evidence::export(
        &ExportInputs::from_session_dir(&forged_session).unwrap(),
        &attacker,
        &forged,
        5000,
    )
    .unwrap();
    let error = verify_err(&forged, &real_key);
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::KeyMismatch { .. })
        ),
        "{error:?}"
    );

    // Claiming our fingerprint in the forged manifest does not help: the signature fails.
    let path = forged.join("manifest.json");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        text.replace(
            &attacker.verifying_key().fingerprint(),
            &real_key.fingerprint(),
        ),
    )
    .unwrap();
    let error = verify_err(&forged, &real_key);
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::BadSignature)
        ),
        "{error:?}"
    );

    // Our manifest over the attacker's journal: the first record's signature fails.
    let bundle = copy_bundle(&fixture, "t-key-journal");
    fs::copy(
        forged.join("evidence.ndjson"),
        bundle.join("evidence.ndjson"),
    )
    .unwrap();
    let error = verify_err(&bundle, &real_key);
    assert_record(&error, 0, "session_started", |problem| {
        matches!(problem, RecordProblem::BadSignature)
    });
}

#[test]
fn export_refuses_logs_that_contradict_the_journal() {
    let fixture = fixture();
    let session_dir = fixture.root.join("session");
    let events = session_dir.join("events.json");
    flip_byte(&events, 2);
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    let error =
        desk_evidence::export(&inputs, &fixture.key, &fixture.root.join("refused"), 1).unwrap_err();
    assert!(error.to_string().contains("events.json"), "{error}");
    assert!(error.to_string().contains("seq 3"), "{error}");
    assert!(!fixture.root.join("refused").exists());
}

#[test]
fn journal_alone_names_a_broken_chain_link() {
    let fixture = fixture();
    let lines = journal_lines(&fixture.bundle);
    // A record copied from another position keeps a valid signature but breaks the chain.
    let mut forged = lines.clone();
    forged[6] = lines[2].clone();
    let error = desk_evidence::verify_journal(
        (forged.join("\n") + "\n").as_bytes(),
        &fixture.key.verifying_key(),
    )
    .unwrap_err();
    assert_record(&error, 2, "screenshot", |problem| {
        matches!(
            problem,
            RecordProblem::SeqOutOfOrder {
                expected: 6,
                found: 2
            }
        )
    });
}

mod gate;
mod observations;
mod retention;
mod terminal;
