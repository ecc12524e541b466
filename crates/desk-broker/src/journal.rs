//! The action journal: exactly-once bookkeeping for agent actions.
//!
//! Protocol, per action:
//! 1. `begin`: one committed transaction inserts the row as `pending` and advances the
//!    session's `next_action_index` (state `running`), before the backend sees the action.
//! 2. The backend executes.
//! 3. `complete` stores the response (the cached answer for replays) and the session's new
//!    state; `mark_unknown` records that input may have been sent without a known outcome;
//!    `discard` removes the row when the backend guarantees nothing was sent.
//!
//! At startup [`Store::recover_pending`] turns every `pending` row into `unknown` and its session
//! into `error` (`input_outcome_unknown`). Invariant: an `unknown` or `pending` action is never
//! executed again; retries of it get `input_outcome_unknown`.

use desk_contract::ErrorCode;
use rusqlite::{OptionalExtension, params};

use crate::error::BrokerError;
use crate::ids::{RequestId, SessionId};
use crate::session::Failure;
use crate::store::{SessionRow, Store, from_sql, save_session_on, session_on, to_sql};
use crate::util::now_ms;

/// A journal row's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JournalStatus {
    Pending,
    Complete,
    Unknown,
}

impl JournalStatus {
    fn as_str(self) -> &'static str {
        match self {
            JournalStatus::Pending => "pending",
            JournalStatus::Complete => "complete",
            JournalStatus::Unknown => "unknown",
        }
    }

    fn parse(text: &str) -> JournalStatus {
        match text {
            "complete" => JournalStatus::Complete,
            "pending" => JournalStatus::Pending,
            // Anything unexpected is treated as the safe answer: never replay.
            _ => JournalStatus::Unknown,
        }
    }
}

/// One journaled action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JournalEntry {
    pub(crate) session_id: SessionId,
    pub(crate) action_index: u64,
    pub(crate) request_id: RequestId,
    /// SHA-256 of the canonical JSON of `{expected_action_index, action}`.
    pub(crate) request_digest: String,
    pub(crate) action_type: String,
    pub(crate) intent: String,
    pub(crate) status: JournalStatus,
    pub(crate) response: Option<String>,
}

/// The message stored as `last_error` for a session recovered with an in-flight action.
pub(crate) fn recovered_message(action_index: u64) -> String {
    format!(
        "the broker stopped while action {action_index} was in flight; its input may have \
         reached the desktop and it will not be replayed"
    )
}

/// Why the store cannot be written, for SQLite errors that say the storage failed.
fn storage_failure(source: &rusqlite::Error) -> Option<&'static str> {
    Some(match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => "the disk is full",
        Some(rusqlite::ErrorCode::ReadOnly) => "it is read-only",
        Some(rusqlite::ErrorCode::SystemIoFailure) => {
            "a write failed (file size limit, full or failing storage)"
        }
        Some(rusqlite::ErrorCode::CannotOpen) => "it cannot be opened",
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "it is locked by another process"
        }
        _ => return None,
    })
}

/// A storage failure of an operation other than an action (lease, reset, screenshot,
/// checkpoint, release) as the typed `journal_unavailable`; other errors pass through.
pub(crate) fn store_unavailable(
    operation: &'static str,
) -> impl FnOnce(BrokerError) -> BrokerError {
    move |error| {
        let BrokerError::Store { source, .. } = &error else {
            return error;
        };
        let Some(why) = storage_failure(source) else {
            return error;
        };
        tracing::error!(operation, error = %source, "the session store cannot be written");
        BrokerError::JournalUnavailable(format!(
            "the session store cannot be written ({why}); {operation} was not recorded"
        ))
    }
}

/// Names a storage failure while journaling an action; other errors pass through.
fn journal_unavailable(error: BrokerError) -> BrokerError {
    let BrokerError::Store { source, .. } = &error else {
        return error;
    };
    let Some(why) = storage_failure(source) else {
        return error;
    };
    tracing::error!(error = %source, "the action journal cannot be written");
    BrokerError::JournalUnavailable(format!(
        "the action journal cannot be written ({why}); the action was refused and no input \
         was sent"
    ))
}

impl Store {
    pub(crate) fn action_by_request(
        &self,
        session_id: &SessionId,
        request_id: &RequestId,
    ) -> Result<Option<JournalEntry>, BrokerError> {
        self.lock()
            .prepare_cached(
                "SELECT action_index, request_digest, action_type, intent, status, response \
                 FROM actions WHERE session_id = ?1 AND request_id = ?2",
            )
            .and_then(|mut statement| {
                statement.query_row(params![session_id, request_id], |row| {
                    Ok(JournalEntry {
                        session_id: session_id.clone(),
                        action_index: from_sql(row.get(0)?),
                        request_id: request_id.clone(),
                        request_digest: row.get(1)?,
                        action_type: row.get(2)?,
                        intent: row.get(3)?,
                        status: JournalStatus::parse(&row.get::<_, String>(4)?),
                        response: row.get(5)?,
                    })
                })
            })
            .optional()
            .map_err(BrokerError::store("look up an action"))
    }

