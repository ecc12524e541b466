//! `POST /v1/sessions/{id}/approvals`: an approver issues a signed receipt for one exact action.
//!
//! Authorization ([`check_approver`], called by desk-server's `auth.rs` before the handler): a credential of
//! the orchestration format with the `approve` scope, whose subject is the policy's
//! `approver_id`, verified with the policy's `approver_public_key`. A lease token is no such
//! credential (401), and an approver credential is no lease token: it cannot act, lease or read
//! frames.
//!
//! The handler re-resolves the element in the session's current observation (the last
//! accessibility tree the broker read): the action's observation must be that one, its node must
//! carry exactly the binding's role, name, sibling path and extents, and it (or a container
//! around it) must be one of the policy's high-risk targets. Then the receipt is signed, its
//! `approval_issued` record appended to the session's journal, and it is stored. Any refusal
//! stores and records nothing.

use desk_contract::ErrorCode;
use desk_contract::a11y::{AxTree, AxWindow};
use desk_contract::approval::{
    APPROVAL_RECEIPT_SCHEMA, ApprovalPayload, ApprovalReceipt, ApprovalRequest, ElementBinding,
    ExactAction,
};
use desk_evidence::record::ApprovalIssued;

use super::receipt::{self, ReceiptStore, Stored};
use super::{ApprovalGate, hit, refusal};
use crate::broker::{Broker, Inner};
use crate::credential::{self, Scope};
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::util::now_ms;

/// The subject of the approver credential that authorized a request.
#[derive(Debug, Clone)]
pub struct Approver(pub(crate) String);

/// An approver credential, whatever the peer (see the module doc).
pub(crate) fn check_approver(
    gate: &ApprovalGate,
    token: Option<&str>,
    now_ms: u64,
) -> Result<Approver, BrokerError> {
    let approvals = gate.approvals.as_ref().ok_or_else(|| {
        BrokerError::Unauthorized("the policy in force names no approver".to_string())
    })?;
    let token = token
        .ok_or_else(|| BrokerError::Unauthorized("an approver credential is needed".into()))?;
    let claims = credential::verify(&approvals.approver_key, token, now_ms)?;
    if !claims.scope.contains(&Scope::Approve) {
        return Err(BrokerError::Unauthorized(
            "credential refused: it lacks the approve scope".to_string(),
        ));
    }
    if claims.sub != approvals.approver_id {
        return Err(BrokerError::Unauthorized(
            "credential refused: its subject is not the policy's approver".to_string(),
        ));
    }
    Ok(Approver(claims.sub))
}

/// The node of `tree` the binding names: the action's node, with exactly the binding's role,
/// name, sibling path and extents, in the app's window.
pub(crate) fn resolve_at(tree: &AxTree, node: u32, binding: &ElementBinding) -> Result<(), String> {
    let found = tree
        .nodes
        .get(node as usize)
        .ok_or_else(|| format!("observation {} has no node {node}", tree.observation_id))?;
    let path = hit::path_of(tree, node).unwrap_or_default();
    let same = found.window == AxWindow::Bound
        && found.role == binding.role
        && found.name == binding.name
        && path == binding.path
        && found.bounds == Some(binding.bounds);
    if same {
        Ok(())
    } else {
        Err(format!(
            "node {node} is the app's {} {:?} at path {path}, bounds {:?}, not the element \
             approved",
            found.role, found.name, found.bounds
        ))
    }
}

/// The nodes of `tree` that carry `binding` (role, name, sibling path, extents, in the app's
/// window): where the element is in a fresh observation.
pub(crate) fn find_binding(tree: &AxTree, binding: &ElementBinding) -> Vec<u32> {
    tree.nodes
        .iter()
        .filter(|node| resolve_at(tree, node.index, binding).is_ok())
        .map(|node| node.index)
        .collect()
}

fn invalid(message: String) -> BrokerError {
    refusal(ErrorCode::InvalidParams, message)
}

