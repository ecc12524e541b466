//! Typed input programs (`POST /v1/sessions/{id}/programs`) and the one execution path every
//! input takes: a single action is a program of one step ([`Inner::run_plan`]).
//!
//! Order: the body is parsed and every step validated (after mapping its coordinates through
//! the named screenshot's geometry, a semantic step against the current accessibility
//! observation) before anything else: a bad step is `invalid_params` (or `ax_observation_stale`,
//! `ax_foreign_window`) naming the step index and field, and nothing is sent. Then, as for actions: lease
//! liveness, the journal by request id (an identical retry replays the cached answer), the
//! control admission (owner, generation, mode), the session state and the expected index. The
//! whole program is one journal row and takes one action index. Before every step and before
//! the final observation the control scope is rechecked: after a Stop or a new generation the
//! remaining steps never run, and an observation taken under the old generation is discarded.
//!
//! Over 400 lines: `run_plan` is the one execution path every input takes and is kept in one piece;
//! whole-program validation is apart (`program/validate.rs`).

use desk_contract::api::Screenshot;
use desk_contract::control::{
    ProgramReceipt, ProgramRequest, ProgramResponse, ProgramStep, StepFailure,
};
use desk_contract::{ErrorCode, InputAction, ValidatedAction};
use desk_desktop::DesktopBackend;

use crate::broker::{Broker, Inner};
use crate::control::Scope;
use crate::door::{Door, Need};
use crate::error::BrokerError;
use crate::fault::FaultHook;
use crate::ids::{RequestId, SessionId};
use crate::ledger::{Accepted, Ledger};
use crate::step::Submitted;
use crate::store::SessionRow;
use crate::util::now_ms;

/// What an accepted request runs: its validated steps and how it is journaled.
pub(crate) struct Plan {
    pub(crate) request_id: RequestId,
    pub(crate) expected_action_index: u64,
    pub(crate) digest: String,
    /// The request as received, for the signed evidence.
    pub(crate) evidence_request: serde_json::Value,
    /// `click`, ... for a single action; `program` for a program.
    pub(crate) journal_type: &'static str,
    pub(crate) intent: String,
    pub(crate) steps: Vec<ValidatedAction>,
    pub(crate) scope: Scope,
}

/// An accepted request after its steps ran, before its records are closed.
pub(crate) struct Ran<'a> {
    pub(crate) ledger: Ledger<'a>,
    pub(crate) action_index: u64,
    pub(crate) accepted_at_ms: u64,
    /// At least one.
    pub(crate) submitted: Vec<Submitted>,
    pub(crate) attempted: u64,
    pub(crate) failing: Option<StepFailure>,
    /// Set when the control scope was lost after the last submitted step: its observation
    /// belongs to a generation that no longer exists and is discarded.
    pub(crate) revoked: Option<BrokerError>,
}

fn step_failure(step_index: u64, error: &BrokerError) -> StepFailure {
    StepFailure {
        step_index,
        code: error.code(),
        message: error.to_body().message,
    }
}

impl Inner {
    /// Input the worker refused because it would have left the app (`destination_not_app`)
    /// counts as a refused action, toward the policy's limit, like any other escape attempt.
    fn count_off_app(&self, session_id: &SessionId, request_id: &str, error: &BrokerError) {
        if matches!(
            error.code(),
            ErrorCode::DestinationNotApp | ErrorCode::DestinationProhibited
        ) {
            self.count_refused(session_id, request_id, error);
        }
    }

