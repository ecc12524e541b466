//! The observer's signed observations in a bundle (`docs/observer.md`): export copies each
//! stored `observations/<observation_id>.json` that an `observer_observation` record names, and
//! verify checks every such file against its record (SHA-256 and size) and, given the observer's
//! public key, its signature and that it is the observation the record names (id, session, key
//! id, outcome). Invariant of a bundle that verifies: every file under `observations/` has an
//! `observer_observation` record with its id whose digest it matches; a record whose file is not
//! in the bundle (release deleted the session directory) is still checked by a verifier who
//! holds the bytes, with [`ObserverObservation::is_about`].

use std::collections::BTreeMap;

use serde_json::Value;

use super::layout::named;
use crate::error::{EvidenceError, FileProblem, RecordProblem};
use crate::journal::VerifiedRecord;
use crate::record::{ObserverObservation, RecordBody};
use crate::sign::{Envelope, VerifyingKey, sha256_hex};

/// Directory of signed observations inside a bundle (and inside a session directory).
pub const OBSERVATIONS_DIR: &str = "observations";

/// The bundle path of an observation's signed bytes.
pub(super) fn path_of(observation_id: &str) -> String {
    format!("{OBSERVATIONS_DIR}/{observation_id}.json")
}

/// The journal's `observer_observation` records by bundle path (the last one per id).
pub(super) fn recorded(records: &[VerifiedRecord]) -> BTreeMap<String, &VerifiedRecord> {
    records
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::ObserverObservation(body) => Some((path_of(&body.observation_id), record)),
            _ => None,
        })
        .collect()
}

fn body(record: &VerifiedRecord) -> Option<&ObserverObservation> {
    match &record.record().body {
        RecordBody::ObserverObservation(body) => Some(body),
        _ => None,
    }
}

/// Checks the bundle file `path` (under [`OBSERVATIONS_DIR`]) against its record.
pub(super) fn check_file(
    recorded: &BTreeMap<String, &VerifiedRecord>,
    path: &str,
    bytes: &[u8],
) -> Result<(), EvidenceError> {
    let Some((record, body)) = recorded
        .get(path)
        .and_then(|record| Some((*record, body(record)?)))
    else {
        return Err(EvidenceError::File {
            name: path.to_string(),
            problem: FileProblem::NotRecorded(
                "no observer_observation record has its id".to_string(),
            ),
        });
    };
    if !body.is_about(bytes) {
        return Err(named(
            record,
            RecordProblem::DigestMismatch {
                file: path.to_string(),
                expected: format!("{} ({} bytes)", body.signed_sha256, body.signed_bytes),
                actual: format!("{} ({} bytes)", sha256_hex(bytes), bytes.len()),
            },
        ));
    }
    Ok(())
}

/// Checks each bundled observation's signature under the observer's `key` and that its signed
/// payload is the one its record names. Returns how many were checked.
pub(super) fn check_signatures<'a>(
    recorded: &BTreeMap<String, &VerifiedRecord>,
    files: impl Iterator<Item = (&'a String, &'a [u8])>,
    key: &VerifyingKey,
) -> Result<usize, EvidenceError> {
    let mut checked = 0;
    for (path, bytes) in files {
        let Some((record, body)) = recorded
            .get(path)
            .and_then(|record| Some((*record, body(record)?)))
        else {
            continue;
        };
        let refused = |why: String| {
            named(
                record,
                RecordProblem::Observation {
                    file: path.clone(),
                    why,
                },
            )
        };
        let envelope = Envelope::parse(bytes).map_err(|error| refused(error.to_string()))?;
        envelope
            .verify(key)
            .map_err(|_| refused("not signed by the observer's key".to_string()))?;
        let payload: Value = envelope
            .decode_payload()
            .map_err(|error| refused(error.to_string()))?;
        let text = |field: &str| payload.get(field).and_then(Value::as_str);
        let session_id = &record.record().session_id;
        if text("observation_id") != Some(body.observation_id.as_str())
            || text("session_id") != Some(session_id.as_str())
            || text("observer_key_id") != Some(body.observer_key_id.as_str())
            || text("outcome") != Some(body.outcome.as_str())
            || body.observer_key_id != key.fingerprint()
        {
            return Err(refused(
                "the signed observation is not the one its record names (id, session, key, \
                 outcome)"
                    .to_string(),
            ));
        }
        checked += 1;
    }
    Ok(checked)
}
