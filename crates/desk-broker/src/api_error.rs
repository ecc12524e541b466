//! The one mapping from [`BrokerError`] to an HTTP status and [`ErrorCode`].
//!
//! | status | codes |
//! |---|---|
//! | 400 | `invalid_action`, `invalid_request` |
//! | 401 | `unauthorized` (missing or invalid credential) |
//! | 403 | `unauthorized` (peer not admitted), `policy_invalid`, `profile_not_allowed` (the workspace policy refuses the lease) |
//! | 404 | `not_found` |
//! | 405 | `invalid_request` (method not allowed) |
//! | 400 | `invalid_params` (a program's step, named by index and field) |
//! | 409 | `action_sequence_conflict`, `invalid_state`, `lease_conflict` (at capacity or draining: with `Retry-After`), `checkpoint_required`, `control_busy`, `control_stopped`, `control_stale_generation`, `control_observe_only`, `accessibility_unavailable`, `ax_provider_busy` |
//! | 422 | `screenshot_unknown`, `screenshot_stale`, `point_outside_image`, `ax_observation_stale`, `ax_foreign_window`, `ax_not_actionable` (a semantic step refused before its input) |
//! | 422 | `approval_required` (the input would reach a policy high-risk control: nothing was sent) |
//! | 409 | `insufficient_data` (the accessibility data to check an input against the high-risk controls is missing: refused unverified, nothing was sent) |
//! | 501 | `unsupported` (a feature `GET /v1/capabilities` lists as not offered) |
//! | 403 | `clipboard_disabled` (the workspace policy's clipboard mode) |
//! | 422 | `clipboard_unavailable` (nothing changed) |
//! | 502 | `clipboard_outcome_unknown` (a clipboard write failed once asked; never retried) |
//! | 410 | `lease_expired` |
//! | 413 | `invalid_request` (body too large) |
//! | 422 | `checkpoint_failed`, `app_not_maximized`, `reset_unstable` |
//! | 429 | `session_busy` (the session's request queue is full: nothing was done) |
//! | 500 | `input_outcome_unknown` (fixed message naming the action index), `internal` |
//! | 502 | `desktop_failed`, `workspace_unverified` (the workspace measured at handoff failed a sandbox rule) |
//! | 503 | `sandbox_unavailable` (the kernel or bubblewrap refused the session sandbox, or its cgroup limits cannot be applied without `--unsafe-no-limits`: nothing ran); `journal_unavailable` (the action journal or the signed evidence journal cannot be written: nothing was done; or the session store cannot be written outside an action: the operation was not recorded) |
//!
//! 4xx answers carry the reason and are logged at debug level. 5xx answers carry a generic
//! message; the full error chain is logged at error level inside the request span.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use desk_contract::{ErrorBody, ErrorCode};
use desk_desktop::BackendError;
use desk_desktop::ProfileError;

use crate::error::BrokerError;

