//! The crate's one error type, [`EvidenceError`], and the small enums that say which check
//! failed.
//!
//! Every variant names the place it refers to: a JSON path, a file inside a bundle, or a
//! journal record (by line, and by `seq` and `kind` when they could be read).

use std::fmt;
use std::path::PathBuf;

/// Why a piece of JSON was rejected: the workspace's one strict parser's reasons.
pub use desk_contract::StrictJsonProblem;

/// What is wrong with one journal record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordProblem {
    /// The line is not a strict, well-formed envelope holding a record payload.
    Malformed(String),
    /// The Ed25519 signature does not verify over the payload's canonical bytes.
    BadSignature,
    /// `seq` is not the next number in the chain.
    SeqOutOfOrder {
        /// The `seq` this position in the journal must hold.
        expected: u64,
        /// The `seq` the record holds.
        found: u64,
    },
    /// `prev_sha256` is not the digest of the previous envelope.
    PrevHashMismatch {
        /// Digest of the previous envelope's canonical bytes.
        expected: String,
        /// The digest the record carries.
        found: String,
    },
    /// The record belongs to another session.
    SessionMismatch {
        /// The journal's session (from its first record).
        expected: String,
        /// The record's session.
        found: String,
    },
    /// The record contradicts the journal's order (e.g. a receipt for an action never accepted).
    OutOfPlace(String),
    /// A digest the record carries does not match the bundle file it describes.
    DigestMismatch {
        /// The bundle file (relative path).
        file: String,
        /// What the record says.
        expected: String,
        /// What the file holds.
        actual: String,
    },
    /// The last line has no terminating newline (a torn write).
    Truncated,
    /// A terminal receipt (`session_killed`) whose killer's signature is missing, does not
    /// verify under the key its source needs, or signs another receipt.
    TerminalReceipt(String),
    /// A bundled signed observation (`observations/<id>.json`) that does not verify under the
    /// observer's key or is not the observation its `observer_observation` record names.
    Observation {
        /// The bundle path.
        file: String,
        /// Why.
        why: String,
    },
}

impl fmt::Display for RecordProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(message) => write!(formatter, "malformed record: {message}"),
            Self::BadSignature => write!(formatter, "signature does not verify"),
            Self::SeqOutOfOrder { expected, found } => {
                write!(formatter, "expected seq {expected}, found seq {found}")
            }
            Self::PrevHashMismatch { expected, found } => write!(
                formatter,
                "prev_sha256 {found} does not match previous envelope {expected}"
            ),
            Self::SessionMismatch { expected, found } => {
                write!(
                    formatter,
                    "session {found:?} differs from journal session {expected:?}"
                )
            }
            Self::OutOfPlace(message) => write!(formatter, "record out of place: {message}"),
            Self::DigestMismatch {
                file,
                expected,
                actual,
            } => write!(
                formatter,
                "{file} does not match the record: recorded {expected}, found {actual}"
            ),
            Self::Truncated => write!(formatter, "last line is not newline-terminated"),
            Self::TerminalReceipt(message) => write!(formatter, "terminal receipt: {message}"),
            Self::Observation { file, why } => write!(formatter, "observation {file}: {why}"),
        }
    }
}

/// What is wrong with one file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileProblem {
    /// The manifest lists it but it is not in the bundle.
    Missing,
    /// It is in the bundle but the manifest does not list it.
    Unlisted,
    /// Its size differs from the manifest.
    SizeMismatch {
        /// Size in the manifest.
        expected: u64,
        /// Size on disk.
        actual: u64,
    },
    /// Its SHA-256 differs from the manifest.
    Sha256Mismatch {
        /// Digest in the manifest.
        expected: String,
        /// Digest of the bytes on disk.
        actual: String,
    },
    /// The manifest names it with a path that is not a plain relative path inside the bundle.
    BadPath,
    /// It is not a regular file (a symlink, a directory, ...).
    NotRegular,
    /// The journal describes it but the file does not match (digest, size or content).
    NotRecorded(String),
}

impl fmt::Display for FileProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => write!(formatter, "listed in the manifest but missing"),
            Self::Unlisted => write!(formatter, "present but not listed in the manifest"),
            Self::SizeMismatch { expected, actual } => {
                write!(
                    formatter,
                    "size {actual} differs from manifest size {expected}"
                )
            }
            Self::Sha256Mismatch { expected, actual } => {
                write!(
                    formatter,
                    "sha256 {actual} differs from manifest sha256 {expected}"
                )
            }
            Self::BadPath => write!(formatter, "not a plain relative path"),
            Self::NotRegular => write!(formatter, "not a regular file"),
            Self::NotRecorded(message) => write!(formatter, "not backed by the journal: {message}"),
        }
    }
}

