//! The task-scoped clipboard (`GET` and `PUT /v1/sessions/{id}/clipboard`, desk-server's
//! `clipboard_routes.rs`): the session
//! display's CLIPBOARD as UTF-8 text through the desktop worker (`docs/control-session.md`,
//! "Clipboard").
//!
//! Order of checks, each refusal changing nothing: the session is live and handed off; the
//! workspace policy's clipboard mode allows the access (`none`: nothing, `read`: reads,
//! `read_write`: both; else `clipboard_disabled`); the limits hold (`invalid_params`:
//! `desk_contract::clipboard`); the control session admits the request (a read in observe mode
//! too, a write only in act mode). Then the session's turn and the desktop.
//!
//! Invariants: a write is asked of the desktop once and never retried; once asked, a failure
//! is `clipboard_outcome_unknown`. A read whose control generation or target changed while it
//! ran (a Stop) is discarded. Every access, refusals after the session was found included, is
//! one `clipboard` log line (lengths and codes, never text) and signed evidence
//! (`clipboard_access`); a write has its `requested` record before the desktop is asked.

use desk_contract::ErrorCode;
use desk_contract::clipboard::{
    ClipboardQuery, ClipboardText, ClipboardWriteRequest, ClipboardWritten, check_write, read_cap,
};
use desk_contract::control::ControlToken;
use desk_desktop::BackendError;
use desk_evidence::record::ClipboardAccess;
use desk_policy::ClipboardMode;

use crate::broker::{Broker, Inner};
use crate::door::Need;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::ledger::records;
use crate::store::SessionRow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Read,
    Write,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
        }
    }
}

fn refusal(code: ErrorCode, message: impl Into<String>) -> BrokerError {
    BrokerError::Control {
        code,
        message: message.into(),
    }
}

fn access(direction: Direction, outcome: &str) -> ClipboardAccess {
    ClipboardAccess {
        direction: direction.as_str().to_string(),
        outcome: outcome.to_string(),
        error_code: None,
        byte_length: None,
        sha256: None,
        truncated: None,
    }
}

/// Whether the policy's mode allows `direction`.
fn allowed(mode: Option<ClipboardMode>, direction: Direction) -> Result<(), BrokerError> {
    let allows = matches!(
        (mode, direction),
        (Some(ClipboardMode::ReadWrite), _) | (Some(ClipboardMode::Read), Direction::Read)
    );
    if allows {
        return Ok(());
    }
    let mode = match mode {
        Some(ClipboardMode::None) => "none",
        Some(ClipboardMode::Read) => "read",
        Some(ClipboardMode::ReadWrite) => "read_write",
        None => "refused",
    };
    Err(refusal(
        ErrorCode::ClipboardDisabled,
        format!(
            "the workspace policy's clipboard mode ({mode}) does not allow a clipboard {}",
            direction.as_str()
        ),
    ))
}

/// The client-facing error of a failed desktop clipboard call.
fn desktop_error(direction: Direction, error: BackendError) -> BrokerError {
    match error {
        BackendError::ClipboardUnavailable(message) => {
            refusal(ErrorCode::ClipboardUnavailable, message)
        }
        error if direction == Direction::Write && error.input_may_have_been_sent() => refusal(
            ErrorCode::ClipboardOutcomeUnknown,
            format!(
                "the clipboard write failed after the desktop was asked ({error}); whether the \
                 clipboard changed is unknown, and the write is never retried"
            ),
        ),
        error => BrokerError::Desktop {
            operation: match direction {
                Direction::Read => "read the clipboard",
                Direction::Write => "write the clipboard",
            },
            source: error,
        },
    }
}

impl Inner {
    /// The checks before the desktop is asked, in order; records a refusal.
    fn admit_clipboard(
        &self,
        session: &SessionRow,
        direction: Direction,
        limits: impl FnOnce() -> Result<(), BrokerError>,
        token: Option<&ControlToken>,
    ) -> Result<crate::control::Scope, BrokerError> {
        let session_id = &session.id;
        let dir = session.dir();
        let checked = allowed(self.policy.clipboard_mode(), direction)
            .and_then(|()| limits())
            .and_then(|()| match direction {
                Direction::Read => self.controls.admit_read(session_id, &dir, token),
                Direction::Write => self.controls.admit(session_id, &dir, token),
            });
        match checked {
            Ok(scope) => Ok(scope),
            Err(error) => {
                records::clipboard(self, session, access(direction, "refused"), Some(&error))?;
                Err(error)
            }
        }
    }

