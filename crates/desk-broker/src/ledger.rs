//! The ledger: the one place that writes the durable records of an action, always in this order:
//!
//! 1. journal `pending` (SQLite, with the session advanced to `running`) — [`Ledger::open`];
//! 2. evidence `action_accepted` — still in [`Ledger::open`]; without it the row is discarded
//!    and nothing is sent;
//! 3. (input: the caller runs the backend)
//! 4. the frame file, 5. the event logs, 6. the evidence receipt, 7. journal `complete` —
//!    [`Ledger::delivered`].
//!
//! Disk waits (`docs/evidence.md`, "Disk waits"): steps 1 and 2 are written at once and both
//! are durable before input; the event logs (5) are written, then flushed in one durable batch
//! with the receipt (6) that digests them, while the frame file (4, not flushed: `frames.rs`)
//! is written beside them on a second thread; the journal row (7) commits after both
//! returned, so it is still last. Three serialized waits for six flushes. A program's earlier
//! steps' logs ([`Ledger::log_step`]) join its exit's batch (each file flushed once). The
//! census before input runs beside the waits of steps 1 and 2 (`program.rs`).
//!
//! Exits: [`Ledger::not_injected`] (the backend sent nothing: receipt, then the row is
//! discarded and the index given back), [`Ledger::in_doubt`] (input may have been sent: receipt,
//! then `unknown` and the session `error`). Once input was delivered the action counts: a failed
//! frame file (step 4, `frame_store`), event-log write (step 5, `event_log`) or evidence receipt
//! (step 6, `evidence`) is an observation failure named in the receipt's `observation_failures`,
//! and the session continues. Before its records are written the ledger fences off kills
//! ([`Ledger::fence_kills`]): an action a kill cut is closed in doubt without new records (a
//! kill past `KILL_FENCE_BOUND` is caught again before step 6, [`Ledger::delivered`]).
//! Exactly-once rests on the journal (step 7), not on the evidence:
//! an identical retry replays the cached response and sends nothing. A frame that could not be
//! stored is cached inside the journal row instead, so the replay still carries it; an action
//! whose receipt could not be written stays open in the evidence chain (accepted, never closed).
//!
//! Over 400 lines: every step and every exit of one action's records stays in this one file, so
//! their order (and what each exit leaves on disk) reads in one place.

use std::time::Instant;

use desk_contract::ErrorCode;
use desk_contract::api::ActionResponse;
use desk_contract::control::ProgramResponse;
use desk_contract::desktop::ActionOutcome;
use desk_contract::events::Origin;
use desk_desktop::BackendError;

use crate::broker::Inner;
use crate::error::BrokerError;
use crate::evidence::{self, ActionEnd};
use crate::frames;
use crate::ids::RequestId;
use crate::journal::{JournalEntry, JournalStatus};
use crate::logs::{EventLogs, FrameTiming, Written};
use crate::session::{Failure, Lifecycle};
use crate::store::SessionRow;
use desk_contract::shot::CarriesShot;
pub(crate) mod records;

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The answer to an accepted request (a single action's or a program's), as the ledger
/// stores and caches it.
pub(crate) trait Answer: CarriesShot + Clone {
    /// Where failed observations are named.
    fn observation_failures(&mut self) -> &mut Vec<String>;
    /// Marks a replayed answer.
    fn set_replayed(&mut self);
}

impl Answer for ActionResponse {
    fn observation_failures(&mut self) -> &mut Vec<String> {
        &mut self.receipt.observation_failures
    }
    fn set_replayed(&mut self) {
        self.idempotent_replay = true;
    }
}

impl Answer for ProgramResponse {
    fn observation_failures(&mut self) -> &mut Vec<String> {
        &mut self.receipt.observation_failures
    }
    fn set_replayed(&mut self) {
        self.idempotent_replay = true;
    }
}

/// What an accepted action is journaled as.
pub(crate) struct Accepted<'a> {
    pub(crate) request_id: &'a RequestId,
    /// The request as received, for its digest in the signed evidence.
    pub(crate) request: serde_json::Value,
    pub(crate) request_digest: String,
    /// `click`, ... for a single action, `program` for a program.
    pub(crate) action_type: &'a str,
    pub(crate) intent: &'a str,
}

