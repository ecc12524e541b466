//! The crate's one error type, [`PolicyError`].

use std::path::PathBuf;

use crate::rules::Violation;

/// Why a policy was refused, or could not be read, signed or verified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The document broke these lint rules (every one, not only the first).
    #[error("the policy fails lint: {}", summary(.0))]
    Lint(Vec<Violation>),
    /// The bytes are not a signed policy envelope `{payload, signature_b64}`.
    #[error("the policy is not signed: {0}")]
    Unsigned(String),
    /// The signature does not verify: the policy was altered, or signed with another key.
    #[error("the policy signature does not verify: {0}")]
    Signature(String),
    /// The current time is before `not_before`.
    #[error("the policy is not valid before {not_before}")]
    NotYetValid {
        /// The window's start.
        not_before: String,
    },
    /// The current time is after `not_after`.
    #[error("the policy expired at {not_after}")]
    Expired {
        /// The window's end.
        not_after: String,
    },
    /// The policy key is the evidence key; the two must differ.
    #[error("the policy key is the evidence signing key ({fingerprint}); use a key of its own")]
    EvidenceKey {
        /// The shared key's fingerprint.
        fingerprint: String,
    },
    /// A key could not be read, written or generated.
    #[error("policy key: {0}")]
    Key(#[source] desk_evidence::EvidenceError),
    /// A policy file could not be read or written.
    #[error("failed to {operation} {}: {source}", .path.display())]
    Io {
        /// What was attempted.
        operation: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The policy could not be encoded as canonical JSON.
    #[error("failed to encode the policy: {0}")]
    Encode(String),
}

fn summary(violations: &[Violation]) -> String {
    let ids: Vec<String> = violations
        .iter()
        .map(|violation| format!("{} at {}", violation.rule, violation.path))
        .collect();
    ids.join("; ")
}
