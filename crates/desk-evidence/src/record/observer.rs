//! The body of `observer_observation` (`docs/observer.md`): one per observation the broker
//! accepted from the observer (containment G001), and per signed `insufficient_data` answer,
//! written before the observation is used or answered. It binds the stored signed bytes
//! (`<session>/observations/<observation_id>.json`, in a bundle `observations/<id>.json`) by
//! their SHA-256 and size, and repeats what a verifier compares without the observer's key: who
//! signed (the key id), the outcome, the frame seen, how many elements, and the times.

use serde::{Deserialize, Serialize};

use super::fields::{check_digest, check_text};

/// `outcome` values of `observer_observation` (the observation's own `outcome`).
pub const OBSERVATION_OUTCOMES: [&str; 2] = ["observed", "insufficient_data"];

/// Body of `observer_observation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserverObservation {
    /// The observation's id: `obs_` and 32 lowercase hex digits.
    pub observation_id: String,
    /// SHA-256 (hex) of the stored signed envelope's bytes.
    pub signed_sha256: String,
    /// Their size in bytes.
    pub signed_bytes: u64,
    /// The observer key's fingerprint, as the observation names it (`sha256:<hex>`).
    pub observer_key_id: String,
    /// One of [`OBSERVATION_OUTCOMES`].
    pub outcome: String,
    /// SHA-256 (hex) of the frame the observer hashed, when it saw one.
    pub frame_sha256: Option<String>,
    /// Accessible elements in the observation (0 for `insufficient_data`).
    pub element_count: u64,
    /// Whether the observer's walk stopped at a limit.
    pub truncated: bool,
    /// The observation's wall time, milliseconds since the Unix epoch.
    pub observed_at_ms: u64,
    /// The observer host's `CLOCK_MONOTONIC` at the observation, milliseconds.
    pub monotonic_ms: u64,
    /// How long the observer took to read the tree, milliseconds.
    pub tree_ms: u64,
}

/// Whether `id` is `obs_` and 32 lowercase hex digits (a single file name, so
/// `observations/<id>.json` stays in its directory).
fn is_observation_id(id: &str) -> bool {
    id.strip_prefix("obs_").is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    })
}

impl ObserverObservation {
    /// Whether `signed` are the stored bytes this record binds (SHA-256 and size).
    pub fn is_about(&self, signed: &[u8]) -> bool {
        self.signed_bytes == signed.len() as u64
            && self.signed_sha256 == crate::sign::sha256_hex(signed)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !is_observation_id(&self.observation_id) {
            return Err("observation_id must be obs_ and 32 lowercase hex digits".to_string());
        }
        check_digest("signed_sha256", &self.signed_sha256)?;
        if self.signed_bytes == 0 {
            return Err("signed_bytes must be positive".to_string());
        }
        let key_hex = self
            .observer_key_id
            .strip_prefix("sha256:")
            .unwrap_or_default();
        check_text("observer_key_id", &self.observer_key_id)?;
        check_digest("observer_key_id's digest", key_hex)?;
        if !OBSERVATION_OUTCOMES.contains(&self.outcome.as_str()) {
            return Err(format!("outcome must be one of {OBSERVATION_OUTCOMES:?}"));
        }
        if let Some(digest) = &self.frame_sha256 {
            check_digest("frame_sha256", digest)?;
        }
        if self.outcome == "insufficient_data" && self.element_count != 0 {
            return Err("an insufficient_data observation has no elements".to_string());
        }
        Ok(())
    }
}
