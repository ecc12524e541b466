//! The exact executor: `POST /v1/sessions/{id}/actions` with `approval_id` runs the approved
//! action once, in one turn of the session (nothing else of the session runs in between):
//!
//! 1. The receipt must exist for this session (else `not_found`), verify with the broker's
//!    evidence key, be unexpired and unconsumed, and the request's action digest must equal the
//!    receipt's (else `approval_required` naming why). Nothing is sent.
//! 2. A fresh observation; the element is re-resolved by its binding (role, name, sibling path,
//!    extents, in the app's window): exactly one node, else `insufficient_data`, nothing sent.
//! 3. The receipt is consumed, durably and exclusively (`receipt.rs`), then `PENDING_INVOCATION`
//!    is journaled.
//! 4. The node is invoked once: a program of one `ax_press` step through the one execution path
//!    (`run_plan`: journal row, `action_accepted`, the worker's AT-SPI action), for which the
//!    high-risk check admits exactly this node of this observation once ([`super::Allowance`]).
//! 5. `EFFECT_UNCERTAIN` is journaled, a fresh observation read, and the effect decided:
//!    `CONFIRMED` when the app's accessible state digest (`effect.rs`) changed, else
//!    `NO_EFFECT`. Any failure after the invocation, and `NO_EFFECT`, freezes the session (state
//!    `error`: no more input), and nothing is ever retried.
//!
//! A retry of the request that consumed a receipt (same request id) replays that request's
//! journaled answer; any other use of a consumed receipt is refused.

use desk_contract::ErrorCode;
use desk_contract::a11y::{AxLimits, AxTree};
use desk_contract::approval::{
    ApprovedActionRequest, ApprovedActionResponse, ApprovedState, EffectReadback, ExactAction,
};
use desk_contract::control::{ProgramRequest, ProgramStep, SemanticStep};
use desk_evidence::record::ApprovedAction;

use super::effect::effect_digest;
use super::issue::find_binding;
use super::receipt::{self, Consumed, ReceiptStore};
use super::refusal;
use crate::broker::{Broker, Inner};
use crate::door::Need;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::store::SessionRow;
use crate::util::now_ms;

fn required(message: String) -> BrokerError {
    refusal(
        ErrorCode::ApprovalRequired,
        format!("{message}; nothing was sent"),
    )
}

fn program(request: &ApprovedActionRequest, consumed: &Consumed) -> ProgramRequest {
    ProgramRequest {
        request_id: consumed.request_id.clone(),
        expected_action_index: consumed.expected_action_index,
        control: request.control.clone(),
        screenshot_id: None,
        steps: vec![ProgramStep::Semantic(SemanticStep::AxPress {
            observation_id: consumed.observation_id.clone(),
            node: consumed.node,
            intent: format!("approved action {}", request.approval_id),
        })],
    }
}

struct Journal<'a> {
    inner: &'a Inner,
    session: SessionRow,
    request: &'a ApprovedActionRequest,
    action_sha256: String,
}

impl Journal<'_> {
    fn record(
        &self,
        state: ApprovedState,
        consumed: &Consumed,
        observation_id: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Result<(), BrokerError> {
        crate::evidence::approved_action(
            self.inner.evidence(),
            &self.session,
            ApprovedAction {
                approval_id: self.request.approval_id.clone(),
                state: state.as_str().to_string(),
                request_id: self.request.request_id.clone(),
                action_sha256: self.action_sha256.clone(),
                observation_id: observation_id.to_string(),
                node: consumed.node,
                effect_before_sha256: before.map(str::to_string),
                effect_after_sha256: after.map(str::to_string),
            },
        )
    }
}

impl Inner {
    /// A fresh observation of the session's app, recorded as its current one.
    fn observe_now(&self, session_id: &SessionId) -> Result<AxTree, BrokerError> {
        self.enter(
            session_id,
            "execute_approved",
            Need::Unchecked,
            |mut door| {
                let limits = AxLimits::new(None, None).map_err(|error| {
                    BrokerError::Internal(format!("default tree limits: {error}"))
                })?;
                let tree = door
                    .desktop()?
                    .accessibility(limits)
                    .map_err(BrokerError::desktop("read the accessibility tree"))?;
                self.controls
                    .observed(session_id, &door.session().dir(), &tree)?;
                self.approvals.observed(session_id, &tree);
                Ok(tree)
            },
        )
    }

