//! The append-only spool of terminal receipts: what a watchdog or a kill switch records
//! without the broker (`<state_dir>/spool/terminal.ndjson`).
//!
//! Each line is a signed [`Envelope`] over `{"schema_version", "session_id", "receipt"}`
//! (`receipt` a [`SessionKilled`]). [`append`] holds an exclusive lock on the file, appends
//! one line, fsyncs, reads the line back and verifies it before returning: only then is the
//! receipt durable. [`read`] verifies every line with the public key, so a spool can be checked
//! offline; the broker replays its receipts into each session's journal with their original
//! ids (`session_killed` records), which `evidence verify` then covers.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::EvidenceError;
use crate::record::SessionKilled;
use crate::sign::{Envelope, SigningKey, VerifyingKey};

/// `schema_version` of a spooled receipt.
pub const SPOOL_SCHEMA: &str = "deskbroker.spool.v1";

/// Largest spool read back (a receipt is well under 2 KiB).
const MAX_SPOOL_BYTES: u64 = 64 * 1024 * 1024;

/// One spooled receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spooled {
    /// [`SPOOL_SCHEMA`].
    pub schema_version: String,
    /// The killed session.
    pub session_id: String,
    /// The terminal receipt.
    pub receipt: SessionKilled,
}

fn io(operation: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> EvidenceError {
    let path = path.to_path_buf();
    move |source| EvidenceError::Io {
        operation,
        path,
        source,
    }
}

fn append_error(path: &Path, reason: impl Into<String>) -> EvidenceError {
    EvidenceError::Append {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Signs `receipt` for `session_id` and appends it to the spool at `path` (created 0600 in a
/// 0700 directory when missing, whose parent must exist): append, fsync, read back, verify.
pub fn append(
    path: &Path,
    key: &SigningKey,
    session_id: &str,
    receipt: &SessionKilled,
) -> Result<(), EvidenceError> {
    let spooled = Spooled {
        schema_version: SPOOL_SCHEMA.to_string(),
        session_id: session_id.to_string(),
        receipt: receipt.clone(),
    };
    let envelope = Envelope::sign(&spooled, key)?;
    let mut line = envelope.canonical_bytes()?;
    line.push(b'\n');
    // The spool's directory alone, never its parent (the broker's state directory): a receipt
    // written after the state directory was removed fails instead of recreating it.
    if let Some(parent) = path.parent() {
        match std::fs::DirBuilder::new().mode(0o700).create(parent) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(io("create", parent)(error)),
        }
    }
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(io("open", path))?;
    file.lock().map_err(io("lock", path))?;
    let start = file.seek(SeekFrom::End(0)).map_err(io("seek", path))?;
    file.write_all(&line).map_err(io("append to", path))?;
    file.sync_all().map_err(io("fsync", path))?;
    let mut back = vec![0u8; line.len()];
    read_at(&mut file, start, &mut back).map_err(io("read back", path))?;
    if back != line {
        return Err(append_error(path, "the spooled line read back differs"));
    }
    let parsed = Envelope::parse(back.strip_suffix(b"\n").unwrap_or(&back))?;
    parsed.verify(&key.verifying_key())?;
    Ok(())
}

fn read_at(file: &mut File, offset: u64, buffer: &mut [u8]) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buffer)
}

/// Reads and verifies every receipt of the spool at `path` (none when it does not exist). A
/// line that does not verify is an error naming it, never skipped.
pub fn read(path: &Path, key: &VerifyingKey) -> Result<Vec<Spooled>, EvidenceError> {
    Ok(read_signed(path, key)?
        .into_iter()
        .map(|(spooled, _)| spooled)
        .collect())
}

/// [`read`], each receipt with the envelope its line holds (what a journal's `session_killed`
/// record keeps as `signed_receipt`).
pub fn read_signed(
    path: &Path,
    key: &VerifyingKey,
) -> Result<Vec<(Spooled, Envelope)>, EvidenceError> {
    let bytes = match crate::files::read_limited(path, MAX_SPOOL_BYTES) {
        Ok(bytes) => bytes,
        Err(EvidenceError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new());
        }
        Err(error) => return Err(error),
    };
    let mut receipts = Vec::new();
    for (index, line) in bytes.split(|byte| *byte == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let bad = |error: EvidenceError| append_error(path, format!("line {}: {error}", index + 1));
        let envelope = Envelope::parse(line).map_err(bad)?;
        envelope.verify(key).map_err(bad)?;
        let spooled: Spooled = envelope.decode_payload().map_err(bad)?;
        if spooled.schema_version != SPOOL_SCHEMA {
            return Err(append_error(
                path,
                format!("line {}: schema {:?}", index + 1, spooled.schema_version),
            ));
        }
        receipts.push((spooled, envelope));
    }
    Ok(receipts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::KILL_CONTROL_ID;

    fn receipt(id: &str) -> SessionKilled {
        SessionKilled {
            record_id: id.to_string(),
            control_id: KILL_CONTROL_ID.to_string(),
            stage: "terminal".to_string(),
            outcome: "contained".to_string(),
            recorded_at_ms: 1,
            source: "watchdog".to_string(),
            reason: "task time limit reached".to_string(),
            signer_identity: None,
            limit: Some("max_task_minutes".to_string()),
            last_action_index: Some(3),
            state_destroyed: true,
            lease_revoked: true,
            storage_destroyed: true,
            process: None,
            action_in_doubt: None,
            signed_receipt: None,
        }
    }

    #[test]
    fn a_spool_whose_state_directory_is_gone_is_not_recreated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        let path = state.join("spool").join("terminal.ndjson");
        let key = SigningKey::generate().expect("key");
        assert!(append(&path, &key, "s_1", &receipt("kill-1")).is_err());
        assert!(!state.exists(), "the state directory was recreated");
    }

    #[test]
    fn appended_receipts_read_back_verified_and_tampering_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spool").join("terminal.ndjson");
        let key = SigningKey::generate().expect("key");
        assert!(read(&path, &key.verifying_key()).expect("empty").is_empty());
        append(&path, &key, "s_1", &receipt("kill-1")).expect("append");
        append(&path, &key, "s_2", &receipt("kill-2")).expect("append");
        let read_back = read(&path, &key.verifying_key()).expect("read");
        assert_eq!(read_back.len(), 2);
        assert_eq!(read_back[1].session_id, "s_2");
        assert_eq!(read_back[1].receipt, receipt("kill-2"));
        let other = SigningKey::generate().expect("key");
        assert!(read(&path, &other.verifying_key()).is_err());
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.replace("kill-2", "kill-3")).expect("write");
        assert!(read(&path, &key.verifying_key()).is_err());
    }
}