/// What is wrong with a bundle's `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManifestProblem {
    /// `manifest.json` is absent.
    Missing,
    /// It is not a strict envelope holding a manifest payload.
    Malformed(String),
    /// It was signed by a key other than the one verify was given.
    KeyMismatch {
        /// Fingerprint of the key verify was given.
        expected: String,
        /// Fingerprint the manifest names.
        found: String,
    },
    /// Its signature does not verify.
    BadSignature,
    /// The watchdog key it names is malformed, or is not the one verify was told to expect.
    WatchdogKey(String),
    /// Its summary of the journal (record count, last digest, session) does not match.
    JournalMismatch(String),
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => write!(formatter, "manifest.json is missing"),
            Self::Malformed(message) => write!(formatter, "malformed manifest: {message}"),
            Self::KeyMismatch { expected, found } => write!(
                formatter,
                "manifest signed by key {found}, expected key {expected}"
            ),
            Self::BadSignature => write!(formatter, "manifest signature does not verify"),
            Self::WatchdogKey(message) => write!(formatter, "manifest watchdog key: {message}"),
            Self::JournalMismatch(message) => {
                write!(formatter, "manifest does not match the journal: {message}")
            }
        }
    }
}

/// Every failure of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    /// Reading or writing a file failed.
    #[error("failed to {operation} {path}: {source}")]
    Io {
        /// What was being done ("read", "write", "fsync", ...).
        operation: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// JSON was rejected by the strict parser or a typed record.
    #[error("failed to parse strict JSON at {path}: {problem}")]
    StrictJson {
        /// Path of the offending value, `$` for the root (`$.payload.body.index`).
        path: String,
        /// What is wrong there.
        problem: StrictJsonProblem,
    },
    /// A value could not be turned into canonical (RFC 8785) bytes.
    #[error("failed to canonicalize JSON: {0}")]
    Canonical(String),
    /// A key file could not be read, decoded or generated.
    #[error("failed to {operation} key {path}: {reason}")]
    Key {
        /// What was being done ("read", "decode", "generate", "write").
        operation: &'static str,
        /// The key file (empty for in-memory keys).
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A standalone envelope's signature did not verify.
    #[error("failed to verify envelope signature: {0}")]
    Signature(String),
    /// A journal record is bad; names it by line and, when readable, by `seq` and `kind`.
    #[error("failed to verify journal record at line {line} (seq {seq}, kind {kind}): {problem}", seq = display_option(.seq), kind = .kind.as_deref().unwrap_or("?"))]
    Record {
        /// 1-based line in `evidence.ndjson`.
        line: usize,
        /// The record's `seq`, when it could be read.
        seq: Option<u64>,
        /// The record's `kind`, when it could be read.
        kind: Option<String>,
        /// What is wrong.
        problem: RecordProblem,
    },
    /// A file of a bundle is bad.
    #[error("failed to verify bundle file {name}: {problem}")]
    File {
        /// Path relative to the bundle root.
        name: String,
        /// What is wrong.
        problem: FileProblem,
    },
    /// The bundle's manifest is bad.
    #[error("failed to verify bundle manifest: {0}")]
    Manifest(ManifestProblem),
    /// A just-written journal line did not read back identical and valid.
    #[error("failed to read back journal record {seq} from {path}: {reason}")]
    ReadBack {
        /// The journal file.
        path: PathBuf,
        /// The record's `seq`.
        seq: u64,
        /// What differed.
        reason: String,
    },
    /// The writer refused an append (poisoned by an earlier failure, or an invalid record).
    #[error("failed to append to journal {path}: {reason}")]
    Append {
        /// The journal file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The journal on disk is no longer what this writer wrote (length or content changed
    /// under it); the append is refused and the writer stays refused.
    #[error("refused to append to journal {path}: it was altered on disk ({reason})")]
    Tampered {
        /// The journal file.
        path: PathBuf,
        /// What differs, naming the first altered record when it can be found.
        reason: String,
    },
    /// Export refused its inputs.
    #[error("failed to export bundle to {path}: {reason}")]
    Export {
        /// The output directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

fn display_option(value: &Option<u64>) -> String {
    value.map_or_else(|| "?".to_string(), |number| number.to_string())
}

impl EvidenceError {
    pub(crate) fn io(
        operation: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            operation,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn strict(path: impl Into<String>, problem: StrictJsonProblem) -> Self {
        Self::StrictJson {
            path: path.into(),
            problem,
        }
    }
}
