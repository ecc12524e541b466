//! The bodies of the approval-bound exact actions' records (`docs/approvals.md`):
//! `approval_issued` (an approver's signed receipt, bound to the exact action's and the element's
//! digests) and `approved_action` (one per state of its execution: `PENDING_INVOCATION` before
//! the one invocation, `EFFECT_UNCERTAIN` after it, then `CONFIRMED` or `NO_EFFECT` from the
//! readback).

use serde::{Deserialize, Serialize};

use super::fields::{check_digest, check_text};

/// `state` values of `approved_action`.
pub const APPROVED_STATES: [&str; 4] = [
    "PENDING_INVOCATION",
    "EFFECT_UNCERTAIN",
    "CONFIRMED",
    "NO_EFFECT",
];

/// Body of `approval_issued`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalIssued {
    /// The receipt's id.
    pub approval_id: String,
    /// SHA-256 of the exact action's canonical JSON.
    pub action_sha256: String,
    /// SHA-256 of the element binding's canonical JSON.
    pub element_sha256: String,
    /// The approver credential's subject.
    pub approver_id: String,
    /// SHA-256 of the signed policy that named the approver.
    pub policy_sha256: String,
    /// Issued, milliseconds since the Unix epoch.
    pub issued_at_ms: u64,
    /// Expires (exclusive).
    pub expires_at_ms: u64,
    /// SHA-256 of the canonical JSON of the whole signed receipt.
    pub receipt_sha256: String,
}

impl ApprovalIssued {
    pub(crate) fn validate(&self) -> Result<(), String> {
        check_text("approval_id", &self.approval_id)?;
        check_text("approver_id", &self.approver_id)?;
        check_digest("action_sha256", &self.action_sha256)?;
        check_digest("element_sha256", &self.element_sha256)?;
        check_digest("policy_sha256", &self.policy_sha256)?;
        check_digest("receipt_sha256", &self.receipt_sha256)?;
        if self.expires_at_ms <= self.issued_at_ms {
            return Err("expires_at_ms must be after issued_at_ms".to_string());
        }
        Ok(())
    }
}

/// Body of `approved_action`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovedAction {
    /// The consumed receipt's id.
    pub approval_id: String,
    /// One of [`APPROVED_STATES`].
    pub state: String,
    /// The request that consumed it.
    pub request_id: String,
    /// SHA-256 of the exact action's canonical JSON (the receipt's).
    pub action_sha256: String,
    /// The observation the element was re-resolved in (the readback's, for the last states).
    pub observation_id: String,
    /// The re-resolved node's index in that observation.
    pub node: u32,
    /// SHA-256 of the app's accessible state before the invocation, once read.
    pub effect_before_sha256: Option<String>,
    /// The same after it, once read back.
    pub effect_after_sha256: Option<String>,
}

impl ApprovedAction {
    pub(crate) fn validate(&self) -> Result<(), String> {
        check_text("approval_id", &self.approval_id)?;
        check_text("request_id", &self.request_id)?;
        check_text("observation_id", &self.observation_id)?;
        check_digest("action_sha256", &self.action_sha256)?;
        if !APPROVED_STATES.contains(&self.state.as_str()) {
            return Err(format!("state must be one of {APPROVED_STATES:?}"));
        }
        if let Some(digest) = &self.effect_before_sha256 {
            check_digest("effect_before_sha256", digest)?;
        }
        if let Some(digest) = &self.effect_after_sha256 {
            check_digest("effect_after_sha256", digest)?;
        }
        let read_back = matches!(self.state.as_str(), "CONFIRMED" | "NO_EFFECT");
        if read_back != self.effect_after_sha256.is_some() {
            return Err(
                "effect_after_sha256 is present exactly for CONFIRMED and NO_EFFECT".into(),
            );
        }
        Ok(())
    }
}
