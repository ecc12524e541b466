//! Attempt data deleted at release: a released session's bundle lists its logs and artifact
//! as `not_retained` with the journal's digests and verifies; an unreleased one cannot, and a
//! manifest whose not-retained entries disagree with the journal is refused.

use super::*;

/// The fixture's session directory with every attempt file deleted, as release leaves it.
fn released_and_deleted(root: &Path, journal_records: Option<usize>) -> (PathBuf, SigningKey) {
    let key = SigningKey::from_bytes(&[42; 32]);
    let session_dir = root.join("session");
    session(&session_dir, &key);
    for path in ["frames", "checkpoint"] {
        fs::remove_dir_all(session_dir.join(path)).unwrap();
    }
    for path in ["events.json", "frame_events.json"] {
        fs::remove_file(session_dir.join(path)).unwrap();
    }
    if let Some(n) = journal_records {
        let text = fs::read_to_string(session_dir.join("evidence.ndjson")).unwrap();
        let kept: Vec<&str> = text.lines().take(n).collect();
        fs::write(session_dir.join("evidence.ndjson"), kept.join("\n") + "\n").unwrap();
    }
    (session_dir, key)
}

#[test]
fn a_released_bundle_without_its_attempt_data_verifies_by_digest() {
    let directory = tempfile::tempdir().unwrap();
    let (session_dir, key) = released_and_deleted(directory.path(), None);
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    let bundle = directory.path().join("bundle");
    let manifest = desk_evidence::export(&inputs, &key, &bundle, 5000).unwrap();
    let listed: Vec<&str> = manifest
        .not_retained
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(
        listed,
        ["artifact/attempt.dxf", "events.json", "frame_events.json"]
    );
    let files: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["evidence.ndjson"]);
    let report = desk_evidence::verify(&bundle, &key.verifying_key()).unwrap();
    assert!(report.released);
    assert_eq!(report.n_frames, 0);
    assert_eq!(report.not_retained, listed);
    assert_eq!(report.artifacts.len(), 1);
}

#[test]
fn an_unreleased_session_cannot_drop_its_logs_or_artifact() {
    let directory = tempfile::tempdir().unwrap();
    // Every record but session_released: the logs' final digests were never signed.
    let (session_dir, key) = released_and_deleted(directory.path(), Some(9));
    let export = |name: &str| {
        let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
        desk_evidence::export(&inputs, &key, &directory.path().join(name), 5000)
            .unwrap_err()
            .to_string()
    };
    let error = export("without-artifact");
    assert!(
        error.contains("attempt.dxf is not among the inputs"),
        "{error}"
    );
    // With the artifact back, the missing logs contradict the receipts' digests.
    fs::create_dir_all(session_dir.join("checkpoint")).unwrap();
    fs::write(
        session_dir.join("checkpoint").join(ARTIFACT),
        b"0\nSECTION\n2\nENTITIES\n0\nENDSEC\n0\nEOF\n",
    )
    .unwrap();
    let error = export("without-logs");
    assert!(error.contains("events.json"), "{error}");
}

/// Rewrites the bundle's manifest with `edit` and signs it again with `key` (as a buggy or
/// hostile exporter holding the key would).
pub(crate) fn resign(
    bundle: &Path,
    key: &SigningKey,
    edit: impl FnOnce(&mut desk_evidence::Manifest),
) {
    let bytes = fs::read(bundle.join("manifest.json")).unwrap();
    let mut manifest = desk_evidence::bundle::read_manifest_unverified(&bytes).unwrap();
    edit(&mut manifest);
    let mut out = desk_evidence::Envelope::sign(&manifest, key)
        .unwrap()
        .canonical_bytes()
        .unwrap();
    out.push(b'\n');
    fs::write(bundle.join("manifest.json"), out).unwrap();
}

#[test]
fn not_retained_entries_must_match_the_journal_and_the_bundle() {
    let directory = tempfile::tempdir().unwrap();
    let (session_dir, key) = released_and_deleted(directory.path(), None);
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    let bundle = directory.path().join("bundle");
    desk_evidence::export(&inputs, &key, &bundle, 5000).unwrap();

    let wrong_digest = directory.path().join("wrong-digest");
    copy_dir(&bundle, &wrong_digest);
    resign(&wrong_digest, &key, |manifest| {
        manifest.not_retained[0].sha256 = "00".repeat(32);
    });
    let error = verify_err(&wrong_digest, &key.verifying_key());
    assert_file(
        &error,
        "artifact/attempt.dxf",
        |problem| matches!(problem, FileProblem::NotRecorded(why) if why.contains("digest differs")),
    );

    let unknown = directory.path().join("unknown");
    copy_dir(&bundle, &unknown);
    resign(&unknown, &key, |manifest| {
        manifest.not_retained[0].path = "artifact/other.dxf".to_string();
    });
    let error = verify_err(&unknown, &key.verifying_key());
    assert_file(
        &error,
        "artifact/other.dxf",
        |problem| matches!(problem, FileProblem::NotRecorded(why) if why.contains("records no such")),
    );
}

/// A released session's bundle is stamped with the frame retention its journal records: kept
/// frames travel in the bundle stamped `keep`; deleted ones leave a bundle stamped
/// `delete_at_release` that may carry none; a stamp that differs from the journal is refused.
#[test]
fn the_manifest_is_stamped_with_the_journals_frame_retention() {
    let directory = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[42; 32]);
    let kept = directory.path().join("kept");
    session_with(&kept, &key, Some("keep"));
    let bundle = directory.path().join("kept-bundle");
    let inputs = ExportInputs::from_session_dir(&kept).unwrap();
    let manifest = desk_evidence::export(&inputs, &key, &bundle, 5000).unwrap();
    assert_eq!(manifest.frame_retention.as_deref(), Some("keep"));
    let report = desk_evidence::verify(&bundle, &key.verifying_key()).unwrap();
    assert_eq!(report.frame_retention.as_deref(), Some("keep"));
    assert_eq!(report.n_frames, 2);
    resign(&bundle, &key, |manifest| {
        manifest.frame_retention = Some("delete_at_release".to_string());
    });
    let error = desk_evidence::verify(&bundle, &key.verifying_key()).unwrap_err();
    assert!(error.to_string().contains("frame retention"), "{error}");
    resign(&bundle, &key, |manifest| manifest.frame_retention = None);
    assert!(desk_evidence::verify(&bundle, &key.verifying_key()).is_err());

    // Deleted at release: stamped, verifies without frames; with frames export refuses.
    let deleted = directory.path().join("deleted");
    session_with(&deleted, &key, Some("delete_at_release"));
    let inputs = ExportInputs::from_session_dir(&deleted).unwrap();
    let error =
        desk_evidence::export(&inputs, &key, &directory.path().join("refused"), 5000).unwrap_err();
    assert!(error.to_string().contains("deleted at release"), "{error}");
    fs::remove_dir_all(deleted.join("frames")).unwrap();
    let inputs = ExportInputs::from_session_dir(&deleted).unwrap();
    let bundle = directory.path().join("deleted-bundle");
    let manifest = desk_evidence::export(&inputs, &key, &bundle, 5000).unwrap();
    assert_eq!(
        manifest.frame_retention.as_deref(),
        Some("delete_at_release")
    );
    let report = desk_evidence::verify(&bundle, &key.verifying_key()).unwrap();
    assert_eq!(report.n_frames, 0);
}
