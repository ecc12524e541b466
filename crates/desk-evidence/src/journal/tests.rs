//! Unit tests of the journal writer: read-back, chain rules, reopening.

use super::*;
use crate::record::{ActionAccepted, SessionStarted};

fn started(key: &SigningKey) -> RecordBody {
    RecordBody::SessionStarted(SessionStarted {
        lease_id: "lease-1".to_string(),
        backend: "fake".to_string(),
        screen_width: 1280,
        screen_height: 800,
        signer_fingerprint: key.verifying_key().fingerprint(),
        policy_sha256: None,
    })
}

fn accepted(index: u64) -> RecordBody {
    RecordBody::ActionAccepted(ActionAccepted {
        index,
        request_id: format!("req-{index}"),
        action_type: "click".to_string(),
        intent: Some("open the menu".to_string()),
        request_sha256: sha256_hex(b"request"),
    })
}

#[test]
fn append_reads_back_and_chains() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    let first = writer
        .append(10, started(&key))
        .expect("appends session_started");
    let second = writer
        .append(11, accepted(0))
        .expect("appends action_accepted");
    assert_eq!(first.record().prev_sha256, ZERO_SHA256);
    assert_eq!(second.record().prev_sha256, first.envelope_sha256());
    let records = read_journal(&path, &key.verifying_key()).expect("journal verifies");
    assert_eq!(records, vec![first, second]);
}

#[test]
fn out_of_place_records_are_refused_without_poisoning() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    assert!(
        writer.append(1, accepted(0)).is_err(),
        "first record must be session_started"
    );
    writer.append(1, started(&key)).expect("appends");
    assert!(
        writer.append(2, accepted(5)).is_err(),
        "indices are contiguous"
    );
    writer
        .append(2, accepted(0))
        .expect("writer is still usable");
    assert_eq!(writer.next_seq(), 2);
}

#[test]
fn reopen_continues_the_chain() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    {
        let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
        writer.append(1, started(&key)).expect("appends");
    }
    let (mut writer, records) = EvidenceWriter::open(&path, key.clone()).expect("reopens");
    assert_eq!(records.len(), 1);
    writer.append(2, accepted(0)).expect("appends after reopen");
    assert_eq!(
        read_journal(&path, &key.verifying_key())
            .expect("verifies")
            .len(),
        2
    );
}

#[test]
fn torn_tail_is_reported() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    writer.append(1, started(&key)).expect("appends");
    let mut bytes = std::fs::read(&path).expect("reads");
    bytes.extend_from_slice(b"{\"payload\":");
    assert!(matches!(
        verify_journal(&bytes, &key.verifying_key()),
        Err(EvidenceError::Record {
            line: 2,
            problem: RecordProblem::Truncated,
            ..
        })
    ));
}

fn receipt(index: u64, settle_outcome: &str) -> RecordBody {
    let empty = crate::record::LogDigest::of(b"");
    RecordBody::ActionReceipt(crate::record::ActionReceipt {
        index,
        settle_outcome: settle_outcome.to_string(),
        error_code: None,
        screenshot_sha256: None,
        events: empty.clone(),
        frame_events: empty,
    })
}

#[test]
fn a_not_injected_receipt_withdraws_the_last_index_only() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    writer.append(1, started(&key)).expect("appends");
    writer.append(2, accepted(0)).expect("accepts 0");
    writer
        .append(3, receipt(0, crate::record::NOT_INJECTED))
        .expect("withdraws 0");
    assert!(
        writer.append(4, accepted(1)).is_err(),
        "a withdrawn index is accepted again, not skipped"
    );
    writer.append(4, accepted(0)).expect("accepts 0 again");
    writer.append(5, receipt(0, "settled")).expect("closes 0");
    writer.append(6, accepted(1)).expect("accepts 1");
    writer.append(7, receipt(1, "settled")).expect("closes 1");
    writer.append(8, accepted(2)).expect("accepts 2");
    writer.append(9, accepted(3)).expect("accepts 3");
    assert!(
        writer
            .append(10, receipt(2, crate::record::NOT_INJECTED))
            .is_err(),
        "only the last accepted action can be withdrawn"
    );
    let records = read_journal(&path, &key.verifying_key()).expect("journal verifies");
    assert_eq!(records.len(), 9);
}

