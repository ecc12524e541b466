//! Signing and verification: an Ed25519 envelope (desk-evidence's `{payload, signature_b64}`,
//! the signature over the RFC 8785 bytes of the payload) whose payload is the policy document,
//! and the policy's digest: lowercase hex SHA-256 of those same canonical bytes.
//!
//! Invariants: a [`VerifiedPolicy`] exists only for an envelope whose signature verified with
//! the given key and whose payload passed every lint rule; its digest is computed from the
//! payload as signed. The validity window is checked against a clock the caller passes in,
//! never read here. The policy key must differ from the evidence key ([`check_distinct`]).

use desk_evidence::{Envelope, SigningKey, VerifyingKey};
use serde_json::Value;

use crate::document::Policy;
use crate::error::PolicyError;

/// Largest signed policy file accepted, in bytes.
pub const MAX_SIGNED_BYTES: usize = 256 * 1024;

/// Signs a linted policy: the envelope's payload is the policy document.
pub fn sign(policy: &Policy, key: &SigningKey) -> Result<Envelope, PolicyError> {
    Envelope::sign(&policy.to_value()?, key).map_err(|error| PolicyError::Encode(error.to_string()))
}

/// Lowercase hex SHA-256 of the policy's RFC 8785 bytes: the digest leases, status, evidence
/// and benchmark results carry.
pub fn digest(policy: &Policy) -> Result<String, PolicyError> {
    let bytes = desk_evidence::canonical_bytes(&policy.to_value()?)
        .map_err(|error| PolicyError::Encode(error.to_string()))?;
    Ok(desk_evidence::sha256_hex(&bytes))
}

/// A signed policy whose signature and lint passed (the validity window is checked apart, per
/// use, by [`VerifiedPolicy::check_validity`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPolicy {
    policy: Policy,
    // Invariant: the digest of `policy` as signed.
    sha256: String,
    signer_fingerprint: String,
}

impl VerifiedPolicy {
    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// [`digest`] of the policy.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Fingerprint of the key that signed it (`sha256:<hex>`).
    pub fn signer_fingerprint(&self) -> &str {
        &self.signer_fingerprint
    }

    /// Whether `now_unix` (seconds since the epoch) is inside the validity window.
    pub fn check_validity(&self, now_unix: i64) -> Result<(), PolicyError> {
        self.policy.check_validity(now_unix)
    }
}

/// Verifies a signed policy's signature with `key` and lints its payload; the validity window
/// is not checked (see [`verify`]).
pub fn verify_signature(bytes: &[u8], key: &VerifyingKey) -> Result<VerifiedPolicy, PolicyError> {
    if bytes.len() > MAX_SIGNED_BYTES {
        return Err(PolicyError::Unsigned(format!(
            "{} bytes, the limit is {MAX_SIGNED_BYTES}",
            bytes.len()
        )));
    }
    let envelope = Envelope::parse(bytes).map_err(|error| {
        PolicyError::Unsigned(format!(
            "expected a JSON envelope {{payload, signature_b64}} (deskbroker policy sign writes one): {error}"
        ))
    })?;
    envelope
        .verify(key)
        .map_err(|error| PolicyError::Signature(error.to_string()))?;
    let policy = Policy::from_value(Value::Object(envelope.payload))?;
    Ok(VerifiedPolicy {
        sha256: digest(&policy)?,
        policy,
        signer_fingerprint: key.fingerprint(),
    })
}

/// [`verify_signature`], then the validity window at `now_unix` (seconds since the epoch).
pub fn verify(
    bytes: &[u8],
    key: &VerifyingKey,
    now_unix: i64,
) -> Result<VerifiedPolicy, PolicyError> {
    let verified = verify_signature(bytes, key)?;
    verified.check_validity(now_unix)?;
    Ok(verified)
}

/// Refuses a policy key that is the evidence key: a broker's evidence key signs what happened,
/// never what is allowed.
pub fn check_distinct(
    policy_key: &VerifyingKey,
    evidence_key: &VerifyingKey,
) -> Result<(), PolicyError> {
    if policy_key == evidence_key {
        return Err(PolicyError::EvidenceKey {
            fingerprint: policy_key.fingerprint(),
        });
    }
    Ok(())
}
