//! What export, verify and their parts share: the bundle's file and directory names, a
//! manifest entry, the journal's record of each artifact, and the error naming one record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{EvidenceError, RecordProblem};
use crate::journal::VerifiedRecord;
use crate::record::RecordBody;

/// The signed manifest.
pub const MANIFEST_FILE: &str = "manifest.json";
/// Directory of artifacts inside a bundle.
pub const ARTIFACT_DIR: &str = "artifact";
/// Directory of frames inside a bundle.
pub const FRAMES_DIR: &str = "frames";

/// One file listed by the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Path relative to the bundle root, `/`-separated.
    pub path: String,
    /// SHA-256 (hex) of its bytes.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The last `artifact` or `checkpoint` record naming each artifact.
pub(super) fn recorded_artifacts(
    records: &[VerifiedRecord],
) -> BTreeMap<String, (&VerifiedRecord, String, u64)> {
    let mut recorded = BTreeMap::new();
    for record in records {
        match &record.record().body {
            RecordBody::Artifact(artifact) => {
                recorded.insert(
                    artifact.name.clone(),
                    (record, artifact.sha256.clone(), artifact.size),
                );
            }
            RecordBody::Checkpoint(checkpoint) => {
                recorded.insert(
                    checkpoint.file_name.clone(),
                    (record, checkpoint.sha256.clone(), checkpoint.size),
                );
            }
            _ => {}
        }
    }
    recorded
}

/// The error for a problem with one journal record, naming its line, sequence and kind.
pub(super) fn named(record: &VerifiedRecord, problem: RecordProblem) -> EvidenceError {
    EvidenceError::Record {
        line: record.line(),
        seq: Some(record.record().seq),
        kind: Some(record.record().kind().as_str().to_string()),
        problem,
    }
}