    fn clipboard_read(
        &self,
        session_id: &SessionId,
        query: &ClipboardQuery,
    ) -> Result<ClipboardText, BrokerError> {
        let cap = read_cap(query.max_output_bytes);
        self.enter(session_id, "clipboard_read", Need::Observe, |mut door| {
            let limits = || {
                cap.clone()
                    .map(|_| ())
                    .map_err(|error| refusal(ErrorCode::InvalidParams, error.to_string()))
            };
            let session = door.session().clone();
            let scope =
                self.admit_clipboard(&session, Direction::Read, limits, query.control.as_ref())?;
            let cap = cap.map_err(|error| refusal(ErrorCode::InvalidParams, error.to_string()))?;
            let result = door.desktop().and_then(|backend| {
                backend
                    .clipboard_read(cap)
                    .map_err(|error| desktop_error(Direction::Read, error))
            });
            self.clipboard_read_done(&session, scope, result)
        })
    }

    fn clipboard_read_done(
        &self,
        session: &SessionRow,
        scope: crate::control::Scope,
        result: Result<ClipboardText, BrokerError>,
    ) -> Result<ClipboardText, BrokerError> {
        let session_id = &session.id;
        // A Stop (or a new generation or target) while the read ran discards its result.
        let result = result.and_then(|text| {
            self.controls
                .recheck(session_id, &session.dir(), scope)
                .map(|()| text)
        });
        match result {
            Ok(text) => {
                let mut record = access(Direction::Read, "done");
                record.byte_length = Some(text.byte_length);
                record.sha256 = Some(desk_evidence::sha256_hex(text.text.as_bytes()));
                record.truncated = Some(text.truncated);
                records::clipboard(self, session, record, None)?;
                Ok(text)
            }
            Err(error) => {
                self.fail_if_desktop_died(session_id, &error);
                records::clipboard(
                    self,
                    session,
                    access(Direction::Read, "failed"),
                    Some(&error),
                )?;
                Err(error)
            }
        }
    }

    fn clipboard_write(
        &self,
        session_id: &SessionId,
        request: &ClipboardWriteRequest,
    ) -> Result<ClipboardWritten, BrokerError> {
        let limits = || {
            check_write(&request.text)
                .map_err(|error| refusal(ErrorCode::InvalidParams, error.to_string()))
        };
        self.enter(session_id, "clipboard_write", Need::Observe, |mut door| {
            let session = door.session().clone();
            self.admit_clipboard(&session, Direction::Write, limits, request.control.as_ref())?;
            self.clipboard_write_in(&session, request, door.desktop())
        })
    }

    fn clipboard_write_in(
        &self,
        session: &SessionRow,
        request: &ClipboardWriteRequest,
        desktop: Result<&mut dyn desk_desktop::DesktopBackend, BrokerError>,
    ) -> Result<ClipboardWritten, BrokerError> {
        let session_id = &session.id;
        let byte_length = request.text.len() as u64;
        let sha256 = desk_evidence::sha256_hex(request.text.as_bytes());
        let described = |outcome: &str| {
            let mut record = access(Direction::Write, outcome);
            record.byte_length = Some(byte_length);
            record.sha256 = Some(sha256.clone());
            record
        };
        // Evidence first: a write the journal cannot record is not asked of the desktop.
        records::clipboard_requested(self, session, described("requested"))?;
        let result = desktop.and_then(|backend| {
            backend
                .clipboard_write(&request.text)
                .map_err(|error| desktop_error(Direction::Write, error))
        });
        match result {
            Ok(written) => {
                records::clipboard(self, session, described("done"), None)?;
                Ok(written)
            }
            Err(error) => {
                self.fail_if_desktop_died(session_id, &error);
                let outcome = match error.code() {
                    ErrorCode::ClipboardOutcomeUnknown => "unknown",
                    _ => "failed",
                };
                records::clipboard(self, session, described(outcome), Some(&error))?;
                Err(error)
            }
        }
    }
}

impl Broker {
    /// `GET /v1/sessions/{id}/clipboard`.
    pub async fn clipboard_read(
        &self,
        session_id: &SessionId,
        query: ClipboardQuery,
    ) -> Result<ClipboardText, BrokerError> {
        let id = session_id.clone();
        self.run(Some(id.clone()), move |inner| {
            inner.clipboard_read(&id, &query)
        })
        .await
    }

    /// `PUT /v1/sessions/{id}/clipboard`.
    pub async fn clipboard_write(
        &self,
        session_id: &SessionId,
        request: ClipboardWriteRequest,
    ) -> Result<ClipboardWritten, BrokerError> {
        let id = session_id.clone();
        self.run(Some(id.clone()), move |inner| {
            inner.clipboard_write(&id, &request)
        })
        .await
    }
}

#[cfg(test)]
mod tests;