    /// Accepts `plan` as the session's next action (journal `pending`, evidence; the census
    /// beside them), then runs its steps in order, each only while `plan.scope` is current. An error before the first
    /// step's input withdraws the acceptance; input in doubt fails the session
    /// (`input_outcome_unknown`); a later step's failure ends the run with the submitted steps.
    pub(crate) fn run_plan<'a>(
        &'a self,
        backend: &mut dyn DesktopBackend,
        session: SessionRow,
        plan: &Plan,
    ) -> Result<Ran<'a>, BrokerError> {
        let session_id = session.id.clone();
        let dir = session.dir();
        let (running, action_index) = session.lifecycle.accept(plan.expected_action_index)?;
        self.check_session_dir(&session)?;
        let accepted_at_ms = now_ms();
        let accepted = Accepted {
            request_id: &plan.request_id,
            request: plan.evidence_request.clone(),
            request_digest: plan.digest.clone(),
            action_type: plan.journal_type,
            intent: &plan.intent,
        };
        // The census before any input (`watchdog/census.rs`) is taken while the ledger opens:
        // it only reads `/proc` and the session's files, the ledger waits on the disk, and both
        // end before any input. A prohibited process ends the session instead: the accepted
        // records are withdrawn first (as for any refusal before input), then the kill runs,
        // so its receipt names no action in flight.
        let opening = std::time::Instant::now();
        let (opened, violation, census_us) = self.beside_census(&dir, || {
            Ledger::open(self, session, running, action_index, accepted)
        });
        let opened_us = opening.elapsed().as_micros();
        let ledger = match (opened, violation) {
            (Ok(ledger), None) => ledger,
            (Err(error), None) => return Err(error),
            (opened, Some(violation)) => {
                return Err(self.census_refused(&session_id, action_index, opened, violation));
            }
        };
        tracing::info!(
            %session_id,
            action_index,
            action_type = plan.journal_type,
            n_steps = plan.steps.len(),
            generation = plan.scope.generation,
            intent = plan.intent,
            "action accepted"
        );
        let mut submitted: Vec<Submitted> = Vec::new();
        let mut attempted = 0;
        let mut failing = None;
        for (index, step) in plan.steps.iter().enumerate() {
            let step_index = index as u64;
            if let Err(refusal) = self.controls.recheck(&session_id, &dir, plan.scope) {
                if submitted.is_empty() {
                    return Err(ledger.withdrawn(refusal));
                }
                tracing::info!(%session_id, action_index, step_index, %refusal, "program halted");
                failing = Some(step_failure(step_index, &refusal));
                break;
            }
            let (input, intent) = step.clone().into_parts();
            // A high-risk control of the policy's `approvals` (`approval.rs`): nothing is sent.
            let observed = |tree: &_| self.controls.observed(&session_id, &dir, tree);
            // The observer's view, when there is one, is journaled before it is judged from.
            let record = |body| {
                let row = self.load(&session_id)?;
                crate::evidence::observer_observation(self.evidence(), &row, body)
            };
            if let Err(refusal) =
                self.approvals
                    .check(backend, &session_id, &input, &observed, &record)
            {
                self.count_refused(&session_id, plan.request_id.as_str(), &refusal);
                if submitted.is_empty() {
                    return Err(ledger.withdrawn(refusal));
                }
                tracing::info!(%session_id, action_index, step_index, %refusal, "program halted");
                failing = Some(step_failure(step_index, &refusal));
                break;
            }
            self.config.fault.fire(FaultHook::KillBeforeInput);
            attempted += 1;
            let step_started = std::time::Instant::now();
            let result = match input {
                InputAction::Done => backend.capture().map(crate::step::done_outcome),
                // A Stop past this generation interrupts the step's settle wait.
                // Validation mode samples by the session's action index (`--settle-validate-every`).
                _ => {
                    let settle = self.config.settle.for_action(action_index);
                    backend.execute_for(&input, settle, plan.scope.generation)
                }
            };
            let backend_us = u64::try_from(step_started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.config.fault.fire(FaultHook::KillAfterInput);
            tracing::debug!(
                %session_id,
                action_index,
                step_index,
                census_us,
                accept_us = opened_us,
                backend_us,
                settle_ms = result.as_ref().map(|outcome| outcome.settle.wait_ms).unwrap_or(0),
                "action timing: step"
            );
            match result {
                Ok(outcome) => submitted.push(Submitted {
                    step_index,
                    input,
                    action_type: step.action_type(),
                    intent,
                    outcome,
                    backend_us,
                }),
                Err(error) if error.input_may_have_been_sent() => {
                    // After a kill the logs are the kill's (kept, then removed): no row is added.
                    let ledger = ledger.fence_kills()?;
                    let mut failures = Vec::new();
                    for step in &submitted {
                        ledger.log_step(&step.outcome, step.step_index, &mut failures);
                    }
                    return Err(ledger.in_doubt(error));
                }
                Err(error) if submitted.is_empty() => {
                    let refusal = ledger.not_injected(error);
                    self.count_off_app(&session_id, plan.request_id.as_str(), &refusal);
                    return Err(refusal);
                }
                Err(error) => {
                    let error = BrokerError::Desktop {
                        operation: "execute_program",
                        source: error,
                    };
                    self.count_off_app(&session_id, plan.request_id.as_str(), &error);
                    tracing::warn!(%session_id, action_index, step_index, %error, "program step failed; nothing was sent for it");
                    failing = Some(step_failure(step_index, &error));
                    break;
                }
            }
        }
        let revoked = self.controls.recheck(&session_id, &dir, plan.scope).err();
        Ok(Ran {
            ledger,
            action_index,
            accepted_at_ms,
            submitted,
            attempted,
            failing,
            revoked,
        })
    }

    pub(crate) fn execute_program(
        &self,
        session_id: &SessionId,
        request: ProgramRequest,
    ) -> Result<ProgramResponse, BrokerError> {
        let request_id = RequestId::parse(&request.request_id)?;
        self.enter(session_id, "execute_program", Need::Unchecked, |door| {
            self.execute_program_in(session_id, request, request_id, door)
        })
    }

    fn execute_program_in(
        &self,
        session_id: &SessionId,
        request: ProgramRequest,
        request_id: RequestId,
        door: Door<'_>,
    ) -> Result<ProgramResponse, BrokerError> {
        let display = door.display();
        let dir = door.session().dir();
        let scope = door.scope_now()?;
        let observation = self.controls.observation(session_id, &dir)?;
        let ax = || {
            self.factory
                .capabilities()
                .accessibility
                .then_some(AxContext {
                    observation: observation.as_ref(),
                    scope,
                })
        };
        // Steps that name nothing the session replaces are checked at once; image coordinates
        // and observation ids only after the request id is looked up, so that a retry replays
        // even when its screenshot or observation is no longer current.
        let bound = request.screenshot_id.is_some()
            || request
                .steps
                .iter()
                .any(|step| matches!(step, ProgramStep::Semantic(_)));
        let unbound = if bound {
            None
        } else {
            Some(
                validate_steps(&request.steps, None, display, ax())
                    .map_err(|error| self.conflict_or(session_id, &request.request_id, error))?,
            )
        };
        door.require(Need::Live)?;
        let digest = program_digest(&request)?;
        if let Some(replayed) = self.replay::<ProgramResponse>(
            door.session(),
            &request_id,
            request.expected_action_index,
            &digest,
        )? {
            return Ok(replayed);
        }
        let steps = match unbound {
            Some(steps) => steps,
            None => request
                .screenshot_id
                .as_deref()
                .map(|id| self.controls.geometry(session_id, &dir, id, scope))
                .transpose()
                .and_then(|geometry| {
                    validate_steps(&request.steps, geometry.as_ref(), display, ax())
                })
                .inspect_err(|refusal| {
                    self.count_refused(session_id, &request.request_id, refusal)
                })?,
        };
        let scope = door.admit(request.control.as_ref())?;
        // No desktop yet: the session state refuses (leased before reset).
        let (backend, display, session) = door.into_action(request.expected_action_index)?;
        let intents: Vec<&str> = request.steps.iter().map(ProgramStep::intent).collect();
        let plan = Plan {
            request_id,
            expected_action_index: request.expected_action_index,
            digest,
            evidence_request: serde_json::to_value(&request)
                .map_err(BrokerError::json("encode a program for evidence"))?,
            journal_type: "program",
            intent: intents.join(" | "),
            steps,
            scope,
        };
        let ran = self.run_plan(backend, session, &plan)?;
        self.finish_program(session_id, &dir, display, ran, plan.steps.len(), scope)
    }

    /// Logs every submitted step, builds the receipt and the one final observation, and closes
    /// the ledger.
    fn finish_program(
        &self,
        session_id: &SessionId,
        dir: &desk_desktop::SessionDir,
        display: desk_contract::DisplaySize,
        ran: Ran<'_>,
        n_steps: usize,
        scope: Scope,
    ) -> Result<ProgramResponse, BrokerError> {
        let Ran {
            ledger,
            action_index,
            accepted_at_ms,
            mut submitted,
            attempted,
            failing,
            revoked,
        } = ran;
        let ledger = ledger.fence_kills()?;
        let Some(last) = submitted.pop() else {
            return Err(BrokerError::Internal(
                "a program ran without a step".to_string(),
            ));
        };
        let mut failures = Vec::new();
        let mut receipts = Vec::with_capacity(submitted.len() + 1);
        for step in &submitted {
            ledger.log_step(&step.outcome, step.step_index, &mut failures);
            receipts.push(crate::step::step_receipt(
                step,
                action_index,
                accepted_at_ms,
                self.config.sandbox,
                self.config.limits_mode,
            ));
        }
        receipts.push(crate::step::step_receipt(
            &last,
            action_index,
            accepted_at_ms,
            self.config.sandbox,
            self.config.limits_mode,
        ));
        let sequence = ledger.session().last_sequence + 1;
        let shot_started = std::time::Instant::now();
        let (screenshot, observation_error) = match (&revoked, &last.outcome.frame) {
            (Some(refusal), _) => (None, Some(format!("stopped: {refusal}"))),
            (None, Some(frame)) => {
                let mut screenshot: Screenshot = crate::broker::screenshot(frame, sequence);
                self.controls
                    .identify(session_id, dir, &mut screenshot, display)?;
                (Some(screenshot), None)
            }
            (None, None) => (
                None,
                Some(format!(
                    "no frame after the last step: {}",
                    last.outcome.observation_failures.join(", ")
                )),
            ),
        };
        let shot_us = u64::try_from(shot_started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let observation_elapsed_ms = last.observation_ms(shot_us);
        if let Some(receipt) = receipts.last_mut() {
            receipt.observation_elapsed_ms = observation_elapsed_ms;
        }
        let mut response = ProgramResponse {
            action_index,
            idempotent_replay: false,
            receipt: ProgramReceipt {
                action_index,
                generation: scope.generation,
                target_revision: scope.target_revision,
                n_steps: n_steps as u64,
                attempted,
                submitted: receipts.len() as u64,
                failing_step: failing,
                observation_error,
                observation_failures: failures,
                steps: receipts,
                observation_elapsed_ms,
                total_ms: 0,
            },
            screenshot,
        };
        let done = last.input == InputAction::Done;
        response.receipt.total_ms = now_ms().saturating_sub(accepted_at_ms);
        ledger.delivered(&last.outcome, &mut response, done, Some(last.step_index))?;
        Ok(response)
    }
}

impl Broker {
    /// `execute_program`: validates a whole program, then runs it exactly once.
    pub async fn execute_program(
        &self,
        session_id: &SessionId,
        request: ProgramRequest,
    ) -> Result<ProgramResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.execute_program(&session_id, request)
        })
        .await
    }
}

mod validate;

pub(crate) use validate::{AxContext, program_digest, to_screen, validate_steps};

#[cfg(test)]
mod tests;
