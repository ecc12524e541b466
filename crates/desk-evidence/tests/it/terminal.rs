//! Terminal receipts are checked under their killer's key: a watchdog's receipt verifies only
//! under the watchdog's key (the manifest's `watchdog_key`, pinned by a verifier who knows it);
//! one the broker's evidence key signed "as the watchdog" is refused by export and by verify.

use super::*;
use desk_evidence::record::{KILL_CONTROL_ID, SessionKilled};
use desk_evidence::spool::{SPOOL_SCHEMA, Spooled};

fn receipt(source: &str) -> SessionKilled {
    SessionKilled {
        record_id: "kill-00112233445566778899aabbccddeeff".to_string(),
        control_id: KILL_CONTROL_ID.to_string(),
        stage: "terminal".to_string(),
        outcome: "contained".to_string(),
        recorded_at_ms: 2000,
        source: source.to_string(),
        reason: "idle limit reached (5000 ms idle)".to_string(),
        signer_identity: (source == "watchdog").then(|| "own".to_string()),
        limit: Some("idle_limit".to_string()),
        last_action_index: None,
        state_destroyed: true,
        lease_revoked: true,
        storage_destroyed: true,
        process: None,
        action_in_doubt: None,
        signed_receipt: None,
    }
}

/// A killed session's directory: its journal signed by `journal_key`, ending with the receipt
/// of `source` whose spool envelope `killer` signed (`None`: no signed receipt at all).
fn killed_session(
    root: &Path,
    journal_key: &SigningKey,
    source: &str,
    killer: Option<&SigningKey>,
) -> PathBuf {
    killed_session_of(root, journal_key, receipt(source), killer)
}

/// [`killed_session`] ending with `receipt` as given.
fn killed_session_of(
    root: &Path,
    journal_key: &SigningKey,
    receipt: SessionKilled,
    killer: Option<&SigningKey>,
) -> PathBuf {
    let session_dir = root.join("session");
    fs::create_dir_all(&session_dir).unwrap();
    let mut writer = started_journal(&session_dir.join("evidence.ndjson"), journal_key, None);
    let mut body = receipt.clone();
    body.signed_receipt = killer.map(|killer| {
        let spooled = Spooled {
            schema_version: SPOOL_SCHEMA.to_string(),
            session_id: SESSION.to_string(),
            receipt,
        };
        desk_evidence::Envelope::sign(&spooled, killer).unwrap()
    });
    writer
        .append(2001, RecordBody::SessionKilled(body))
        .unwrap();
    session_dir
}

fn export(
    session_dir: &Path,
    key: &SigningKey,
    watchdog: Option<VerifyingKey>,
    bundle: &Path,
) -> Result<desk_evidence::Manifest, EvidenceError> {
    let mut inputs = ExportInputs::from_session_dir(session_dir).unwrap();
    inputs.watchdog_key = watchdog;
    desk_evidence::export(&inputs, key, bundle, 5000)
}

fn terminal_refused(error: &EvidenceError) -> bool {
    matches!(
        error,
        EvidenceError::Record {
            problem: RecordProblem::TerminalReceipt(_),
            ..
        }
    ) || error.to_string().contains("terminal receipt")
}

#[test]
fn a_watchdog_receipt_verifies_under_the_watchdog_key_and_pinned() {
    let directory = tempfile::tempdir().unwrap();
    let broker = SigningKey::from_bytes(&[42; 32]);
    let watchdog = SigningKey::from_bytes(&[7; 32]);
    let session_dir = killed_session(directory.path(), &broker, "watchdog", Some(&watchdog));
    let bundle = directory.path().join("bundle");
    let manifest = export(
        &session_dir,
        &broker,
        Some(watchdog.verifying_key()),
        &bundle,
    )
    .unwrap();
    assert_eq!(
        manifest.watchdog_key,
        Some(watchdog.verifying_key().to_base64())
    );
    let report = desk_evidence::verify(&bundle, &broker.verifying_key()).unwrap();
    assert_eq!(report.n_terminal_receipts, 1);
    assert_eq!(
        report.watchdog_fingerprint,
        Some(watchdog.verifying_key().fingerprint())
    );
    desk_evidence::verify_pinned(
        &bundle,
        &broker.verifying_key(),
        Some(&watchdog.verifying_key()),
    )
    .unwrap();
    let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
    let error =
        desk_evidence::verify_pinned(&bundle, &broker.verifying_key(), Some(&other)).unwrap_err();
    assert!(
        matches!(
            error,
            EvidenceError::Manifest(ManifestProblem::WatchdogKey(_))
        ),
        "{error}"
    );
}

