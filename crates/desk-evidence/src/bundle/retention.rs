//! Attempt data that release deleted: a released session's logs and artifacts are gone from
//! the state directory (the broker contract's release "deletes attempt data"), and its bundle
//! lists them in the manifest's `not_retained` with the digest the journal signed for them.
//!
//! Invariant: a file may be listed as not retained only when the journal ends with
//! `session_released` and the journal itself holds the listed digest (a log's whole digest in
//! `session_released`, an artifact's in its last `checkpoint`/`artifact` record), and only
//! when the bundle does not also carry the file. Frames were optional before and stay so; a
//! released session's manifest is stamped with the frame retention its journal's
//! `session_released` records (the workspace policy's `retention.frames`: `delete_at_release`
//! or `keep`), and a bundle stamped `delete_at_release` carries no frame.

use std::collections::BTreeMap;

use desk_contract::events::{EVENTS_FILE, FRAME_EVENTS_FILE};

use super::layout::{ARTIFACT_DIR, FRAMES_DIR, MANIFEST_FILE, ManifestFile, recorded_artifacts};
use crate::error::{EvidenceError, FileProblem};
use crate::journal::VerifiedRecord;
use crate::record::{LogDigest, RecordBody};

/// The whole digests of both logs in the journal's closing `session_released`, if it has one.
pub(super) fn released_logs(records: &[VerifiedRecord]) -> Option<[(&'static str, LogDigest); 2]> {
    match &records.last()?.record().body {
        RecordBody::SessionReleased(released) => Some([
            (EVENTS_FILE, released.events.clone()),
            (FRAME_EVENTS_FILE, released.frame_events.clone()),
        ]),
        _ => None,
    }
}

/// The frame retention the journal's closing `session_released` records, if it has one and
/// names one: what the manifest is stamped with.
pub(super) fn frame_retention(records: &[VerifiedRecord]) -> Option<String> {
    match &records.last()?.record().body {
        RecordBody::SessionReleased(released) => released.frame_retention.clone(),
        _ => None,
    }
}

/// Checks the manifest's stamp against the journal: it must be exactly the journal's, and a
/// bundle whose journal says frames were deleted at release carries none (`has_frames`).
pub(super) fn check_stamp(
    records: &[VerifiedRecord],
    stamp: Option<&str>,
    has_frames: bool,
) -> Result<(), EvidenceError> {
    let recorded = frame_retention(records);
    if recorded.as_deref() != stamp {
        return Err(EvidenceError::File {
            name: MANIFEST_FILE.to_owned(),
            problem: FileProblem::NotRecorded(format!(
                "stamped with frame retention {stamp:?}, the journal records {recorded:?}"
            )),
        });
    }
    if recorded.as_deref() == Some("delete_at_release") && has_frames {
        return Err(EvidenceError::File {
            name: FRAMES_DIR.to_owned(),
            problem: FileProblem::NotRecorded(
                "frames in a bundle whose journal says they were deleted at release".to_owned(),
            ),
        });
    }
    Ok(())
}

/// The manifest entry of a file the journal describes with `digest` but that is gone.
pub(super) fn entry(path: &str, sha256: &str, size: u64) -> ManifestFile {
    ManifestFile {
        path: path.to_owned(),
        sha256: sha256.to_owned(),
        size,
    }
}

fn refused(path: &str, why: &str) -> EvidenceError {
    EvidenceError::File {
        name: path.to_owned(),
        problem: FileProblem::NotRecorded(format!("listed as not retained, but {why}")),
    }
}

/// Checks every not-retained entry against the journal (see the module's invariant); `present`
/// tells whether the bundle carries a path.
pub(super) fn check(
    records: &[VerifiedRecord],
    not_retained: &BTreeMap<String, ManifestFile>,
    present: impl Fn(&str) -> bool,
) -> Result<(), EvidenceError> {
    if not_retained.is_empty() {
        return Ok(());
    }
    let logs = released_logs(records);
    let artifacts = recorded_artifacts(records);
    for (path, listed) in not_retained {
        let Some(logs) = &logs else {
            return Err(refused(
                path,
                "the journal does not end with session_released",
            ));
        };
        if present(path) {
            return Err(refused(path, "the bundle carries it"));
        }
        let recorded = logs
            .iter()
            .find(|(name, _)| name == path)
            .map(|(_, digest)| (digest.sha256.as_str(), digest.len))
            .or_else(|| {
                path.strip_prefix(&format!("{ARTIFACT_DIR}/"))
                    .and_then(|name| artifacts.get(name))
                    .map(|(_, sha256, size)| (sha256.as_str(), *size))
            });
        match recorded {
            Some((sha256, size)) if sha256 == listed.sha256 && size == listed.size => {}
            Some(_) => return Err(refused(path, "its digest differs from the journal's")),
            None => return Err(refused(path, "the journal records no such log or artifact")),
        }
    }
    Ok(())
}