impl Inner {
    fn approve(
        &self,
        session_id: &SessionId,
        approver: &Approver,
        request: ApprovalRequest,
    ) -> Result<ApprovalReceipt, BrokerError> {
        let approvals = self.approvals.approvals.as_ref().ok_or_else(|| {
            refusal(
                ErrorCode::Unsupported,
                "the policy in force has no approvals section".to_string(),
            )
        })?;
        let session = self.load(session_id)?;
        self.check_live(&session, "approve")?;
        let ExactAction::AxPress {
            observation_id,
            node,
        } = &request.action;
        if request.element.observation_id != *observation_id {
            return Err(invalid(
                "element.observation_id must be the action's observation_id".to_string(),
            ));
        }
        let tree = self.approvals.last(session_id).ok_or_else(|| {
            refusal(
                ErrorCode::InsufficientData,
                "the broker has read no accessibility tree of this session; nothing was \
                 approved"
                    .to_string(),
            )
        })?;
        if tree.observation_id != *observation_id {
            return Err(refusal(
                ErrorCode::AxObservationStale,
                format!(
                    "observation {observation_id} is not the session's current one; nothing \
                     was approved"
                ),
            ));
        }
        resolve_at(&tree, *node, &request.element).map_err(|why| {
            refusal(
                ErrorCode::InsufficientData,
                format!("{why}; nothing was approved"),
            )
        })?;
        match hit::find_node(&tree, approvals, *node) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(invalid(format!(
                    "node {node} ({} {:?}) is no high-risk target of the policy: it needs no \
                     approval",
                    request.element.role, request.element.name
                )));
            }
            Err(hit::Unverified(why)) => {
                return Err(refusal(ErrorCode::InsufficientData, why));
            }
        }
        let policy_sha256 = self.store.session_policy(session_id)?.ok_or_else(|| {
            refusal(
                ErrorCode::InsufficientData,
                "the session's policy is not recorded".to_string(),
            )
        })?;
        let issued_at_ms = now_ms();
        let ttl_ms = u64::try_from(approvals.receipt_ttl.as_millis()).unwrap_or(u64::MAX);
        let payload = ApprovalPayload {
            schema: APPROVAL_RECEIPT_SCHEMA.to_string(),
            approval_id: receipt::new_approval_id()?,
            session_id: session_id.to_string(),
            action_sha256: receipt::action_sha256(&request.action)?,
            element_sha256: receipt::element_sha256(&request.element)?,
            approver_id: approver.0.clone(),
            policy_sha256,
            issued_at_ms,
            expires_at_ms: issued_at_ms.saturating_add(ttl_ms),
        };
        let key = crate::evidence::load_signing_key(
            &self.config.state_dir,
            self.config.evidence.signing_key.as_deref(),
        )?;
        let signed = receipt::sign(&key, payload)?;
        let receipt_sha256 = desk_evidence::canonical_sha256(&signed)
            .map_err(|error| BrokerError::Internal(format!("encode a receipt: {error}")))?;
        let payload = &signed.payload;
        crate::evidence::approval_issued(
            self.evidence(),
            &session,
            ApprovalIssued {
                approval_id: payload.approval_id.clone(),
                action_sha256: payload.action_sha256.clone(),
                element_sha256: payload.element_sha256.clone(),
                approver_id: payload.approver_id.clone(),
                policy_sha256: payload.policy_sha256.clone(),
                issued_at_ms: payload.issued_at_ms,
                expires_at_ms: payload.expires_at_ms,
                receipt_sha256,
            },
        )?;
        ReceiptStore::new(&self.config.state_dir, session_id).put(&Stored {
            receipt: signed.clone(),
            element: request.element,
        })?;
        tracing::info!(
            %session_id,
            approval_id = payload.approval_id,
            approver = approver.0,
            "approval issued"
        );
        Ok(signed)
    }
}

impl Broker {
    /// Whether `token` is an approver credential of the policy in force (see the module doc):
    /// the approver it names. Called by desk-server's auth layer before the handler.
    pub fn check_approver(&self, token: Option<&str>) -> Result<Approver, BrokerError> {
        check_approver(&self.inner.approvals, token, now_ms())
    }

    /// `approve`.
    pub async fn approve(
        &self,
        session_id: &SessionId,
        approver: Approver,
        request: ApprovalRequest,
    ) -> Result<ApprovalReceipt, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.approve(&session_id, &approver, request)
        })
        .await
    }
}
