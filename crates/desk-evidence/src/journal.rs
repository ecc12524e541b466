//! The hash-chained evidence journal: one signed envelope per line (NDJSON), written by
//! [`EvidenceWriter`] and checked by [`verify_journal`].
//!
//! Invariants of a valid journal: every line is the JCS bytes of an [`Envelope`] followed by
//! `\n`; its signature verifies; `seq` counts 0, 1, 2, ... by line; `prev_sha256` is the SHA-256
//! of the previous line (without its newline), zeros for the first; every record names the same
//! session; the first record is `session_started` and names the signing key; actions are
//! accepted with indices 0, 1, 2, ...; a receipt closes an accepted, still open action; a
//! receipt with outcome [`NOT_INJECTED`] withdraws the last accepted action, whose index the
//! next acceptance reuses; `session_killed` comes only after every accepted action's receipt
//! (never half-logged); nothing follows `session_released` or `session_killed`.
//!
//! The writer appends, fsyncs, then reads the line back from disk and verifies it before
//! returning, so a caller may send the response that depends on the record afterwards. Any
//! failure poisons the writer: the file's tail is then unknown and later appends are refused.
//!
//! Tamper check before append: before each append the writer checks that the file still has
//! the length it left and that its bytes still hash to the SHA-256 of everything it wrote
//! (which covers the last record's hash and every earlier record). A mismatch is
//! [`EvidenceError::Tampered`] naming the first altered record, and poisons the writer, so a
//! live session stops at the first action after an on-disk edit. The cost is one read of the
//! journal per append (a few hundred bytes per record).
//!
//! Over 400 lines: the writer and the verifier run the same chain checks (`ChainState`); split,
//! they could drift apart.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use desk_contract::desktop::{LimitsMode, SandboxMode};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::durable::{self, Durable};
use crate::error::{EvidenceError, RecordProblem};
use crate::files;
use crate::record::{NOT_INJECTED, Record, RecordBody, ZERO_SHA256};
use crate::sign::{Envelope, SigningKey, VerifyingKey, sha256_hex};

/// Largest journal [`read_journal`] loads.
pub const MAX_JOURNAL_BYTES: u64 = 256 * 1024 * 1024;

/// A record whose signature and chain position were verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRecord {
    record: Record,
    // Invariant: the SHA-256 of this record's journal line without its newline.
    envelope_sha256: String,
    line: usize,
}

impl VerifiedRecord {
    /// The record.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// SHA-256 (hex) of its envelope's JCS bytes: the next record's `prev_sha256`.
    pub fn envelope_sha256(&self) -> &str {
        &self.envelope_sha256
    }

    /// Its 1-based line in the journal.
    pub fn line(&self) -> usize {
        self.line
    }
}

/// What the chain has seen so far; decides whether the next record may follow.
#[derive(Debug, Clone)]
pub(crate) struct ChainState {
    signer_fingerprint: String,
    session_id: Option<String>,
    next_seq: u64,
    prev_sha256: String,
    n_accepted: u64,
    open_actions: BTreeSet<u64>,
    released: bool,
}

impl ChainState {
    pub(crate) fn new(key: &VerifyingKey) -> Self {
        Self {
            signer_fingerprint: key.fingerprint(),
            session_id: None,
            next_seq: 0,
            prev_sha256: ZERO_SHA256.to_string(),
            n_accepted: 0,
            open_actions: BTreeSet::new(),
            released: false,
        }
    }