/// How steps 5 and 6 of a delivered action ended ([`Ledger::receipt_batch`]).
enum Batch {
    /// The logs and the receipt were written (each failure named apart); how long each took.
    Closed {
        event_logs_us: u64,
        receipt_batch_us: u64,
    },
    /// A kill cut the action while its records were written: it closes in doubt, why.
    Cut(String),
}

/// The records of one accepted action, open until one of its exits.
pub(crate) struct Ledger<'a> {
    inner: &'a Inner,
    session: SessionRow,
    action_index: u64,
    /// The shared hold on the session's kill lock from [`Ledger::fence_kills`], released with
    /// the ledger.
    fence: Option<std::fs::File>,
    /// The input logs of a program's earlier steps ([`Ledger::log_step`]), written and not yet
    /// flushed: the exit's receipt flushes them in its durable batch.
    logged: std::sync::Mutex<Vec<Written>>,
}

impl<'a> Ledger<'a> {
    /// Steps 1 and 2: journals the action `pending` with `session` moved to `running`
    /// (`running` from [`Lifecycle::accept`]), then writes `action_accepted`. On any failure
    /// nothing was sent and the session is as it was.
    pub(crate) fn open(
        inner: &'a Inner,
        mut session: SessionRow,
        running: Lifecycle,
        action_index: u64,
        accepted: Accepted<'_>,
    ) -> Result<Ledger<'a>, BrokerError> {
        session.lifecycle = running;
        inner.renew(&mut session);
        let entry = JournalEntry {
            session_id: session.id.clone(),
            action_index,
            request_id: accepted.request_id.clone(),
            request_digest: accepted.request_digest,
            action_type: accepted.action_type.to_string(),
            intent: accepted.intent.to_string(),
            status: JournalStatus::Pending,
            response: None,
        };
        // Steps 1 and 2 run at once (`desk_evidence::durable::join`): both are durable before
        // this returns, so before any input; neither needs the other on disk first. A crash
        // between them leaves either a `pending` row (the restart closes it in doubt; nothing
        // was sent) or an `action_accepted` without a row (the next acceptance at that index
        // withdraws it with `not_injected`), the same two states the sequential order could
        // leave.
        let started = Instant::now();
        let ((stored, begin_action_us), (evidenced, evidence_accepted_us)) =
            desk_evidence::durable::join(
                || {
                    let result = inner.store.begin_action(&session, &entry);
                    (result, micros(started))
                },
                || {
                    let result = evidence::action_accepted(
                        inner.evidence(),
                        &session,
                        action_index,
                        accepted.request_id.as_str(),
                        &accepted.request,
                        accepted.action_type,
                        accepted.intent,
                    );
                    (result, micros(started))
                },
            );
        let mut ledger = Ledger {
            inner,
            session,
            action_index,
            fence: None,
            logged: std::sync::Mutex::new(Vec::new()),
        };
        match (stored, evidenced) {
            (Ok(()), Ok(())) => {}
            (Ok(()), Err(error)) => {
                ledger.session.lifecycle = ledger.session.lifecycle.withdraw()?;
                inner.store.discard_action(&ledger.session, action_index)?;
                return Err(error);
            }
            (Err(error), evidenced) => {
                // No row: nothing will be sent. An `action_accepted` that did get written is
                // withdrawn now (best effort; the next acceptance would withdraw it too).
                if evidenced.is_ok() {
                    let _ = evidence::action_receipt(
                        inner.evidence(),
                        &ledger.session,
                        action_index,
                        ActionEnd::NotInjected {
                            error_code: error.code().as_str(),
                        },
                    );
                }
                return Err(error);
            }
        }
        tracing::debug!(
            session_id = %ledger.session.id,
            action_index,
            begin_action_us,
            evidence_accepted_us,
            "action timing: accepted"
        );
        Ok(ledger)
    }

    /// The session as journaled (state `running`).
    pub(crate) fn session(&self) -> &SessionRow {
        &self.session
    }

    /// The backend refused before sending anything: a `not injected` receipt (without it the
    /// next acceptance withdraws this one), the row discarded, the index given back.
    pub(crate) fn not_injected(mut self, error: BackendError) -> BrokerError {
        let error = BrokerError::Desktop {
            operation: "execute_action",
            source: error,
        };
        let _ = evidence::action_receipt(
            self.inner.evidence(),
            &self.session,
            self.action_index,
            ActionEnd::NotInjected {
                error_code: error.code().as_str(),
            },
        );
        let discarded = self.session.lifecycle.withdraw().and_then(|ready| {
            self.session.lifecycle = ready;
            self.inner
                .store
                .discard_action(&self.session, self.action_index)
        });
        match discarded {
            Ok(()) => error,
            Err(failure) => failure,
        }
    }

    /// A control recheck refused the first step after acceptance (a Stop or a new generation
    /// landed in between): nothing was sent; handled like [`Ledger::not_injected`], answering
    /// `refusal`.
    pub(crate) fn withdrawn(mut self, refusal: BrokerError) -> BrokerError {
        let code = refusal.code();
        let _ = evidence::action_receipt(
            self.inner.evidence(),
            &self.session,
            self.action_index,
            ActionEnd::NotInjected {
                error_code: code.as_str(),
            },
        );
        let discarded = self.session.lifecycle.withdraw().and_then(|ready| {
            self.session.lifecycle = ready;
            self.inner
                .store
                .discard_action(&self.session, self.action_index)
        });
        match discarded {
            Ok(()) => refusal,
            Err(failure) => failure,
        }
    }

    /// Logs the input of step `step_index` of a program that is not its last submitted step
    /// (its frame is not handed out: its inputs wait for the final frame's row). Written now,
    /// flushed with the receipt of the program's exit ([`Ledger::delivered`],
    /// [`Ledger::in_doubt`]) in one durable batch. A failed write is named in `failures`; the
    /// step counts.
    pub(crate) fn log_step(
        &self,
        outcome: &ActionOutcome,
        step_index: u64,
        failures: &mut Vec<String>,
    ) {
        match EventLogs::new(&self.session.dir()).write_step(
            outcome,
            Origin::Action,
            Some(self.action_index),
            Some(step_index),
            None,
        ) {
            Ok(written) => self.logged_steps().push(written),
            Err(error) => {
                tracing::error!(
                    session_id = %self.session.id,
                    action_index = self.action_index,
                    step_index,
                    %error,
                    "a program step's input log failed; the step counts"
                );
                if !failures.iter().any(|name| name == "event_log") {
                    failures.push("event_log".to_string());
                }
            }
        }
    }

    /// The logs [`Ledger::log_step`] wrote and no receipt has flushed yet.
    fn logged_steps(&self) -> std::sync::MutexGuard<'_, Vec<Written>> {
        self.logged
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fences off kills until the ledger is closed (a shared hold on the kill lock,
    /// `kill::fence`), then refuses when a kill came while the action ran (its tombstone
    /// exists): the action is then closed in doubt, writing no log row or frame, because the
    /// kill already kept the session's logs and removed its directory; what reached the
    /// desktop before the kill is unknown. Called before an action's records are written.
    pub(crate) fn fence_kills(mut self) -> Result<Ledger<'a>, BrokerError> {
        let layout = self.inner.config.layout();
        self.fence = crate::kill::fence(&layout, &self.session.id);
        match crate::kill::read_tombstone(&layout, &self.session.id) {
            None => Ok(self),
            Some(tombstone) => Err(self.in_doubt(BackendError::OutcomeUnknown(format!(
                "the session was killed while the action ran: {}",
                tombstone.reason
            )))),
        }
    }

    /// Input may have been sent without a known outcome: an `in doubt` receipt (best effort),
    /// the row `unknown`, the session `error` with `input_outcome_unknown`.
    pub(crate) fn in_doubt(mut self, error: BackendError) -> BrokerError {
        let logged = std::mem::take(&mut *self.logged_steps());
        let logs = Written::durable_all(&logged);
        let (_, flushed) = evidence::action_receipt_alongside(
            self.inner.evidence(),
            &self.session,
            self.action_index,
            ActionEnd::InDoubt,
            &logs,
        );
        if let Err(error) = flushed {
            tracing::error!(session_id = %self.session.id, %error, "failed to flush the input logs of an action in doubt");
        }
        let failure = BrokerError::OutcomeUnknown {
            action_index: self.action_index,
            source: Some(error),
        };
        self.session.lifecycle = self.session.lifecycle.fail(Failure::new(
            ErrorCode::InputOutcomeUnknown,
            failure.to_string(),
        ));
        match self
            .inner
            .store
            .mark_unknown(&self.session, self.action_index)
        {
            Ok(()) => failure,
            Err(store_error) => store_error,
        }
    }

    /// Names a failed observation of a delivered action in its receipt; the action counts.
    fn observation_failed(&self, response: &mut impl Answer, id: &str, error: &BrokerError) {
        tracing::error!(
            session_id = %self.session.id,
            action_index = self.action_index,
            observation = id,
            %error,
            "an observation of a delivered action failed; the action counts"
        );
        response.observation_failures().push(id.to_string());
    }

    /// Steps 5 and 6 of a delivered action: its input logs written, then flushed in one
    /// durable batch with the receipt that digests them (and the earlier steps' logs of a
    /// program). A failed log write, flush or receipt is pushed to `failures` (`event_log`,
    /// `evidence`); the action still counts. A kill that came past `kill::KILL_FENCE_BOUND`
    /// is [`Batch::Cut`]: the last step's logs are flushed and no receipt is written.
    fn receipt_batch(
        &self,
        outcome: &ActionOutcome,
        step_index: Option<u64>,
        timing: Option<FrameTiming>,
        screenshot_sha256: Option<&str>,
        failures: &mut Vec<(&'static str, BrokerError)>,
    ) -> Batch {
        let logs_started = Instant::now();
        // Written now, flushed below with the receipt that digests them (one durable batch).
        let written = match EventLogs::new(&self.session.dir()).write_step(
            outcome,
            Origin::Action,
            Some(self.action_index),
            step_index,
            timing,
        ) {
            Ok(written) => written,
            Err(error) => {
                failures.push(("event_log", error));
                Written::default()
            }
        };
        let event_logs_us = micros(logs_started);
        // A kill past kill::KILL_FENCE_BOUND did not wait for this broker: in doubt, not complete.
        let layout = self.inner.config.layout();
        if let Some(cut) = crate::kill::read_tombstone(&layout, &self.session.id) {
            // in_doubt flushes the earlier steps' logs with its receipt; these are the last's.
            if let Err(error) = written.sync() {
                tracing::error!(session_id = %self.session.id, %error, "failed to flush the input logs of an action a kill cut");
            }
            return Batch::Cut(format!(
                "killed while its records were written: {}",
                cut.reason
            ));
        }
        let receipt_started = Instant::now();
        let logged = std::mem::take(&mut *self.logged_steps());
        let logs = Written::durable_all(logged.iter().chain(std::iter::once(&written)));
        let (receipt, logs_flushed) = evidence::action_receipt_alongside(
            self.inner.evidence(),
            &self.session,
            self.action_index,
            ActionEnd::Delivered {
                settle_outcome: outcome.settle.outcome.as_str(),
                screenshot_sha256,
            },
            &logs,
        );
        if let Err(error) = logs_flushed
            && !failures.iter().any(|(id, _)| *id == "event_log")
        {
            failures.push(("event_log", crate::logs::flush_failed(error)));
        }
        if let Err(error) = receipt {
            // The journal below still makes the action exactly-once; the evidence chain keeps
            // it open (accepted, no receipt), which is what an auditor should see.
            failures.push(("evidence", error));
        }
        Batch::Closed {
            event_logs_us,
            receipt_batch_us: micros(receipt_started),
        }
    }

    /// Steps 4–7 for a delivered action whose answer is `response` (its screenshot carries the
    /// bytes of `outcome.frame`). `done` ends the session's actions. The input counts: a failed
    /// frame file, event-log write or evidence receipt is named in the receipt's
    /// `observation_failures` (`frame_store`, `event_log`, `evidence`) and the session
    /// continues. Only a failed journal commit (step 7) is returned.
    /// `step_index` names the step of a program whose outcome this is (its input records carry
    /// it); `None` for a single action.
    pub(crate) fn delivered(
        mut self,
        outcome: &ActionOutcome,
        response: &mut impl Answer,
        done: bool,
        step_index: Option<u64>,
    ) -> Result<(), BrokerError> {
        let started = Instant::now();
        let session_dir = self.session.dir();
        // Without a frame (the worker named `capture` or `encode`) there is nothing to store.
        let shot = response
            .screenshot()
            .map(|screenshot| screenshot.sequence)
            .zip(outcome.frame.as_ref());
        let screenshot_sha256 = response
            .screenshot()
            .map(|screenshot| screenshot.sha256.clone());
        let timing = shot.map(|(sequence, frame)| {
            let handoff_ms = self.session.handoff_ms.unwrap_or(frame.captured_at_ms);
            FrameTiming {
                sequence,
                captured_at_ms: frame.captured_at_ms,
                handoff_ms,
                previous_frame_ms: self.session.last_frame_ms.unwrap_or(handoff_ms),
            }
        });
        // Step 4 (the frame file, which is not flushed: `frames.rs`) is written beside steps 5
        // and 6 (the logs and the durable batch of the receipt that digests them): neither
        // reads the other, and both end before the row (step 7).
        // The batch, the longer of the two, runs on this thread: a busy machine delays the
        // spawned thread's start, not the answer's path.
        let ((batch, failures, batch_us), (frame_stored, frame_store_us)) =
            desk_evidence::durable::join(
                || {
                    let mut failures = Vec::new();
                    let batch = self.receipt_batch(
                        outcome,
                        step_index,
                        timing,
                        screenshot_sha256.as_deref(),
                        &mut failures,
                    );
                    (batch, failures, micros(started))
                },
                || {
                    let stored = match shot {
                        Some((sequence, frame)) => {
                            frames::store(&session_dir, sequence, &frame.png)
                        }
                        None => Ok(()),
                    };
                    (stored, micros(started))
                },
            );
        // Named in the order the records are listed: frame, logs, evidence.
        if let Err(error) = &frame_stored {
            self.observation_failed(response, "frame_store", error);
        }
        for (id, error) in &failures {
            self.observation_failed(response, id, error);
        }
        let (event_logs_us, receipt_batch_us) = match batch {
            Batch::Closed {
                event_logs_us,
                receipt_batch_us,
            } => (event_logs_us, receipt_batch_us),
            Batch::Cut(why) => return Err(self.in_doubt(BackendError::OutcomeUnknown(why))),
        };
        // A replay reads the frame file. The raw PNG (`png`) is never serialized, so the row
        // holds no image unless that file failed: then the row keeps it, as base64.
        if frame_stored.is_err()
            && let Some(screenshot) = response.screenshot_mut()
            && screenshot.png_base64.is_empty()
            && let Some(png) = &screenshot.png
        {
            screenshot.png_base64 = desk_contract::b64::encode(&png.0);
        }
        let cached =
            serde_json::to_string(&*response).map_err(BrokerError::json("cache an action"))?;
        self.session.lifecycle = self.session.lifecycle.complete(done)?;
        if let Some(timing) = timing {
            self.session.last_sequence = timing.sequence;
            self.session.last_frame_ms = Some(timing.captured_at_ms);
        }
        let commit_started = Instant::now();
        self.inner
            .store
            .complete_action(&self.session, self.action_index, &cached)?;
        tracing::debug!(
            session_id = %self.session.id,
            action_index = self.action_index,
            records_us = micros(started),
            frame_store_us,
            event_logs_us,
            receipt_batch_us,
            batch_us,
            cache_commit_us = micros(commit_started),
            "action timing: delivered"
        );
        Ok(())
    }
}
