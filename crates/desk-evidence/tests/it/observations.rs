//! The observer's signed observations in the evidence: `observer_observation` records checked at
//! write and at read, and the stored signed bytes carried by a bundle, checked against their
//! record's digest and, with the observer's key, their signature; a tampered observation is
//! named.

use super::*;
use desk_evidence::record::{ObserverObservation, Record};

const OBSERVATION_ID: &str = "obs_00112233445566778899aabbccddeeff";

/// Signed observation bytes as the observer answers them (the fields the bundle checks).
fn signed_observation(observer: &SigningKey) -> Vec<u8> {
    let payload = serde_json::json!({
        "schema_version": "deskbroker.observer.observation.v1",
        "observation_id": OBSERVATION_ID,
        "session_id": SESSION,
        "outcome": "observed",
        "elements": [{"id": "0", "role": "application", "name": "fixture"}],
        "observer_key_id": observer.verifying_key().fingerprint(),
        "at_ms": 1500,
    });
    desk_evidence::Envelope::sign(&payload, observer)
        .unwrap()
        .canonical_bytes()
        .unwrap()
}

fn record_of(signed: &[u8], observer: &SigningKey) -> ObserverObservation {
    ObserverObservation {
        observation_id: OBSERVATION_ID.to_string(),
        signed_sha256: sha256_hex(signed),
        signed_bytes: signed.len() as u64,
        observer_key_id: observer.verifying_key().fingerprint(),
        outcome: "observed".to_string(),
        frame_sha256: Some(sha256_hex(b"frame")),
        element_count: 1,
        truncated: false,
        observed_at_ms: 1500,
        monotonic_ms: 99,
        tree_ms: 12,
    }
}

/// A session directory whose journal records one observation stored in `observations/`.
fn observed_session(root: &Path, key: &SigningKey, observer: &SigningKey) -> PathBuf {
    let session_dir = root.join("session");
    fs::create_dir_all(session_dir.join("observations")).unwrap();
    let signed = signed_observation(observer);
    fs::write(
        session_dir.join(format!("observations/{OBSERVATION_ID}.json")),
        &signed,
    )
    .unwrap();
    let mut writer = started_journal(&session_dir.join("evidence.ndjson"), key, None);
    writer
        .append(
            1600,
            RecordBody::ObserverObservation(record_of(&signed, observer)),
        )
        .unwrap();
    session_dir
}

fn exported(root: &Path, key: &SigningKey, observer: &SigningKey) -> PathBuf {
    let session_dir = observed_session(root, key, observer);
    let bundle = root.join("bundle");
    let inputs = ExportInputs::from_session_dir(&session_dir).unwrap();
    desk_evidence::export(&inputs, key, &bundle, 5000).unwrap();
    bundle
}

#[test]
fn an_observation_record_round_trips_and_its_bundle_verifies_with_and_without_the_key() {
    let directory = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[42; 32]);
    let observer = SigningKey::from_bytes(&[7; 32]);
    let bundle = exported(directory.path(), &key, &observer);
    assert!(
        bundle
            .join(format!("observations/{OBSERVATION_ID}.json"))
            .is_file()
    );
    let report = desk_evidence::verify(&bundle, &key.verifying_key()).unwrap();
    assert_eq!(report.n_observations, 1);
    assert_eq!(report.n_observation_signatures, 0);
    let report = desk_evidence::verify_observed(
        &bundle,
        &key.verifying_key(),
        None,
        Some(&observer.verifying_key()),
    )
    .unwrap();
    assert_eq!(report.n_observations, 1);
    assert_eq!(report.n_observation_signatures, 1);
    assert_eq!(
        report.observer_fingerprint,
        Some(observer.verifying_key().fingerprint())
    );
}

#[test]
fn a_bad_or_missing_field_is_refused_at_write_and_at_read() {
    let directory = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[42; 32]);
    let observer = SigningKey::from_bytes(&[7; 32]);
    let mut writer = started_journal(&directory.path().join("evidence.ndjson"), &key, None);
    let good = record_of(&signed_observation(&observer), &observer);
    let refused = |body: ObserverObservation, writer: &mut EvidenceWriter| {
        writer
            .append(1600, RecordBody::ObserverObservation(body))
            .unwrap_err()
            .to_string()
    };
    let mut bad = good.clone();
    bad.observation_id = "obs_../../etc/passwd".to_string();
    assert!(refused(bad, &mut writer).contains("observation_id"));
    let mut bad = good.clone();
    bad.signed_sha256 = "ABC".to_string();
    assert!(refused(bad, &mut writer).contains("signed_sha256"));
    let mut bad = good.clone();
    bad.outcome = "seen".to_string();
    assert!(refused(bad, &mut writer).contains("outcome"));
    let mut bad = good.clone();
    bad.outcome = "insufficient_data".to_string();
    assert!(refused(bad, &mut writer).contains("no elements"));
    let mut bad = good.clone();
    bad.observer_key_id = "someone".to_string();
    assert!(refused(bad, &mut writer).contains("observer_key_id"));
    // The refusals changed nothing: the good record still appends after them.
    let written = writer
        .append(1600, RecordBody::ObserverObservation(good))
        .unwrap();
    let payload = written.record().to_payload().unwrap();
    assert!(Record::from_payload(payload.clone()).is_ok());
    let mut missing = payload;
    missing["body"]
        .as_object_mut()
        .unwrap()
        .remove("frame_sha256");
    let error = Record::from_payload(missing).unwrap_err().to_string();
    assert!(error.contains("frame_sha256"), "{error}");
}

#[test]
fn a_tampered_stored_observation_is_named() {
    let directory = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[42; 32]);
    let observer = SigningKey::from_bytes(&[7; 32]);
    let bundle = exported(directory.path(), &key, &observer);
    let path = format!("observations/{OBSERVATION_ID}.json");

    // Its bytes changed in the bundle: the manifest names the file. Changed where the session
    // stores it: export refuses it, naming the file and its record.
    let tampered = directory.path().join("tampered");
    copy_dir(&bundle, &tampered);
    let mut bytes = fs::read(tampered.join(&path)).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    fs::write(tampered.join(&path), &bytes).unwrap();
    let error = verify_err(&tampered, &key.verifying_key());
    assert_file(&error, &path, |problem| {
        matches!(problem, FileProblem::Sha256Mismatch { .. })
    });
    let session_dir = directory.path().join("session");
    fs::write(session_dir.join(&path), &bytes).unwrap();
    let error = desk_evidence::export(
        &ExportInputs::from_session_dir(&session_dir).unwrap(),
        &key,
        &directory.path().join("re-exported"),
        5000,
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains(&path) && error.contains("observer_observation"),
        "{error}"
    );

    // Signed by another key than the observer's given to verify: named with its record.
    let other = SigningKey::from_bytes(&[8; 32]);
    let error = desk_evidence::verify_observed(
        &bundle,
        &key.verifying_key(),
        None,
        Some(&other.verifying_key()),
    )
    .unwrap_err();
    assert_record(&error, 1, "observer_observation", |problem| {
        matches!(problem, RecordProblem::Observation { .. })
    });
    assert!(error.to_string().contains(&path));
}
