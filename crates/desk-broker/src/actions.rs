//! `execute_action`: validation, exactly-once journaling, execution, logging and the receipt.
//!
//! Order of checks: the action is validated against the session's display before anything else
//! (`invalid_action`, nothing sent); then lease liveness; then the journal by `request_id`
//! (identical retry of a complete action → cached response with `idempotent_replay=true`;
//! unknown outcome → `input_outcome_unknown`; different content or index →
//! `action_sequence_conflict`); then the session state (`ready` only); then the expected index.
//! The intent is logged and journaled, never sent: the backend receives only the
//! [`desk_contract::InputAction`].
//!
//! Signed evidence (see `evidence`): after the `pending` row commits, `action_accepted` is
//! written; if it cannot be, the row is discarded and nothing is sent. Every accepted action gets
//! a receipt before its response (delivered, incomplete, in doubt, or not injected).

use std::path::Path;

use desk_contract::api::{ActionRequest, ActionResponse, Receipt, SettleReceipt};
use desk_contract::desktop::ActionOutcome;
use desk_contract::events::Provenance;
use desk_contract::settle::SettleReport;
use desk_contract::{ErrorCode, InputAction, SettleOutcome, validate_action};

use crate::broker::{Broker, Inner, screenshot};
use crate::error::BrokerError;
use crate::evidence::{self, ActionEnd};
use crate::fault::FaultHook;
use crate::frames;
use crate::journal::{JournalEntry, JournalStatus};
use crate::logs::{EventLogs, FrameTiming};
use crate::session::Failure;
use crate::util::{canonical_json, check_identifier, now_ms, sha256_hex};

fn settle_outcome_name(outcome: SettleOutcome) -> &'static str {
    match outcome {
        SettleOutcome::Stable => "stable",
        SettleOutcome::StillChanging => "still_changing",
        SettleOutcome::Unavailable => "unavailable",
        SettleOutcome::Skipped => "skipped",
        SettleOutcome::Interrupted => "interrupted",
    }
}

fn request_digest(request: &ActionRequest) -> Result<String, BrokerError> {
    let content = serde_json::json!({
        "expected_action_index": request.expected_action_index,
        "action": request.action,
    });
    Ok(sha256_hex(canonical_json(&content).as_bytes()))
}