    /// Freezes the session after an approved action's invocation: state `error`, no more input.
    fn freeze(&self, session_id: &SessionId, why: &str) -> BrokerError {
        let message =
            format!("the session is frozen after an approved action: {why}; it is never retried");
        tracing::warn!(%session_id, why, "approved action: session frozen");
        if let Err(error) = self.mark_error(session_id, ErrorCode::InputOutcomeUnknown, &message) {
            tracing::error!(%session_id, %error, "failed to record the freeze");
        }
        refusal(ErrorCode::InputOutcomeUnknown, message)
    }

    fn execute_approved(
        &self,
        session_id: &SessionId,
        request: ApprovedActionRequest,
    ) -> Result<(ApprovedActionResponse, bool), BrokerError> {
        if !self.approvals.enabled() {
            return Err(refusal(
                ErrorCode::Unsupported,
                "the policy in force has no approvals section".to_string(),
            ));
        }
        crate::ids::RequestId::parse(&request.request_id)?;
        let session = self.enter_unlocked(session_id, "execute_approved")?;
        let store = ReceiptStore::new(&self.config.state_dir, session_id);
        let approval_id = &request.approval_id;
        let stored = store.get(approval_id)?.ok_or_else(|| {
            BrokerError::NotFound(format!(
                "approval {approval_id:?} of this session; nothing was sent"
            ))
        })?;
        let key = crate::evidence::load_signing_key(
            &self.config.state_dir,
            self.config.evidence.signing_key.as_deref(),
        )?;
        let payload = &stored.receipt.payload;
        if !receipt::verify(&key.verifying_key(), &stored.receipt)
            || payload.approval_id != *approval_id
            || payload.session_id != session_id.as_str()
        {
            return Err(required(format!(
                "approval {approval_id} does not verify for this session"
            )));
        }
        let action_sha256 = receipt::action_sha256(&request.action)?;
        if action_sha256 != payload.action_sha256 {
            return Err(required(format!(
                "the action's digest {action_sha256} is not the one approval {approval_id} \
                 approved"
            )));
        }
        if let Some(consumed) = store.consumed(approval_id)? {
            // The request that consumed it, again: its journaled answer (never a second run).
            let known = self
                .store
                .action_by_request(
                    session_id,
                    &crate::ids::RequestId::parse(&request.request_id)?,
                )?
                .is_some();
            if consumed.request_id == request.request_id && known {
                let answer = self.execute_program(session_id, program(&request, &consumed))?;
                let (state, effect) = store.outcome(approval_id)?.ok_or_else(|| {
                    refusal(
                        ErrorCode::InputOutcomeUnknown,
                        format!(
                            "approval {approval_id} was consumed; its effect was never read back"
                        ),
                    )
                })?;
                return Ok((
                    ApprovedActionResponse {
                        approval_id: approval_id.clone(),
                        state,
                        effect,
                        program: answer,
                    },
                    true,
                ));
            }
            return Err(required(format!(
                "approval {approval_id} was consumed already"
            )));
        }
        if now_ms() >= payload.expires_at_ms {
            return Err(required(format!("approval {approval_id} expired")));
        }
        // Before anything is consumed: the session takes this index now, and is not frozen.
        session.lifecycle.accept(request.expected_action_index)?;
        let ExactAction::AxPress { .. } = &request.action;
        // Re-resolve the element in a fresh observation.
        let before = self.observe_now(session_id)?;
        let found = find_binding(&before, &stored.element);
        let [node] = found.as_slice() else {
            return Err(refusal(
                ErrorCode::InsufficientData,
                format!(
                    "the approved element ({} {:?} at path {}) is {} in a fresh observation; \
                     nothing was sent",
                    stored.element.role,
                    stored.element.name,
                    stored.element.path,
                    if found.is_empty() {
                        "gone"
                    } else {
                        "ambiguous"
                    }
                ),
            ));
        };
        if before.truncated {
            return Err(refusal(
                ErrorCode::InsufficientData,
                "the fresh observation before the approved action is incomplete (truncated, or \
                 an element could not be read), so its effect could not be read back; nothing \
                 was sent"
                    .to_string(),
            ));
        }
        let before_sha256 = effect_digest(&before)?;
        let consumed = Consumed {
            request_id: request.request_id.clone(),
            expected_action_index: request.expected_action_index,
            observation_id: before.observation_id.clone(),
            node: *node,
        };
        if !store.consume(approval_id, &consumed)? {
            return Err(required(format!(
                "approval {approval_id} was consumed already"
            )));
        }
        let journal = Journal {
            inner: self,
            session,
            request: &request,
            action_sha256,
        };
        journal.record(
            ApprovedState::PendingInvocation,
            &consumed,
            &before.observation_id,
            Some(&before_sha256),
            None,
        )?;
        self.approvals
            .allow_once(session_id, &before.observation_id, *node);
        let ran = self.execute_program(session_id, program(&request, &consumed));
        self.approvals.allow_once_clear(session_id);
        let answer = match ran {
            Ok(answer) => answer,
            Err(error) if error.code() == ErrorCode::InputOutcomeUnknown => {
                let _ = journal.record(
                    ApprovedState::EffectUncertain,
                    &consumed,
                    &before.observation_id,
                    Some(&before_sha256),
                    None,
                );
                return Err(self.freeze(session_id, &format!("the invocation failed: {error}")));
            }
            // Nothing was sent (refused before its input): the receipt stays consumed.
            Err(error) => return Err(error),
        };
        if let Err(error) = journal.record(
            ApprovedState::EffectUncertain,
            &consumed,
            &before.observation_id,
            Some(&before_sha256),
            None,
        ) {
            return Err(self.freeze(
                session_id,
                &format!("EFFECT_UNCERTAIN not recorded: {error}"),
            ));
        }
        let after = match self.observe_now(session_id) {
            Ok(after) => after,
            Err(error) => {
                return Err(self.freeze(session_id, &format!("the readback failed: {error}")));
            }
        };
        if after.truncated {
            // An incomplete walk (a busy or hung app, an element that could not be read) differs
            // from the one before without any effect: undecided, so the session freezes.
            return Err(self.freeze(
                session_id,
                "the readback's observation is incomplete; the effect is uncertain",
            ));
        }
        let after_sha256 = effect_digest(&after)?;
        let state = if after_sha256 == before_sha256 {
            ApprovedState::NoEffect
        } else {
            ApprovedState::Confirmed
        };
        if let Err(error) = journal.record(
            state,
            &consumed,
            &after.observation_id,
            Some(&before_sha256),
            Some(&after_sha256),
        ) {
            return Err(self.freeze(
                session_id,
                &format!("{} not recorded: {error}", state.as_str()),
            ));
        }
        if state == ApprovedState::NoEffect {
            let _ = self.freeze(
                session_id,
                "the readback saw no change of the app's accessible state",
            );
        }
        let effect = EffectReadback {
            before_sha256,
            after_sha256,
            observation_id: after.observation_id,
        };
        if let Err(error) = store.put_outcome(approval_id, state, &effect) {
            tracing::warn!(%session_id, approval_id, %error, "approved action's outcome not stored");
        }
        tracing::info!(%session_id, approval_id, state = state.as_str(), "approved action ran");
        Ok((
            ApprovedActionResponse {
                approval_id: approval_id.clone(),
                state,
                effect,
                program: answer,
            },
            false,
        ))
    }
}

impl Broker {
    /// `execute_action` with `approval_id`.
    pub async fn execute_approved(
        &self,
        session_id: &SessionId,
        request: ApprovedActionRequest,
    ) -> Result<ApprovedActionResponse, BrokerError> {
        let session_id = session_id.clone();
        let id = session_id.clone();
        let (mut answer, _replayed) = self
            .run(Some(session_id.clone()), move |inner| {
                inner.execute_approved(&session_id, request)
            })
            .await?;
        answer.program = self
            .gate_answer(&id, answer.program, crate::shot_gate::Stream::Screen)
            .await?;
        Ok(answer)
    }
}
