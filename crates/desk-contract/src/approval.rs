//! Approval-bound exact actions (G004) on the wire: the approver's request
//! (`POST /v1/sessions/{id}/approvals`), the broker's signed approval receipt, and the executor's
//! request and answer (`POST /v1/sessions/{id}/actions` with `approval_id`). See
//! `docs/approvals.md`. Digests are SHA-256 (hex) of the RFC 8785 canonical JSON of
//! [`ExactAction`] and [`ElementBinding`] as they appear on the wire.

use serde::{Deserialize, Serialize};

use crate::control::{ControlToken, ProgramResponse};
use crate::desktop::WindowRect;

/// `schema` of an approval receipt's payload.
pub const APPROVAL_RECEIPT_SCHEMA: &str = "deskbroker.approval-receipt.v1";

/// The exact action an approval is for. Only a semantic press exists: the executor invokes one
/// accessible element through AT-SPI, never a pointer at a point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ExactAction {
    /// Invoke the default action of node `node` of observation `observation_id`.
    AxPress {
        /// The observation the node index belongs to.
        observation_id: String,
        /// The node's index in that observation.
        node: u32,
    },
}

/// The element as the approver saw it: what the broker re-resolves before issuing a receipt and
/// again before invoking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ElementBinding {
    /// The observation the approver read it in (the action's).
    pub observation_id: String,
    /// Its AT-SPI role.
    pub role: String,
    /// Its accessible name.
    pub name: String,
    /// Its sibling path from the application (`0/2/1`).
    pub path: String,
    /// Its extents, in screen pixels.
    pub bounds: WindowRect,
}

/// `POST /v1/sessions/{id}/approvals`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// The exact action approved.
    pub action: ExactAction,
    /// The element it invokes, as the approver saw it.
    pub element: ElementBinding,
}

/// The signed part of an approval receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalPayload {
    /// [`APPROVAL_RECEIPT_SCHEMA`].
    pub schema: String,
    /// `apr-` and 32 lowercase hex digits, drawn at random.
    pub approval_id: String,
    /// The session it is for.
    pub session_id: String,
    /// SHA-256 of the canonical JSON of the [`ExactAction`].
    pub action_sha256: String,
    /// SHA-256 of the canonical JSON of the [`ElementBinding`].
    pub element_sha256: String,
    /// The approver credential's subject (the policy's `approver_id`).
    pub approver_id: String,
    /// SHA-256 of the signed policy that named the approver and the target.
    pub policy_sha256: String,
    /// Issued, milliseconds since the Unix epoch.
    pub issued_at_ms: u64,
    /// Expires (exclusive): issued plus the policy's `receipt_ttl_seconds`.
    pub expires_at_ms: u64,
}

/// A signed approval receipt: Ed25519 by the broker's evidence key over the canonical JSON of
/// the payload (`evidence.pub` verifies it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalReceipt {
    /// What was approved.
    pub payload: ApprovalPayload,
    /// The signature, standard base64.
    pub signature_b64: String,
}

/// `POST /v1/sessions/{id}/actions` carrying an approval: the exact approved action, run once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovedActionRequest {
    /// Idempotency key, as for every action.
    pub request_id: String,
    /// The index this action must receive.
    pub expected_action_index: u64,
    /// The approval receipt consumed by this action.
    pub approval_id: String,
    /// The action; its canonical digest must equal the receipt's `action_sha256`.
    pub action: ExactAction,
    /// The control token, as for programs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlToken>,
}

crate::wire_enum! {
    /// Where an approved action ended; the journal also holds the states before it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ApprovedState {
        /// The receipt was consumed and the element re-resolved; the invocation is next.
        PendingInvocation = "PENDING_INVOCATION",
        /// The element was invoked; its effect is not read back yet.
        EffectUncertain = "EFFECT_UNCERTAIN",
        /// The readback saw the effect.
        Confirmed = "CONFIRMED",
        /// The readback saw no effect: the session is frozen.
        NoEffect = "NO_EFFECT",
    }
}

/// The readback of an approved action's effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct EffectReadback {
    /// SHA-256 of the app's accessible state before the invocation (see `docs/approvals.md`).
    pub before_sha256: String,
    /// The same after it.
    pub after_sha256: String,
    /// The observation read after the invocation.
    pub observation_id: String,
}

/// The answer to an approved action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ApprovedActionResponse {
    /// The consumed approval.
    pub approval_id: String,
    /// `CONFIRMED` or `NO_EFFECT` (the session is frozen then).
    pub state: ApprovedState,
    /// The readback.
    pub effect: EffectReadback,
    /// The action as a program of one `ax_press` step on the re-resolved node.
    pub program: ProgramResponse,
}