    /// Commits `entry` as `pending` together with `session` (already advanced by the caller).
    /// A journal that cannot be written (disk full, file size limit, read-only, I/O error) is
    /// [`BrokerError::JournalUnavailable`]; the transaction is rolled back and nothing changed.
    pub(crate) fn begin_action(
        &self,
        session: &SessionRow,
        entry: &JournalEntry,
    ) -> Result<(), BrokerError> {
        self.try_begin_action(session, entry)
            .map_err(journal_unavailable)
    }

    fn try_begin_action(
        &self,
        session: &SessionRow,
        entry: &JournalEntry,
    ) -> Result<(), BrokerError> {
        let mut connection = self.lock();
        let tx = connection
            .transaction()
            .map_err(BrokerError::store("journal an action"))?;
        let now = to_sql(now_ms());
        tx.prepare_cached(
            "INSERT INTO actions (session_id, action_index, request_id, request_digest, \
             action_type, intent, status, response, created_at_ms, updated_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8, ?8)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                entry.session_id,
                to_sql(entry.action_index),
                entry.request_id,
                entry.request_digest,
                entry.action_type,
                entry.intent,
                JournalStatus::Pending.as_str(),
                now,
            ])
        })
        .map_err(BrokerError::store("journal an action"))?;
        save_session_on(&tx, session)?;
        tx.commit().map_err(BrokerError::store("journal an action"))
    }

    fn finish_action(
        &self,
        session: &SessionRow,
        action_index: u64,
        status: JournalStatus,
        response: Option<&str>,
    ) -> Result<(), BrokerError> {
        let mut connection = self.lock();
        let tx = connection
            .transaction()
            .map_err(BrokerError::store("journal an outcome"))?;
        tx.prepare_cached(
            "UPDATE actions SET status = ?3, response = ?4, updated_at_ms = ?5 \
             WHERE session_id = ?1 AND action_index = ?2",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                session.id,
                to_sql(action_index),
                status.as_str(),
                response,
                to_sql(now_ms())
            ])
        })
        .map_err(BrokerError::store("journal an outcome"))?;
        save_session_on(&tx, session)?;
        tx.commit()
            .map_err(BrokerError::store("journal an outcome"))
    }

    /// Stores the response of a completed action with the session's new state.
    pub(crate) fn complete_action(
        &self,
        session: &SessionRow,
        action_index: u64,
        response: &str,
    ) -> Result<(), BrokerError> {
        self.finish_action(
            session,
            action_index,
            JournalStatus::Complete,
            Some(response),
        )
    }

    /// Records that the action's input may have been sent without a known outcome.
    pub(crate) fn mark_unknown(
        &self,
        session: &SessionRow,
        action_index: u64,
    ) -> Result<(), BrokerError> {
        self.finish_action(session, action_index, JournalStatus::Unknown, None)
    }

    /// Removes an action the backend guaranteed it never sent; `session` is rolled back.
    pub(crate) fn discard_action(
        &self,
        session: &SessionRow,
        action_index: u64,
    ) -> Result<(), BrokerError> {
        let mut connection = self.lock();
        let tx = connection
            .transaction()
            .map_err(BrokerError::store("discard an action"))?;
        tx.execute(
            "DELETE FROM actions WHERE session_id = ?1 AND action_index = ?2 AND status = 'pending'",
            params![session.id, to_sql(action_index)],
        )
        .map_err(BrokerError::store("discard an action"))?;
        save_session_on(&tx, session)?;
        tx.commit().map_err(BrokerError::store("discard an action"))
    }

    /// Turns every `pending` action into `unknown` and its session into `error`; returns the
    /// affected `(session_id, action_index)` pairs.
    pub(crate) fn recover_pending(&self) -> Result<Vec<(SessionId, u64)>, BrokerError> {
        let mut connection = self.lock();
        let tx = connection
            .transaction()
            .map_err(BrokerError::store("recover the journal"))?;
        let pending: Vec<(SessionId, u64)> = {
            let mut statement = tx
                .prepare("SELECT session_id, action_index FROM actions WHERE status = 'pending'")
                .map_err(BrokerError::store("recover the journal"))?;
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get::<_, SessionId>(0)?, from_sql(row.get(1)?)))
                })
                .map_err(BrokerError::store("recover the journal"))?;
            rows.collect::<Result<_, _>>()
                .map_err(BrokerError::store("recover the journal"))?
        };
        for (session_id, action_index) in &pending {
            tx.execute(
                "UPDATE actions SET status = 'unknown', updated_at_ms = ?3 \
                 WHERE session_id = ?1 AND action_index = ?2",
                params![session_id, to_sql(*action_index), to_sql(now_ms())],
            )
            .map_err(BrokerError::store("recover the journal"))?;
            if let Some(mut session) = session_on(&tx, session_id)? {
                session.lifecycle = session.lifecycle.fail(Failure::new(
                    ErrorCode::InputOutcomeUnknown,
                    recovered_message(*action_index),
                ));
                save_session_on(&tx, &session)?;
            }
        }
        tx.commit()
            .map_err(BrokerError::store("recover the journal"))?;
        Ok(pending)
    }
}

#[cfg(test)]
mod tests;
