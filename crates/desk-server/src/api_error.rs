//! The one mapping from a [`BrokerError`] to its HTTP status ([`status`]; the code is
//! desk-broker's [`BrokerError::code`]), and [`ApiError`], the answer every handler and
//! extractor refuses with.
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
use desk_contract::ErrorCode;

use desk_broker::BrokerError;

/// `Retry-After` on a lease refused at capacity or while draining, seconds.
const RETRY_AFTER_SECS: &str = "10";

/// The HTTP status of `error`: it follows the code ([`code_status`]) except for the few variants
/// that say more.
pub fn status(error: &BrokerError) -> StatusCode {
    match error {
        // Both `unauthorized`: a peer not admitted at all is 403, a bad credential 401.
        BrokerError::Forbidden(_) => StatusCode::FORBIDDEN,
        BrokerError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        BrokerError::Control { code, .. } => control_status(*code),
        _ => code_status(error.code()),
    }
}

/// A [`BrokerError`] on its way to the client: the answer of a refused or failed request.
#[derive(Debug)]
pub struct ApiError(pub BrokerError);

impl From<BrokerError> for ApiError {
    fn from(error: BrokerError) -> ApiError {
        ApiError(error)
    }
}

/// The status of an answer with `code` from any variant but `Control`, `Forbidden` and
/// `BodyTooLarge`.
fn code_status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidAction | ErrorCode::InvalidRequest | ErrorCode::InvalidParams => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::PolicyInvalid | ErrorCode::ProfileNotAllowed | ErrorCode::ClipboardDisabled => {
            StatusCode::FORBIDDEN
        }
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::LeaseExpired | ErrorCode::SessionKilled => StatusCode::GONE,
        ErrorCode::SessionBusy => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::CheckpointFailed
        | ErrorCode::ArtifactInvalid
        | ErrorCode::ResetUnstable
        | ErrorCode::AppNotMaximized
        | ErrorCode::ScreenshotUnknown
        | ErrorCode::ScreenshotStale
        | ErrorCode::PointOutsideImage
        | ErrorCode::AxObservationStale
        | ErrorCode::AxForeignWindow
        | ErrorCode::AxNotActionable
        | ErrorCode::DestinationNotApp
        | ErrorCode::DestinationProhibited
        | ErrorCode::ApprovalRequired
        | ErrorCode::ClipboardUnavailable => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::InputOutcomeUnknown | ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::SandboxUnavailable | ErrorCode::JournalUnavailable => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ErrorCode::WorkspaceUnverified
        | ErrorCode::ResourceLimit
        | ErrorCode::DesktopFailed
        | ErrorCode::ClipboardOutcomeUnknown => StatusCode::BAD_GATEWAY,
        ErrorCode::Unsupported => StatusCode::NOT_IMPLEMENTED,
        // action_sequence_conflict, invalid_state, checkpoint_required, lease_conflict,
        // control_*, accessibility_unavailable, ax_provider_busy, insufficient_data: a conflict
        // with the session's state.
        _ => StatusCode::CONFLICT,
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let ApiError(error) = self;
        let (status, code) = (status(&error), error.code());
        if status.is_server_error() {
            tracing::error!(
                code = code.as_str(),
                error = error_chain(&error),
                "request failed"
            );
        } else {
            tracing::debug!(code = code.as_str(), error = %error, "request refused");
        }
        let mut response = (status, Json(error.to_body())).into_response();
        if matches!(error, BrokerError::AtCapacity(_)) {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        response
    }
}