#[test]
fn a_receipt_the_evidence_key_signed_as_the_watchdog_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let broker = SigningKey::from_bytes(&[42; 32]);
    let watchdog = SigningKey::from_bytes(&[7; 32]);
    let session_dir = killed_session(directory.path(), &broker, "watchdog", Some(&broker));
    // Export refuses it with the watchdog's key known, and with none known.
    for known in [Some(watchdog.verifying_key()), None] {
        let error = export(
            &session_dir,
            &broker,
            known,
            &directory.path().join("refused"),
        )
        .unwrap_err();
        assert!(error.to_string().contains("terminal receipt"), "{error}");
        assert!(!directory.path().join("refused").exists());
    }
    // A hostile exporter names the broker's own key as the watchdog's: verify refuses it when
    // the verifier pins the real watchdog key, and the manifest rewritten to name the real
    // watchdog key makes the receipt itself fail.
    let bundle = directory.path().join("bundle");
    export(&session_dir, &broker, Some(broker.verifying_key()), &bundle).unwrap();
    let error = desk_evidence::verify_pinned(
        &bundle,
        &broker.verifying_key(),
        Some(&watchdog.verifying_key()),
    )
    .unwrap_err();
    assert!(error.to_string().contains("watchdog key"), "{error}");
    super::retention::resign(&bundle, &broker, |manifest| {
        manifest.watchdog_key = Some(watchdog.verifying_key().to_base64());
    });
    let error = desk_evidence::verify(&bundle, &broker.verifying_key()).unwrap_err();
    assert!(terminal_refused(&error), "{error}");
    assert!(
        error.to_string().contains("not signed by the watchdog"),
        "{error}"
    );
}

#[test]
fn operator_receipts_verify_under_the_journal_key_and_unsigned_ones_are_refused() {
    let directory = tempfile::tempdir().unwrap();
    let broker = SigningKey::from_bytes(&[42; 32]);
    let session_dir = killed_session(directory.path(), &broker, "operator", Some(&broker));
    let bundle = directory.path().join("bundle");
    export(&session_dir, &broker, None, &bundle).unwrap();
    assert_eq!(
        desk_evidence::verify(&bundle, &broker.verifying_key())
            .unwrap()
            .n_terminal_receipts,
        1
    );
    let unsigned = tempfile::tempdir().unwrap();
    let session_dir = killed_session(unsigned.path(), &broker, "operator", None);
    let error = export(&session_dir, &broker, None, &unsigned.path().join("b")).unwrap_err();
    assert!(
        error.to_string().contains("signed receipt is missing"),
        "{error}"
    );
    // Signed by a third key: neither the watchdog's nor the journal's.
    let third = tempfile::tempdir().unwrap();
    let stranger = SigningKey::from_bytes(&[9; 32]);
    let session_dir = killed_session(third.path(), &broker, "operator", Some(&stranger));
    let error = export(&session_dir, &broker, None, &third.path().join("b")).unwrap_err();
    assert!(error.to_string().contains("neither"), "{error}");
}

#[test]
fn the_signer_identity_comes_with_the_watchdogs_signature_and_is_own_or_shared() {
    let broker = SigningKey::from_bytes(&[42; 32]);
    let watchdog = SigningKey::from_bytes(&[7; 32]);
    let refused = [
        ("operator", "own", &broker, "names the signer's identity"),
        ("watchdog", "own", &broker, "not signed by the watchdog"),
        ("watchdog", "root", &watchdog, "unknown signer identity"),
    ];
    for (source, identity, killer, why) in refused {
        let directory = tempfile::tempdir().unwrap();
        let mut body = receipt(source);
        body.signer_identity = Some(identity.to_string());
        let session_dir = killed_session_of(directory.path(), &broker, body, Some(killer));
        let bundle = directory.path().join("bundle");
        let key = Some(watchdog.verifying_key());
        let error = export(&session_dir, &broker, key, &bundle).unwrap_err();
        assert!(error.to_string().contains(why), "{source}: {error}");
        assert!(!bundle.exists());
    }
    // An operator's kill the watchdog finished (signed by it, naming it), and a watchdog's
    // receipt from before the field existed, verify.
    for (source, identity) in [("operator", Some("shared")), ("watchdog", None)] {
        let directory = tempfile::tempdir().unwrap();
        let mut body = receipt(source);
        body.signer_identity = identity.map(str::to_string);
        let session_dir = killed_session_of(directory.path(), &broker, body, Some(&watchdog));
        let bundle = directory.path().join("bundle");
        let key = Some(watchdog.verifying_key());
        export(&session_dir, &broker, key, &bundle).unwrap();
        desk_evidence::verify(&bundle, &broker.verifying_key()).unwrap();
    }
}
