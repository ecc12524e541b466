//! `execute_action`: validation, exactly-once journaling, execution, logging and the receipt.
//!
//! Order of checks: the action is validated against the session's display before anything else
//! (`invalid_action`, nothing sent; but `action_sequence_conflict` when its request id was
//! already used in the session, also for an action object that did not parse); then lease
//! liveness; then the journal by `request_id` (identical retry of a complete action → cached response with `idempotent_replay=true`;
//! unknown outcome → `input_outcome_unknown`; different content or index →
//! `action_sequence_conflict`); then the session state (`ready` only); then the expected index.
//! The intent is logged and journaled, never sent: the backend receives only the
//! [`desk_contract::InputAction`].
//!
//! Every durable record of an accepted action (journal, evidence, frame, event logs) is written
//! by the [`Ledger`](crate::ledger), in one fixed order with one fail-closed path.

use desk_contract::api::{ActionRequest, ActionResponse};
use desk_contract::{InputAction, validate_action};

use crate::broker::{Broker, Inner, screenshot};
use crate::door::{Door, Need};
use crate::error::BrokerError;
use crate::frames;
use crate::ids::{RequestId, SessionId};
use crate::journal::JournalStatus;
use crate::ledger::Answer;
use crate::program::{Plan, Ran};
use crate::step::step_receipt;
use crate::store::SessionRow;

/// SHA-256 of the RFC 8785 (JCS) bytes of `{expected_action_index, action}`: what a journal
/// row keeps to recognise a retried request id. Journals written with the earlier sorted-keys
/// JSON hold the same digests (the two encodings agree on every action: `tests.rs`).
pub(crate) fn request_digest(request: &ActionRequest) -> Result<String, BrokerError> {
    let mut content = serde_json::json!({
        "expected_action_index": request.expected_action_index,
        "action": request.action,
    });
    // Only when present, so that digests of unbound actions stay what they always were.
    if let (Some(id), Some(object)) = (&request.screenshot_id, content.as_object_mut()) {
        object.insert("screenshot_id".to_string(), serde_json::json!(id));
    }
    desk_evidence::canonical_sha256(&content)
        .map_err(|error| BrokerError::Internal(format!("failed to encode a request: {error}")))
}

impl Inner {
    /// A single action: a program of one step, through the same path ([`Inner::run_plan`]).
    /// Without a control token it acts only while nobody claimed the session's control.
    fn execute(
        &self,
        session_id: &SessionId,
        request: ActionRequest,
    ) -> Result<ActionResponse, BrokerError> {
        let started = std::time::Instant::now();
        self.enter(session_id, "execute_action", Need::Unchecked, |door| {
            self.execute_in(session_id, request, door, started)
        })
    }

    fn execute_in(
        &self,
        session_id: &SessionId,
        request: ActionRequest,
        door: Door<'_>,
        started: std::time::Instant,
    ) -> Result<ActionResponse, BrokerError> {
        let display = door.display();
        // Screen coordinates are checked at once; image coordinates only after the request id
        // is looked up, so that a retry replays even when its screenshot left the history.
        // `Err` names the screenshot whose geometry checks the action then.
        let checked = match &request.screenshot_id {
            None => Ok(validate_action(&request.action, display).map_err(|error| {
                self.conflict_or(session_id, &request.request_id, error.into())
            })?),
            Some(id) => Err(id.as_str()),
        };
        let request_id = RequestId::parse(&request.request_id)?;
        door.require(Need::Live)?;
        let session = door.session();
        let digest = request_digest(&request)?;
        if let Some(replayed) = self.replay::<ActionResponse>(
            session,
            &request_id,
            request.expected_action_index,
            &digest,
        )? {
            return Ok(replayed);
        }
        let dir = session.dir();
        let validated = match checked {
            Ok(validated) => validated,
            Err(id) => self
                .bound_to_screenshot(session_id, &dir, id, &request.action, display)
                .inspect_err(|refusal| {
                    self.count_refused(session_id, &request.request_id, refusal)
                })?,
        };
        let scope = door.admit(None)?;
        let (backend, display, session) = door.into_action(request.expected_action_index)?;
        let plan = Plan {
            request_id,
            expected_action_index: request.expected_action_index,
            digest,
            evidence_request: serde_json::to_value(&request)
                .map_err(BrokerError::json("encode an action for evidence"))?,
            journal_type: validated.action_type().as_str(),
            intent: validated.intent().to_string(),
            steps: vec![validated],
            scope,
        };
        let checks_us = started.elapsed().as_micros();
        let ran = self.run_plan(backend, session, &plan)?;
        let run_us = started.elapsed().as_micros() - checks_us;
        let Ran {
            ledger,
            action_index,
            accepted_at_ms,
            mut submitted,
            revoked,
            ..
        } = ran;
        let ledger = ledger.fence_kills()?;
        let Some(step) = submitted.pop() else {
            return Err(BrokerError::Internal(
                "an action ran without its step".to_string(),
            ));
        };
        // An outcome without a frame takes no sequence number: sequences name frames.
        let sequence = ledger.session().last_sequence + 1;
        let shot_started = std::time::Instant::now();
        let mut screenshot = match (&revoked, step.outcome.frame.as_ref()) {
            (None, Some(frame)) => Some(screenshot(frame, sequence)),
            _ => None,
        };
        if let Some(screenshot) = screenshot.as_mut() {
            self.controls
                .identify(session_id, &dir, screenshot, display)?;
        }
        let mut receipt = step_receipt(
            &step,
            action_index,
            accepted_at_ms,
            self.config.sandbox,
            self.config.limits_mode,
        );
        let shot_us = u64::try_from(shot_started.elapsed().as_micros()).unwrap_or(u64::MAX);
        receipt.observation_elapsed_ms = step.observation_ms(shot_us);
        if revoked.is_some() {
            // Stopped while the step ran: its observation belongs to a dead generation.
            receipt.observation_failures.push("stopped".to_string());
        }
        let mut response = ActionResponse {
            action_index,
            idempotent_replay: false,
            receipt,
            screenshot,
        };
        let done = step.input == InputAction::Done;
        let shot_us = started.elapsed().as_micros() - checks_us - run_us;
        ledger.delivered(&step.outcome, &mut response, done, None)?;
        tracing::debug!(
            %session_id,
            action_index,
            checks_us,
            run_us,
            shot_us,
            total_us = started.elapsed().as_micros(),
            "action timing: broker"
        );
        Ok(response)
    }