#[test]
fn an_earlier_record_altered_on_disk_refuses_the_next_append() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    writer.append(10, started(&key)).expect("session_started");
    writer.append(11, accepted(0)).expect("action 0");
    writer.append(12, receipt(0, "settled")).expect("receipt 0");
    // Flip one byte of the first record in place: same length, last record untouched.
    let mut bytes = std::fs::read(&path).expect("reads");
    let quote_idx = bytes
        .windows(9)
        .position(|window| window == b"\"lease-1\"")
        .expect("the first record names its lease");
    bytes[quote_idx + 1] = b'L';
    std::fs::write(&path, &bytes).expect("tampers");
    let refused = writer
        .append(13, accepted(1))
        .expect_err("tampered journal");
    assert!(
        matches!(&refused, EvidenceError::Tampered { reason, .. } if reason.contains("line 1")),
        "{refused}"
    );
    assert_eq!(
        std::fs::read(&path).expect("reads"),
        bytes,
        "nothing appended"
    );
    // Fail closed: the writer stays refused even once the bytes are restored.
    bytes[quote_idx + 1] = b'l';
    std::fs::write(&path, &bytes).expect("restores");
    assert!(writer.append(13, accepted(1)).is_err());
}

#[test]
fn a_journal_grown_or_cut_under_the_writer_refuses_the_next_append() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    writer.append(10, started(&key)).expect("session_started");
    writer.append(11, accepted(0)).expect("action 0");
    let bytes = std::fs::read(&path).expect("reads");
    let first_line_len = bytes
        .iter()
        .position(|byte| *byte == b'\n')
        .expect("a line")
        + 1;
    std::fs::write(&path, &bytes[..first_line_len]).expect("cuts the last record");
    let refused = writer
        .append(12, receipt(0, "settled"))
        .expect_err("cut journal");
    assert!(
        matches!(&refused, EvidenceError::Tampered { reason, .. } if reason.contains("bytes, writer expected")),
        "{refused}"
    );
}

fn killed() -> RecordBody {
    RecordBody::SessionKilled(crate::record::SessionKilled {
        record_id: "kill-1".to_string(),
        control_id: crate::record::KILL_CONTROL_ID.to_string(),
        stage: "terminal".to_string(),
        outcome: "contained".to_string(),
        recorded_at_ms: 5,
        source: "operator".to_string(),
        reason: "runaway".to_string(),
        signer_identity: None,
        limit: None,
        last_action_index: Some(0),
        state_destroyed: true,
        lease_revoked: true,
        storage_destroyed: true,
        process: None,
        action_in_doubt: None,
        signed_receipt: None,
    })
}

fn refused(count: u64) -> crate::record::ActionRefused {
    crate::record::ActionRefused {
        record_id: format!("deny-{count}"),
        control_id: crate::record::DENIAL_CONTROL_ID.to_string(),
        stage: crate::record::DENIAL_STAGE.to_string(),
        outcome: crate::record::DENIAL_OUTCOME.to_string(),
        recorded_at_ms: 4,
        request_id: Some(format!("bad-{count}")),
        error_code: "invalid_action".to_string(),
        refused_count: Some(count),
    }
}

#[test]
fn a_kill_record_never_leaves_an_accepted_action_without_its_receipt() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    writer.append(1, started(&key)).expect("appends");
    writer.append(2, accepted(0)).expect("accepts 0");
    assert!(
        writer.append(3, killed()).is_err(),
        "action 0 is open: the kill record would half-log it"
    );
    writer.append(3, receipt(0, "in_doubt")).expect("closes 0");
    writer.append(4, killed()).expect("then the kill record");
    assert!(writer.append(5, accepted(1)).is_err(), "nothing follows");
    read_journal(&path, &key.verifying_key()).expect("journal verifies");
}

#[test]
fn denials_are_signed_records_between_actions_and_their_shape_is_checked() {
    let directory = tempfile::tempdir().expect("tempdir");
    let path = directory.path().join("evidence.ndjson");
    let key = SigningKey::from_bytes(&[1; 32]);
    let mut writer = EvidenceWriter::create(&path, key.clone(), "session-1").expect("creates");
    writer.append(1, started(&key)).expect("appends");
    writer
        .append(2, RecordBody::ActionRefused(refused(1)))
        .expect("a denial before any action");
    writer.append(3, accepted(0)).expect("takes index 0");
    writer
        .append(4, RecordBody::ActionRefused(refused(2)))
        .expect("a denial while action 0 is open takes no index");
    writer.append(5, receipt(0, "settled")).expect("closes 0");
    let records = read_journal(&path, &key.verifying_key()).expect("journal verifies");
    let denials: Vec<_> = records
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::ActionRefused(denial) => Some(denial.refused_count),
            _ => None,
        })
        .collect();
    assert_eq!(denials, vec![Some(1), Some(2)]);

    let mut wrong_control = refused(3);
    wrong_control.control_id = "AID-I-008.004-G001".to_string();
    let mut wrong_outcome = refused(3);
    wrong_outcome.outcome = "PASS".to_string();
    let mut empty_request = refused(3);
    empty_request.request_id = Some(String::new());
    for bad in [wrong_control, wrong_outcome, empty_request] {
        assert!(
            RecordBody::ActionRefused(bad.clone()).validate().is_err(),
            "{bad:?}"
        );
        assert!(writer.append(6, RecordBody::ActionRefused(bad)).is_err());
    }
}
