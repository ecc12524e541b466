//! Signed, tamper-evident evidence for deskbroker sessions.
//!
//! - [`strict`]: strict JSON parsing (duplicate keys, NaN/Infinity, unsafe integers, exact
//!   typed records), errors naming the offending path.
//! - [`sign`]: RFC 8785 canonical bytes, Ed25519 keys, the `{payload, signature_b64}` envelope.
//! - [`record`] and [`journal`]: the hash-chained NDJSON journal and its durable
//!   write-then-read-back writer.
//! - [`durable`]: durable batches: several written files fsynced concurrently, so a step
//!   waits for about one disk flush instead of one per file.
//! - [`bundle`]: export of a session into a bundle with a signed manifest, and its verification
//!   with nothing but a public key.
//!
//! This crate does plain-file I/O only: no sockets, no async runtime.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod bundle;
pub mod durable;
mod error;
mod files;
pub mod journal;
pub mod record;
pub mod sign;
pub mod spool;
pub mod strict;

pub use bundle::{
    ExportInputs, GateDecisionSeen, Manifest, VerifyReport, export, verify, verify_observed,
    verify_pinned,
};
pub use error::{EvidenceError, FileProblem, ManifestProblem, RecordProblem, StrictJsonProblem};
pub use journal::{EvidenceWriter, VerifiedRecord, read_journal, verify_journal};
pub use record::{Record, RecordBody, RecordKind};
pub use sign::{Envelope, SigningKey, VerifyingKey, canonical_bytes, canonical_sha256, sha256_hex};