impl Inner {
    fn execute(
        &self,
        session_id: &str,
        request: ActionRequest,
    ) -> Result<ActionResponse, BrokerError> {
        self.load(session_id)?;
        let slot = self.slot(session_id);
        let mut runtime = slot.lock();
        let validated = validate_action(&request.action, runtime.display)?;
        check_identifier("request_id", &request.request_id)?;
        let mut session = self.load(session_id)?;
        self.check_live(&session, "execute_action")?;
        let digest = request_digest(&request)?;
        if let Some(entry) = self
            .store
            .action_by_request(session_id, &request.request_id)?
        {
            if entry.request_digest != digest || entry.action_index != request.expected_action_index
            {
                return Err(BrokerError::SequenceConflict(format!(
                    "request_id {:?} was already used for action {} with different content",
                    request.request_id, entry.action_index
                )));
            }
            return match (entry.status, entry.response) {
                (JournalStatus::Complete, Some(cached)) => {
                    let mut response: ActionResponse = serde_json::from_str(&cached)
                        .map_err(BrokerError::json("read a cached action response"))?;
                    if response.screenshot.png_base64.is_empty() {
                        frames::load(Path::new(&session.session_dir), &mut response.screenshot)?;
                    }
                    response.idempotent_replay = true;
                    Ok(response)
                }
                _ => Err(BrokerError::OutcomeUnknown {
                    action_index: entry.action_index,
                    source: None,
                }),
            };
        }
        let (running, action_index) = session.lifecycle.accept(request.expected_action_index)?;
        let Some(backend) = runtime.backend.as_mut() else {
            return Err(BrokerError::Internal(
                "ready session without a desktop".to_string(),
            ));
        };

        let accepted_at_ms = now_ms();
        let (input, intent) = validated.clone().into_parts();
        tracing::info!(
            session_id,
            action_index,
            action_type = validated.action_type(),
            intent,
            "action accepted"
        );
        session.lifecycle = running;
        self.renew(&mut session);
        let begin_started = std::time::Instant::now();
        self.store.begin_action(
            &session,
            &JournalEntry {
                session_id: session_id.to_string(),
                action_index,
                request_id: request.request_id.clone(),
                request_digest: digest,
                action_type: validated.action_type().to_string(),
                intent: intent.clone(),
                status: JournalStatus::Pending,
                response: None,
            },
        )?;
        let begun_at = std::time::Instant::now();
        // Signed evidence of the acceptance comes before any input; without it nothing is sent
        // and the index goes to the next action.
        if let Err(error) = evidence::action_accepted(
            self,
            &session,
            action_index,
            &request,
            validated.action_type(),
            &intent,
        ) {
            session.lifecycle = session.lifecycle.withdraw()?;
            self.store.discard_action(&session, action_index)?;
            return Err(error);
        }
        let evidence_accepted_at = std::time::Instant::now();
        self.config.fault.fire(FaultHook::KillBeforeInput);
        let journaled_at = std::time::Instant::now();

        let result = if input == InputAction::Done {
            backend.capture().map(|frame| ActionOutcome {
                events: Vec::new(),
                focus_before: desk_contract::desktop::FocusFacts {
                    active: None,
                    pointer: desk_contract::ScreenPoint { x: 0, y: 0 },
                },
                focus_after: desk_contract::desktop::FocusFacts {
                    active: None,
                    pointer: desk_contract::ScreenPoint { x: 0, y: 0 },
                },
                released_after: Vec::new(),
                settle: SettleReport {
                    outcome: SettleOutcome::Skipped,
                    wait_ms: 0,
                    changed_pixels: 0,
                    n_samples: 0,
                    post_action_visual_stable: false,
                },
                frame,
                input_ms: 0,
            })
        } else {
            backend.execute(&input, self.config.settle)
        };
        self.config.fault.fire(FaultHook::KillAfterInput);
        let executed_at = std::time::Instant::now();

        let outcome = match result {
            Ok(outcome) => outcome,
            Err(error) if error.input_may_have_been_sent() => {
                // Best effort: the session fails closed whether or not the receipt is written.
                let _ = evidence::action_receipt(self, &session, action_index, ActionEnd::InDoubt);
                let failure = BrokerError::OutcomeUnknown {
                    action_index,
                    source: Some(error),
                };
                session.lifecycle = session.lifecycle.fail(Failure::new(
                    ErrorCode::InputOutcomeUnknown,
                    failure.to_string(),
                ));
                self.store.mark_unknown(&session, action_index)?;
                return Err(failure);
            }
            Err(error) => {
                // Nothing was sent. Without this receipt the next acceptance withdraws it.
                let _ = evidence::action_receipt(
                    self,
                    &session,
                    action_index,
                    ActionEnd::NotInjected {
                        error_code: ErrorCode::DesktopFailed.as_str(),
                    },
                );
                session.lifecycle = session.lifecycle.withdraw()?;
                self.store.discard_action(&session, action_index)?;
                return Err(BrokerError::Desktop {
                    operation: "execute_action",
                    source: error,
                });
            }
        };

        let sequence = session.last_sequence + 1;
        let handoff_ms = session.handoff_ms.unwrap_or(outcome.frame.captured_at_ms);
        let timing = FrameTiming {
            sequence,
            captured_at_ms: outcome.frame.captured_at_ms,
            handoff_ms,
            previous_frame_ms: session.last_frame_ms.unwrap_or(handoff_ms),
        };
        let logged = EventLogs::new(Path::new(&session.session_dir)).append(
            &outcome.events,
            action_index,
            Provenance::BrokerAction,
            timing,
        );
        if let Err(error) = logged {
            // The input was delivered but its evidence is incomplete: never replay it.
            let _ = evidence::action_receipt(
                self,
                &session,
                action_index,
                ActionEnd::Incomplete {
                    error_code: ErrorCode::Internal.as_str(),
                },
            );
            session.lifecycle = session.lifecycle.fail(Failure::new(
                ErrorCode::Internal,
                "failed to write the event logs",
            ));
            self.store.mark_unknown(&session, action_index)?;
            return Err(error);
        }

        let done = input == InputAction::Done;
        let delivery = match input {
            InputAction::Done => "done",
            InputAction::Wait { .. } => "waited",
            _ => "input_injected",
        };
        let response = ActionResponse {
            action_index,
            idempotent_replay: false,
            receipt: Receipt {
                action_index,
                action_type: validated.action_type().to_string(),
                intent,
                delivery: delivery.to_string(),
                n_input_events: u64::try_from(outcome.events.len()).unwrap_or(u64::MAX),
                focus_before: (!done).then(|| outcome.focus_before.clone()),
                focus_after: (!done).then(|| outcome.focus_after.clone()),
                released_after: outcome.released_after.clone(),
                settle: SettleReceipt {
                    outcome: outcome.settle.outcome,
                    wait_ms: outcome.settle.wait_ms,
                    changed_pixels: outcome.settle.changed_pixels,
                },
                post_action_visual_stable: outcome.settle.post_action_visual_stable,
                accepted_at_ms,
                input_ms: outcome.input_ms,
                total_ms: now_ms().saturating_sub(accepted_at_ms),
            },
            screenshot: screenshot(&outcome.frame, sequence),
        };
        let responded_at = std::time::Instant::now();
        // The journal caches the response without the screenshot bytes; the frame file holds
        // them (see `frames`).
        let session_dir = Path::new(&session.session_dir);
        let stored_frame = frames::store(session_dir, &response.screenshot, &outcome.frame.png);
        let receipt_started_at = std::time::Instant::now();
        let receipt = match &stored_frame {
            Ok(()) => evidence::action_receipt(
                self,
                &session,
                action_index,
                ActionEnd::Delivered {
                    settle_outcome: settle_outcome_name(outcome.settle.outcome),
                    screenshot_sha256: &response.screenshot.sha256,
                },
            ),
            Err(_) => evidence::action_receipt(
                self,
                &session,
                action_index,
                ActionEnd::Incomplete {
                    error_code: ErrorCode::Internal.as_str(),
                },
            ),
        };
        let receipt_done_at = std::time::Instant::now();
        if let Err(error) = stored_frame.and(receipt) {
            // Delivered but its evidence is incomplete: never replay it.
            session.lifecycle = session.lifecycle.fail(Failure::new(
                ErrorCode::Internal,
                "failed to store the action frame",
            ));
            self.store.mark_unknown(&session, action_index)?;
            return Err(error);
        }
        let mut stored = response.clone();
        stored.screenshot.png_base64 = String::new();
        let cached =
            serde_json::to_string(&stored).map_err(BrokerError::json("cache an action"))?;
        session.lifecycle = session.lifecycle.complete(done)?;
        session.last_sequence = sequence;
        session.last_frame_ms = Some(outcome.frame.captured_at_ms);
        self.store
            .complete_action(&session, action_index, &cached)?;
        tracing::debug!(
            session_id,
            action_index,
            begin_action_us = u64::try_from((begun_at - begin_started).as_micros()).unwrap_or(0),
            evidence_accepted_us =
                u64::try_from((evidence_accepted_at - begun_at).as_micros()).unwrap_or(0),
            evidence_receipt_us =
                u64::try_from((receipt_done_at - receipt_started_at).as_micros()).unwrap_or(0),
            before_backend_ms = now_ms()
                .saturating_sub(accepted_at_ms)
                .saturating_sub(u64::try_from(journaled_at.elapsed().as_millis()).unwrap_or(0)),
            backend_ms = u64::try_from((executed_at - journaled_at).as_millis()).unwrap_or(0),
            logs_and_response_ms =
                u64::try_from((responded_at - executed_at).as_millis()).unwrap_or(0),
            cache_commit_ms = u64::try_from(responded_at.elapsed().as_millis()).unwrap_or(0),
            "action timing"
        );
        Ok(response)
    }
}

impl Broker {
    /// `execute_action`: validates and executes exactly one action.
    pub async fn execute(
        &self,
        session_id: &str,
        request: ActionRequest,
    ) -> Result<ActionResponse, BrokerError> {
        let session_id = session_id.to_string();
        self.run(Some(session_id.clone()), move |inner| {
            inner.execute(&session_id, request)
        })
        .await
    }
}