    /// Checks that `record` may come next, without changing the state.
    pub(crate) fn check(&self, record: &Record) -> Result<(), RecordProblem> {
        if record.seq != self.next_seq {
            return Err(RecordProblem::SeqOutOfOrder {
                expected: self.next_seq,
                found: record.seq,
            });
        }
        if record.prev_sha256 != self.prev_sha256 {
            return Err(RecordProblem::PrevHashMismatch {
                expected: self.prev_sha256.clone(),
                found: record.prev_sha256.clone(),
            });
        }
        if let Some(session_id) = &self.session_id
            && *session_id != record.session_id
        {
            return Err(RecordProblem::SessionMismatch {
                expected: session_id.clone(),
                found: record.session_id.clone(),
            });
        }
        record.body.validate().map_err(RecordProblem::Malformed)?;
        let out_of_place = |message: String| Err(RecordProblem::OutOfPlace(message));
        if self.released {
            return out_of_place("a record follows session_released or session_killed".to_string());
        }
        match &record.body {
            RecordBody::SessionStarted(started) => {
                if record.seq != 0 {
                    return out_of_place("session_started is not the first record".to_string());
                }
                if started.signer_fingerprint != self.signer_fingerprint {
                    return out_of_place(format!(
                        "session_started names signer {}, journal is signed by {}",
                        started.signer_fingerprint, self.signer_fingerprint
                    ));
                }
            }
            _ if record.seq == 0 => {
                return out_of_place("the first record is not session_started".to_string());
            }
            RecordBody::ActionAccepted(accepted) if accepted.index != self.n_accepted => {
                return out_of_place(format!(
                    "action index {} accepted, expected index {}",
                    accepted.index, self.n_accepted
                ));
            }
            RecordBody::ActionReceipt(receipt) if !self.open_actions.contains(&receipt.index) => {
                return out_of_place(format!(
                    "receipt for action {} which is not accepted and open",
                    receipt.index
                ));
            }
            RecordBody::ActionReceipt(receipt)
                if receipt.settle_outcome == NOT_INJECTED
                    && receipt.index.saturating_add(1) != self.n_accepted =>
            {
                return out_of_place(format!(
                    "action {} withdrawn ({NOT_INJECTED}) but the last accepted action is {}",
                    receipt.index,
                    self.n_accepted.saturating_sub(1)
                ));
            }
            RecordBody::SessionKilled(_) if !self.open_actions.is_empty() => {
                let index = self.open_actions.first().copied().unwrap_or_default();
                return out_of_place(format!(
                    "session_killed while action {index} has no receipt"
                ));
            }
            RecordBody::SessionReleased(released) if released.n_actions != self.n_accepted => {
                return out_of_place(format!(
                    "session_released counts {} actions, journal accepted {}",
                    released.n_actions, self.n_accepted
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Records that `record`, whose envelope digest is `envelope_sha256`, came next.
    pub(crate) fn advance(&mut self, record: &Record, envelope_sha256: &str) {
        self.session_id = Some(record.session_id.clone());
        self.next_seq = record.seq + 1;
        self.prev_sha256 = envelope_sha256.to_string();
        match &record.body {
            RecordBody::ActionAccepted(accepted) => {
                self.n_accepted += 1;
                self.open_actions.insert(accepted.index);
            }
            RecordBody::ActionReceipt(receipt) => {
                self.open_actions.remove(&receipt.index);
                if receipt.settle_outcome == NOT_INJECTED {
                    // The index is withdrawn: the broker hands it to the next action.
                    self.n_accepted -= 1;
                }
            }
            RecordBody::SessionReleased(_) | RecordBody::SessionKilled(_) => self.released = true,
            _ => {}
        }
    }
}

fn record_error(
    line: usize,
    seq: Option<u64>,
    kind: Option<String>,
    problem: RecordProblem,
) -> EvidenceError {
    EvidenceError::Record {
        line,
        seq,
        kind,
        problem,
    }
}

/// Best-effort `seq` and `kind` of a line that failed strict checks, to name it in errors.
fn peek_seq_kind(line_bytes: &[u8]) -> (Option<u64>, Option<String>) {
    let Ok(value) = serde_json::from_slice::<Value>(line_bytes) else {
        return (None, None);
    };
    let payload = value.get("payload");
    let seq = payload
        .and_then(|payload| payload.get("seq"))
        .and_then(Value::as_u64);
    let kind = payload
        .and_then(|payload| payload.get("kind"))
        .and_then(Value::as_str)
        .map(str::to_string);
    (seq, kind)
}

/// Parses and verifies one line (without its newline) against `key`.
fn verify_line(
    line_bytes: &[u8],
    line: usize,
    key: &VerifyingKey,
) -> Result<(Record, String), EvidenceError> {
    let malformed = |problem: RecordProblem| {
        let (seq, kind) = peek_seq_kind(line_bytes);
        record_error(line, seq, kind, problem)
    };
    let envelope = Envelope::parse(line_bytes)
        .map_err(|error| malformed(RecordProblem::Malformed(error.to_string())))?;
    let record = Record::from_payload(Value::Object(envelope.payload.clone()))
        .map_err(|error| malformed(RecordProblem::Malformed(error.to_string())))?;
    let name = |problem| {
        record_error(
            line,
            Some(record.seq),
            Some(record.kind().as_str().to_string()),
            problem,
        )
    };
    if envelope.verify(key).is_err() {
        return Err(name(RecordProblem::BadSignature));
    }
    let canonical = envelope.canonical_bytes()?;
    if canonical != line_bytes {
        return Err(name(RecordProblem::Malformed(
            "line is not the canonical (JCS) form of its envelope".to_string(),
        )));
    }
    Ok((record, sha256_hex(&canonical)))
}

/// Verifies a whole journal held in memory; the error names the first bad record.
pub fn verify_journal(
    bytes: &[u8],
    key: &VerifyingKey,
) -> Result<Vec<VerifiedRecord>, EvidenceError> {
    let mut chain = ChainState::new(key);
    verify_into(bytes, key, &mut chain)
}

fn verify_into(
    bytes: &[u8],
    key: &VerifyingKey,
    chain: &mut ChainState,
) -> Result<Vec<VerifiedRecord>, EvidenceError> {
    let mut records = Vec::new();
    if bytes.is_empty() {
        return Ok(records);
    }
    let mut lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
    let tail = lines.pop().unwrap_or_default();
    if !tail.is_empty() {
        let (seq, kind) = peek_seq_kind(tail);
        return Err(record_error(
            lines.len() + 1,
            seq,
            kind,
            RecordProblem::Truncated,
        ));
    }
    for (line_idx, line_bytes) in lines.into_iter().enumerate() {
        let line = line_idx + 1;
        let (record, envelope_sha256) = verify_line(line_bytes, line, key)?;
        chain.check(&record).map_err(|problem| {
            record_error(
                line,
                Some(record.seq),
                Some(record.kind().as_str().to_string()),
                problem,
            )
        })?;
        chain.advance(&record, &envelope_sha256);
        records.push(VerifiedRecord {
            record,
            envelope_sha256,
            line,
        });
    }
    Ok(records)
}

/// Reads and verifies the journal at `path`.
pub fn read_journal(path: &Path, key: &VerifyingKey) -> Result<Vec<VerifiedRecord>, EvidenceError> {
    verify_journal(&files::read_limited(path, MAX_JOURNAL_BYTES)?, key)
}

/// Appends signed records to one session's journal, durably and verified.
#[derive(Debug)]
pub struct EvidenceWriter {
    path: PathBuf,
    file: File,
    key: SigningKey,
    verifying_key: VerifyingKey,
    session_id: String,
    sandbox: SandboxMode,
    limits: LimitsMode,
    // Invariant: describes exactly the records on disk while `poisoned` is `None`.
    chain: ChainState,
    // Invariant: end of the last verified line.
    end_offset: u64,
    // Invariant: the SHA-256 state over the file's first `end_offset` bytes as written.
    content_sha256: Sha256,
    poisoned: Option<String>,
}

impl EvidenceWriter {
    /// Creates a new, empty journal at `path` (which must not exist) for `session_id`. The first
    /// append must be `session_started`.
    pub fn create(path: &Path, key: SigningKey, session_id: &str) -> Result<Self, EvidenceError> {
        if session_id.is_empty()
            || session_id.len() > 256
            || session_id.chars().any(char::is_control)
        {
            return Err(EvidenceError::Append {
                path: path.to_path_buf(),
                reason: "session id must be 1 to 256 bytes without control characters".to_string(),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|error| EvidenceError::io("create", path, error))?;
        file.sync_all()
            .map_err(|error| EvidenceError::io("fsync", path, error))?;
        files::sync_parent(path)?;
        let verifying_key = key.verifying_key();
        Ok(Self {
            path: path.to_path_buf(),
            file,
            chain: ChainState::new(&verifying_key),
            key,
            verifying_key,
            session_id: session_id.to_string(),
            sandbox: SandboxMode::On,
            limits: LimitsMode::Enforced,
            end_offset: 0,
            content_sha256: Sha256::new(),
            poisoned: None,
        })
    }

    /// Reopens an existing journal (e.g. after a broker restart): verifies every record and
    /// continues the chain after the last one. A torn last line is an error, never repaired.
    pub fn open(
        path: &Path,
        key: SigningKey,
    ) -> Result<(Self, Vec<VerifiedRecord>), EvidenceError> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|error| EvidenceError::io("open", path, error))?;
        let bytes = files::read_limited(path, MAX_JOURNAL_BYTES)?;
        let verifying_key = key.verifying_key();
        let mut chain = ChainState::new(&verifying_key);
        let records = verify_into(&bytes, &verifying_key, &mut chain)?;
        let Some(first) = records.first() else {
            return Err(EvidenceError::Append {
                path: path.to_path_buf(),
                reason: "journal is empty; create a new one instead".to_string(),
            });
        };
        let session_id = first.record().session_id.clone();
        let end_offset = file
            .seek(SeekFrom::End(0))
            .map_err(|error| EvidenceError::io("seek", path, error))?;
        if end_offset != bytes.len() as u64 {
            return Err(EvidenceError::Append {
                path: path.to_path_buf(),
                reason: "journal changed while it was being verified".to_string(),
            });
        }
        Ok((
            Self {
                path: path.to_path_buf(),
                file,
                key,
                verifying_key,
                session_id,
                // A session's sandbox never changes: its journal keeps stamping what it began with.
                sandbox: records
                    .first()
                    .map_or(SandboxMode::On, |first| first.record().sandbox),
                // Nor its limits.
                limits: records
                    .first()
                    .map_or(LimitsMode::Enforced, |first| first.record().limits),
                chain,
                end_offset,
                content_sha256: Sha256::new_with_prefix(&bytes),
                poisoned: None,
            },
            records,
        ))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session the journal belongs to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Stamps every record appended from now on with `sandbox` (`off` for a session whose
    /// desktop runs unsandboxed).
    pub fn set_sandbox(&mut self, sandbox: SandboxMode) {
        self.sandbox = sandbox;
    }

    /// Stamps every record appended from now on with `limits` (`off` for a session of a
    /// broker started with `--unsafe-no-limits`).
    pub fn set_limits(&mut self, limits: LimitsMode) {
        self.limits = limits;
    }

    /// The `seq` the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.chain.next_seq
    }

    /// Signs `body` as the next record, appends it, fsyncs, reads it back and verifies it.
    /// Only when this returns `Ok` is the record durable; send dependent responses after it.
    pub fn append(
        &mut self,
        at_ms: u64,
        body: RecordBody,
    ) -> Result<VerifiedRecord, EvidenceError> {
        self.append_alongside(at_ms, body, &[]).0
    }

    /// [`EvidenceWriter::append`], flushing the journal in one durable batch
    /// ([`crate::durable::sync_each`]) with `alongside`: files the caller already wrote and
    /// that must be durable before the same answer (the input logs a receipt digests, the
    /// frame a `screenshot` record names). The step then waits for about one disk flush instead
    /// of one per file. Returns the record's result and one result per `alongside` file, in
    /// order; every `alongside` file is flushed even when the record is refused or fails, and
    /// only the journal's own failure poisons the writer.
    pub fn append_alongside(
        &mut self,
        at_ms: u64,
        body: RecordBody,
        alongside: &[Durable<'_>],
    ) -> (
        Result<VerifiedRecord, EvidenceError>,
        Vec<Result<(), EvidenceError>>,
    ) {
        let line = match self.signed_line(at_ms, body) {
            Ok(line) => line,
            Err(error) => return (Err(error), durable::sync_each(alongside)),
        };
        let (record, line) = line;
        let (result, others) = self.write_and_read_back(&record, &line, alongside);
        match result {
            Ok(verified) => (Ok(verified), others),
            Err(error) => {
                self.poisoned = Some(error.to_string());
                (Err(error), others)
            }
        }
    }

    /// The next record for `body`, checked against the chain, and its signed line. A refused
    /// record never touches the file, so it does not poison the writer.
    fn signed_line(
        &self,
        at_ms: u64,
        body: RecordBody,
    ) -> Result<(Record, Vec<u8>), EvidenceError> {
        if let Some(reason) = &self.poisoned {
            return Err(EvidenceError::Append {
                path: self.path.clone(),
                reason: format!("writer poisoned by an earlier failure: {reason}"),
            });
        }
        let record = Record {
            seq: self.chain.next_seq,
            prev_sha256: self.chain.prev_sha256.clone(),
            session_id: self.session_id.clone(),
            at_ms,
            sandbox: self.sandbox,
            limits: self.limits,
            body,
        };
        self.chain
            .check(&record)
            .map_err(|problem| EvidenceError::Append {
                path: self.path.clone(),
                reason: format!("{} refused: {problem}", record.kind().as_str()),
            })?;
        let envelope = Envelope::sign(&record.to_payload()?, &self.key)?;
        let mut line = envelope.canonical_bytes()?;
        line.push(b'\n');
        Ok((record, line))
    }

    /// Writes `line`, flushes it with `alongside`, reads it back and verifies it; the second
    /// value holds `alongside`'s results (all flushed, whatever happens to the line).
    fn write_and_read_back(
        &mut self,
        record: &Record,
        line: &[u8],
        alongside: &[Durable<'_>],
    ) -> (
        Result<VerifiedRecord, EvidenceError>,
        Vec<Result<(), EvidenceError>>,
    ) {
        if let Err(error) = self.write_line(line) {
            return (Err(error), durable::sync_each(alongside));
        }
        let mut batch = Vec::with_capacity(alongside.len() + 1);
        batch.push(Durable::data(&self.file, &self.path));
        batch.extend_from_slice(alongside);
        let mut results = durable::sync_each(&batch);
        let others = results.split_off(1);
        let synced = results.pop().unwrap_or(Ok(()));
        (synced.and_then(|()| self.read_back(record, line)), others)
    }

    /// Checks the file is as this writer left it, then appends `line` (not yet flushed).
    fn write_line(&mut self, line: &[u8]) -> Result<(), EvidenceError> {
        let path = &self.path;
        let offset = self.end_offset;
        let actual_end = self
            .file
            .seek(SeekFrom::End(0))
            .map_err(|error| EvidenceError::io("seek", path, error))?;
        if actual_end != offset {
            return Err(EvidenceError::Tampered {
                path: path.clone(),
                reason: format!("journal is {actual_end} bytes, writer expected {offset}"),
            });
        }
        self.check_content(offset)?;
        self.file
            .write_all(line)
            .map_err(|error| EvidenceError::io("write", path, error))
    }

    /// Reads the flushed `line` back from disk at the writer's end, verifies it against
    /// `record`, and advances the chain past it.
    fn read_back(&mut self, record: &Record, line: &[u8]) -> Result<VerifiedRecord, EvidenceError> {
        let path = &self.path;
        let offset = self.end_offset;
        let mut read_back = vec![0_u8; line.len()];
        self.file
            .read_exact_at(&mut read_back, offset)
            .map_err(|error| EvidenceError::io("read back", path, error))?;
        let read_back_error = |reason: String| EvidenceError::ReadBack {
            path: path.clone(),
            seq: record.seq,
            reason,
        };
        if read_back != line {
            return Err(read_back_error(
                "bytes on disk differ from the bytes written".to_string(),
            ));
        }
        let line_bytes = read_back.strip_suffix(b"\n").unwrap_or(&read_back);
        let line_number = usize::try_from(record.seq)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        let (read_record, envelope_sha256) =
            verify_line(line_bytes, line_number, &self.verifying_key)
                .map_err(|error| read_back_error(error.to_string()))?;
        if read_record != *record {
            return Err(read_back_error(
                "record read back differs from the record signed".to_string(),
            ));
        }
        self.chain.advance(record, &envelope_sha256);
        self.content_sha256.update(line);
        self.end_offset = offset + line.len() as u64;
        Ok(VerifiedRecord {
            record: read_record,
            envelope_sha256,
            line: line_number,
        })
    }
}

impl EvidenceWriter {
    /// Checks that the first `length` bytes of the file are exactly the bytes this writer
    /// wrote (or verified on open).
    fn check_content(&self, length: u64) -> Result<(), EvidenceError> {
        let path = &self.path;
        let size = usize::try_from(length).map_err(|_| EvidenceError::Tampered {
            path: path.clone(),
            reason: format!("journal of {length} bytes cannot be read back"),
        })?;
        let mut on_disk = vec![0_u8; size];
        self.file
            .read_exact_at(&mut on_disk, 0)
            .map_err(|error| EvidenceError::io("read back", path, error))?;
        if Sha256::digest(&on_disk) == self.content_sha256.clone().finalize() {
            return Ok(());
        }
        let reason = match verify_journal(&on_disk, &self.verifying_key) {
            Err(error) => error.to_string(),
            Ok(_) => "its bytes differ from the records this writer wrote".to_string(),
        };
        Err(EvidenceError::Tampered {
            path: path.clone(),
            reason,
        })
    }
}

#[cfg(test)]
mod tests;