impl BrokerError {
    /// The status and code of this error. The single place that decides them.
    pub fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        match self {
            BrokerError::InvalidAction(_) | BrokerError::MalformedAction(_) => {
                (StatusCode::BAD_REQUEST, ErrorCode::InvalidAction)
            }
            BrokerError::InvalidRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest),
            BrokerError::BodyTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::InvalidRequest)
            }
            BrokerError::NotFound(_) | BrokerError::Profile(ProfileError::Unknown(_)) => {
                (StatusCode::NOT_FOUND, ErrorCode::NotFound)
            }
            BrokerError::SequenceConflict(_) => {
                (StatusCode::CONFLICT, ErrorCode::ActionSequenceConflict)
            }
            BrokerError::InvalidState { .. } => (StatusCode::CONFLICT, ErrorCode::InvalidState),
            BrokerError::LeaseConflict(_) | BrokerError::AtCapacity(_) => {
                (StatusCode::CONFLICT, ErrorCode::LeaseConflict)
            }
            BrokerError::CheckpointRequired(_) => {
                (StatusCode::CONFLICT, ErrorCode::CheckpointRequired)
            }
            BrokerError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            BrokerError::Forbidden(_) => (StatusCode::FORBIDDEN, ErrorCode::Unauthorized),
            BrokerError::PolicyInvalid(_) => (StatusCode::FORBIDDEN, ErrorCode::PolicyInvalid),
            BrokerError::ProfileNotAllowed(_) => {
                (StatusCode::FORBIDDEN, ErrorCode::ProfileNotAllowed)
            }
            BrokerError::LeaseExpired(_) => (StatusCode::GONE, ErrorCode::LeaseExpired),
            BrokerError::SessionKilled { .. } => (StatusCode::GONE, ErrorCode::SessionKilled),
            BrokerError::SessionBusy(_) => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::SessionBusy),
            BrokerError::CheckpointFailed(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::CheckpointFailed,
            ),
            BrokerError::ArtifactInvalid(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::ArtifactInvalid)
            }
            BrokerError::ResetUnstable(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::ResetUnstable)
            }
            BrokerError::AppNotMaximized(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::AppNotMaximized)
            }
            BrokerError::OutcomeUnknown { .. } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::InputOutcomeUnknown,
            ),
            BrokerError::Desktop {
                source: BackendError::SandboxUnavailable(_) | BackendError::LimitsUnavailable(_),
                ..
            } => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::SandboxUnavailable,
            ),
            BrokerError::Desktop {
                source: BackendError::WorkspaceUnverified(_),
                ..
            } => (StatusCode::BAD_GATEWAY, ErrorCode::WorkspaceUnverified),
            BrokerError::Desktop {
                source: BackendError::AccessibilityUnavailable(_),
                ..
            } => (StatusCode::CONFLICT, ErrorCode::AccessibilityUnavailable),
            BrokerError::Desktop {
                source: BackendError::AxStale(_),
                ..
            } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::AxObservationStale,
            ),
            BrokerError::Desktop {
                source: BackendError::AxForeignWindow(_),
                ..
            } => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::AxForeignWindow),
            BrokerError::Desktop {
                source: BackendError::AxNotActionable(_),
                ..
            } => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::AxNotActionable),
            BrokerError::Desktop {
                source: BackendError::AxProviderBusy(_),
                ..
            } => (StatusCode::CONFLICT, ErrorCode::AxProviderBusy),
            BrokerError::Desktop {
                source: BackendError::DestinationNotApp(_),
                ..
            } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::DestinationNotApp,
            ),
            BrokerError::Desktop {
                source: BackendError::DestinationProhibited(_),
                ..
            } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::DestinationProhibited,
            ),
            BrokerError::Desktop {
                source: BackendError::ResourceLimit(_),
                ..
            } => (StatusCode::BAD_GATEWAY, ErrorCode::ResourceLimit),
            BrokerError::Desktop { .. } => (StatusCode::BAD_GATEWAY, ErrorCode::DesktopFailed),
            BrokerError::JournalUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::JournalUnavailable,
            ),
            // The signed evidence journal cannot be written: refused like the action journal.
            BrokerError::Evidence { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::JournalUnavailable,
            ),
            BrokerError::Control { code, .. } => (control_status(*code), *code),
            BrokerError::Store { .. }
            | BrokerError::Io { .. }
            | BrokerError::Profile(_)
            | BrokerError::Json { .. }
            | BrokerError::Watchdog(_)
            | BrokerError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }

    /// The body sent to clients: the reason for 4xx, a fixed message for 5xx.
    pub fn to_body(&self) -> ErrorBody {
        let (status, code) = self.status_and_code();
        let message = if let BrokerError::Desktop {
            source: source @ BackendError::AccessibilityUnavailable(_),
            operation,
        } = self
        {
            format!("{source} (during {operation})")
        } else if !status.is_server_error() {
            self.to_string()
        } else {
            match self {
                BrokerError::Desktop {
                    source: BackendError::SandboxUnavailable(_),
                    operation,
                } => format!(
                    "this host cannot build the desktop's sandbox (during {operation}); the \
                     broker log says why. Containment is required unless serve runs with \
                     --unsafe-no-sandbox"
                ),
                // The controller and the kernel's error class (no paths), and the flag.
                BrokerError::Desktop {
                    source: source @ BackendError::LimitsUnavailable(_),
                    operation,
                } => format!("{source} (during {operation})"),
                // Rule ids only (fixed names, no paths): what the operator must mend.
                BrokerError::Desktop {
                    source: source @ BackendError::WorkspaceUnverified(_),
                    operation,
                } => format!("{} during {operation}", source),
                // These messages are built from the operation and index only, never a cause.
                BrokerError::OutcomeUnknown { .. }
                // Built by the broker from the operation and the worker's class of failure.
                | BrokerError::Control { .. }
                | BrokerError::Desktop { .. }
                | BrokerError::Evidence { .. }
                // Built from SQLite's error class only.
                | BrokerError::JournalUnavailable(_) => self.to_string(),
                _ => "internal error; see the broker log".to_string(),
            }
        };
        ErrorBody::new(code, message)
    }
}

/// The status of a control refusal: a malformed program is 400, a refused point 422, an
/// unsupported feature 501, and a control-state refusal 409.
fn control_status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidParams => StatusCode::BAD_REQUEST,
        ErrorCode::ScreenshotUnknown
        | ErrorCode::ScreenshotStale
        | ErrorCode::PointOutsideImage
        | ErrorCode::AxObservationStale
        | ErrorCode::AxForeignWindow
        | ErrorCode::AxNotActionable
        | ErrorCode::DestinationNotApp
        | ErrorCode::DestinationProhibited
        | ErrorCode::ApprovalRequired => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::Unsupported => StatusCode::NOT_IMPLEMENTED,
        ErrorCode::ClipboardDisabled => StatusCode::FORBIDDEN,
        ErrorCode::ClipboardUnavailable => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::ClipboardOutcomeUnknown => StatusCode::BAD_GATEWAY,
        _ => StatusCode::CONFLICT,
    }
}

fn error_chain(error: &BrokerError) -> String {
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

impl IntoResponse for BrokerError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if status.is_server_error() {
            tracing::error!(
                code = code.as_str(),
                error = error_chain(&self),
                "request failed"
            );
        } else {
            tracing::debug!(code = code.as_str(), error = %self, "request refused");
        }
        let mut response = (status, Json(self.to_body())).into_response();
        if matches!(self, BrokerError::AtCapacity(_)) {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(crate::health::RETRY_AFTER_SECS),
            );
        }
        response
    }
}