    /// `action`, whose coordinates are image pixels of screenshot `id`, mapped to the screen
    /// through that screenshot's geometry (it must be current: same control generation and
    /// target revision) and validated there.
    fn bound_to_screenshot(
        &self,
        session_id: &SessionId,
        dir: &desk_desktop::SessionDir,
        id: &str,
        action: &desk_contract::Action,
        display: desk_contract::DisplaySize,
    ) -> Result<desk_contract::ValidatedAction, BrokerError> {
        let scope = self.controls.scope_now(session_id, dir)?;
        let geometry = self.controls.geometry(session_id, dir, id, scope)?;
        let mapped = crate::program::to_screen(action, &geometry)?;
        Ok(validate_action(&mapped, display)?)
    }

    /// The session's directory must exist before any input: without it the action's frame and
    /// logs could not be written after the input reached the desktop. A missing one puts the
    /// session in `error` (its files are gone) and refuses the action with nothing sent.
    pub(crate) fn check_session_dir(&self, session: &SessionRow) -> Result<(), BrokerError> {
        let session_dir = session.dir();
        let dir = session_dir.path();
        match std::fs::metadata(dir) {
            Ok(metadata) if metadata.is_dir() => Ok(()),
            found => {
                let message = "the session directory is missing; its logs and frames are gone";
                tracing::error!(session_id = %session.id, dir = %dir.display(), "{message}");
                self.mark_error(&session.id, desk_contract::ErrorCode::Internal, message)?;
                let source = match found {
                    Err(error) => error,
                    Ok(_) => std::io::Error::other("not a directory"),
                };
                Err(BrokerError::io("find the session directory", dir)(source))
            }
        }
    }

    /// A refused action under a request id the session already used is
    /// `action_sequence_conflict` (the content differs, whatever it is); otherwise `refusal`.
    pub(crate) fn conflict_or(
        &self,
        session_id: &SessionId,
        request_id: &str,
        refusal: BrokerError,
    ) -> BrokerError {
        // A request id that is not valid was never journaled.
        let used = match RequestId::parse(request_id) {
            Ok(checked) => self.store.action_by_request(session_id, &checked),
            Err(_) => Ok(None),
        };
        match used {
            Ok(Some(entry)) => BrokerError::SequenceConflict(format!(
                "request_id {request_id:?} was already used for action {} with different content",
                entry.action_index
            )),
            Ok(None) => {
                self.count_refused(session_id, request_id, &refusal);
                refusal
            }
            Err(error) => error,
        }
    }

    /// The journaled answer to a reused `request_id`: the cached answer of an identical
    /// complete request, `input_outcome_unknown` for one in doubt, `action_sequence_conflict`
    /// for different content (also an action's request id reused for a program, and back);
    /// `None` for a new request id.
    pub(crate) fn replay<A: Answer + serde::de::DeserializeOwned>(
        &self,
        session: &SessionRow,
        request_id: &RequestId,
        expected_action_index: u64,
        digest: &str,
    ) -> Result<Option<A>, BrokerError> {
        let Some(entry) = self.store.action_by_request(&session.id, request_id)? else {
            return Ok(None);
        };
        if entry.request_digest != digest || entry.action_index != expected_action_index {
            let request_id = request_id.as_str();
            return Err(BrokerError::SequenceConflict(format!(
                "request_id {request_id:?} was already used for action {} with different content",
                entry.action_index
            )));
        }
        match (entry.status, entry.response) {
            (JournalStatus::Complete, Some(cached)) => {
                let mut response: A = serde_json::from_str(&cached)
                    .map_err(BrokerError::json("read a cached action response"))?;
                if let Some(screenshot) = response.screenshot_mut()
                    && !screenshot.has_image()
                {
                    frames::load(&session.dir(), screenshot)?;
                }
                response.set_replayed();
                Ok(Some(response))
            }
            _ => Err(BrokerError::OutcomeUnknown {
                action_index: entry.action_index,
                source: None,
            }),
        }
    }
}

impl Broker {
    /// An action whose object did not parse: `action_sequence_conflict` when `request_id` was
    /// already used in the session, else `refusal`. Nothing is sent either way.
    pub async fn refused_action(
        &self,
        session_id: &SessionId,
        request_id: String,
        refusal: BrokerError,
    ) -> BrokerError {
        let session_id = session_id.clone();
        let outcome = self
            .run(None, move |inner| {
                Ok(inner.conflict_or(&session_id, &request_id, refusal))
            })
            .await;
        outcome.unwrap_or_else(|error| error)
    }

    /// `execute_action`: validates and executes exactly one action.
    pub async fn execute(
        &self,
        session_id: &SessionId,
        request: ActionRequest,
    ) -> Result<ActionResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.execute(&session_id, request)
        })
        .await
    }
}
