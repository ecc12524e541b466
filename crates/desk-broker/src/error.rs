//! `BrokerError`: every way a broker operation fails, and its [`desk_contract::ErrorCode`]
//! ([`BrokerError::code`], one `match`). The HTTP status lives with the server (desk-server's
//! `api_error.rs`), which follows the code and a few variants.
//!
//! Variants that map to 4xx carry a reason meant for the client; variants that map to 5xx carry
//! their cause as a `#[source]` that is logged, never sent.

use std::path::PathBuf;

use desk_contract::{ActionError, ErrorBody, ErrorCode};
use desk_desktop::{BackendError, ProfileError};

/// A broker failure.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// The action failed validation; nothing reached the desktop.
    #[error(transparent)]
    InvalidAction(#[from] ActionError),
    /// The action JSON could not be parsed into a known action; nothing reached the desktop.
    #[error("invalid action: {0}")]
    MalformedAction(String),
    /// The request body or parameters are malformed.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The request body exceeds the size limit.
    #[error("invalid request: body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// No such route, session or profile.
    #[error("{0} not found")]
    NotFound(String),
    /// A request id was reused for different content, or the index is not the next one.
    #[error("{0}")]
    SequenceConflict(String),
    /// The operation is not allowed in the session's state.
    #[error("{operation} is not allowed: {reason}")]
    InvalidState {
        /// The refused operation.
        operation: &'static str,
        /// Why, naming the state.
        reason: String,
    },
    /// The lease identity is held with different parameters, or capacity is exhausted.
    #[error("{0}")]
    LeaseConflict(String),
    /// No lease is admitted now: the sessions are at `max_sessions`, the memory budget is
    /// spent, or the broker drains (`health.rs`). 409 `lease_conflict` with `Retry-After`;
    /// nothing was leased.
    #[error("{0}")]
    AtCapacity(String),
    /// The request carries no valid credential for what it asks (401 `unauthorized`). The
    /// message never contains the credential.
    #[error("{0}")]
    Unauthorized(String),
    /// The connection's peer is not admitted at all (403 `unauthorized`).
    #[error("{0}")]
    Forbidden(String),
    /// The session's request queue is full (429 `session_busy`); nothing was done.
    #[error("{0}")]
    SessionBusy(String),
    /// The session was killed (watchdog or kill switch); `reason` says why.
    #[error("session {session_id} was killed: {reason}")]
    SessionKilled {
        /// The session.
        session_id: String,
        /// Why (the limit reached, or the operator's reason).
        reason: String,
    },
    /// The session's lease expired.
    #[error("the lease of session {0} expired")]
    LeaseExpired(String),
    /// The artifact was requested before a valid checkpoint.
    #[error("{0}")]
    CheckpointRequired(String),
    /// The checkpoint could not prove a saved change.
    #[error("checkpoint failed: {0}")]
    CheckpointFailed(String),
    /// The saved artifact failed its format's validator; no checkpoint was recorded.
    #[error("the saved artifact is not valid: {0}")]
    ArtifactInvalid(String),
    /// The app's window was not maximized at handoff.
    #[error("app window was not maximized at handoff: {0}")]
    AppNotMaximized(String),
    /// The handoff's first frame did not settle within reset's settle waits.
    #[error("the handoff screen did not settle: {0}")]
    ResetUnstable(String),
    /// Input of an action may have reached the desktop, but its outcome is unknown.
    #[error(
        "input of action {action_index} may have reached the desktop but its outcome is \
         unknown; it is never replayed"
    )]
    OutcomeUnknown {
        /// The action's index.
        action_index: u64,
        /// The backend failure, when this request saw it.
        #[source]
        source: Option<BackendError>,
    },
    /// The desktop failed; nothing ambiguous happened.
    #[error("desktop failed during {operation}")]
    Desktop {
        /// What the broker was doing.
        operation: &'static str,
        /// The backend failure.
        #[source]
        source: BackendError,
    },
    /// The SQLite store failed.
    #[error("failed to {operation} in the session store")]
    Store {
        /// What the broker was doing.
        operation: &'static str,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// The action journal cannot be written (disk full, file size limit, read-only); the
    /// action was refused before any input. The message says why.
    #[error("{0}")]
    JournalUnavailable(String),
    /// A file operation failed.
    #[error("failed to {operation} {path}")]
    Io {
        /// What the broker was doing.
        operation: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A profile could not be prepared.
    #[error("failed to prepare the app profile")]
    Profile(#[source] ProfileError),
    /// A stored value could not be (de)serialized.
    #[error("failed to {operation}")]
    Json {
        /// What the broker was doing.
        operation: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// Signed evidence could not be written; what depended on it (for an action: its input)
    /// did not happen. The cause is logged, never sent.
    #[error("failed to write the signed evidence of {operation}; nothing depending on it was done")]
    Evidence {
        /// The refused operation.
        operation: &'static str,
        /// The evidence failure (boxed: it is large and rare).
        #[source]
        source: Box<desk_evidence::EvidenceError>,
    },
    /// The workspace policy in force cannot be used (unsigned, altered, expired, not yet valid,
    /// failing lint, or stating what this broker cannot enforce); nothing was leased.
    #[error("workspace policy refused: {0}")]
    PolicyInvalid(String),
    /// The workspace policy does not allow the profile asked for; nothing was leased.
    #[error("{0}")]
    ProfileNotAllowed(String),
    /// A control-session, program or screenshot-geometry refusal (`invalid_params`,
    /// `control_*`, `screenshot_*`, `point_outside_image`, `unsupported`); nothing was sent.
    #[error("{message}")]
    Control {
        /// The stable code.
        code: desk_contract::ErrorCode,
        /// Why, for the client.
        message: String,
    },
    /// The watchdog's readback channel failed or answered with something unverified (no
    /// socket, a refusal, a bad signature, a nonce not echoed); the message says which.
    #[error("watchdog {0}")]
    Watchdog(String),
    /// An invariant broke or a task panicked; details are logged.
    #[error("internal error: {0}")]
    Internal(String),
}

impl BrokerError {
    /// The stable code of this error: the single place that decides it. (Its HTTP status is
    /// desk-server's business, `api_error.rs`.)
    pub fn code(&self) -> ErrorCode {
        match self {
            BrokerError::InvalidAction(_) | BrokerError::MalformedAction(_) => {
                ErrorCode::InvalidAction
            }
            BrokerError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            BrokerError::BodyTooLarge { .. } => ErrorCode::InvalidRequest,
            BrokerError::NotFound(_) | BrokerError::Profile(ProfileError::Unknown(_)) => {
                ErrorCode::NotFound
            }
            BrokerError::SequenceConflict(_) => ErrorCode::ActionSequenceConflict,
            BrokerError::InvalidState { .. } => ErrorCode::InvalidState,
            BrokerError::LeaseConflict(_) | BrokerError::AtCapacity(_) => ErrorCode::LeaseConflict,
            BrokerError::CheckpointRequired(_) => ErrorCode::CheckpointRequired,
            BrokerError::Unauthorized(_) => ErrorCode::Unauthorized,
            BrokerError::Forbidden(_) => ErrorCode::Unauthorized,
            BrokerError::PolicyInvalid(_) => ErrorCode::PolicyInvalid,
            BrokerError::ProfileNotAllowed(_) => ErrorCode::ProfileNotAllowed,
            BrokerError::LeaseExpired(_) => ErrorCode::LeaseExpired,
            BrokerError::SessionKilled { .. } => ErrorCode::SessionKilled,
            BrokerError::SessionBusy(_) => ErrorCode::SessionBusy,
            BrokerError::CheckpointFailed(_) => ErrorCode::CheckpointFailed,
            BrokerError::ArtifactInvalid(_) => ErrorCode::ArtifactInvalid,
            BrokerError::ResetUnstable(_) => ErrorCode::ResetUnstable,
            BrokerError::AppNotMaximized(_) => ErrorCode::AppNotMaximized,
            BrokerError::OutcomeUnknown { .. } => ErrorCode::InputOutcomeUnknown,
            BrokerError::Desktop {
                source: BackendError::SandboxUnavailable(_) | BackendError::LimitsUnavailable(_),
                ..
            } => ErrorCode::SandboxUnavailable,
            // The host was busy, not the sandbox unavailable: retry later, like a full queue.
            BrokerError::Desktop {
                source: BackendError::StartTimedOut(_),
                ..
            } => ErrorCode::SessionBusy,
            BrokerError::Desktop {
                source: BackendError::WorkspaceUnverified(_),
                ..
            } => ErrorCode::WorkspaceUnverified,
            BrokerError::Desktop {
                source: BackendError::AccessibilityUnavailable(_),
                ..
            } => ErrorCode::AccessibilityUnavailable,
            BrokerError::Desktop {
                source: BackendError::AxStale(_),
                ..
            } => ErrorCode::AxObservationStale,
            BrokerError::Desktop {
                source: BackendError::AxForeignWindow(_),
                ..
            } => ErrorCode::AxForeignWindow,
            BrokerError::Desktop {
                source: BackendError::AxNotActionable(_),
                ..
            } => ErrorCode::AxNotActionable,
            BrokerError::Desktop {
                source: BackendError::AxProviderBusy(_),
                ..
            } => ErrorCode::AxProviderBusy,
            BrokerError::Desktop {
                source: BackendError::DestinationNotApp(_),
                ..
            } => ErrorCode::DestinationNotApp,
            BrokerError::Desktop {
                source: BackendError::DestinationProhibited(_),
                ..
            } => ErrorCode::DestinationProhibited,
            BrokerError::Desktop {
                source: BackendError::ResourceLimit(_),
                ..
            } => ErrorCode::ResourceLimit,
            BrokerError::Desktop { .. } => ErrorCode::DesktopFailed,
            BrokerError::JournalUnavailable(_) => ErrorCode::JournalUnavailable,
            // The signed evidence journal cannot be written: refused like the action journal.
            BrokerError::Evidence { .. } => ErrorCode::JournalUnavailable,
            BrokerError::Control { code, .. } => *code,
            BrokerError::Store { .. }
            | BrokerError::Io { .. }
            | BrokerError::Profile(_)
            | BrokerError::Json { .. }
            | BrokerError::Watchdog(_)
            | BrokerError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The body sent to clients: the reason for a refusal, a fixed message for a failure whose
    /// cause stays in the log ([`BrokerError::hides_cause`]). A desktop's refusal the client
    /// can act on (`destination_prohibited`, `ax_observation_stale`, `accessibility_unavailable`,
    /// a busy start, …) carries the worker's reason: "refused unverified" and "lies on the
    /// app's Python console" call for different next steps.
    pub fn to_body(&self) -> ErrorBody {
        let code = self.code();
        let message = if let BrokerError::Desktop { source, operation } = self
            && !self.hides_cause()
        {
            format!("{source} (during {operation})")
        } else if !self.hides_cause() {
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

    /// Whether the answer hides this error's cause: a failure on the broker's or the desktop's
    /// side (HTTP 5xx, desk-server's `api_error.rs`), whose chain is logged, never sent. A
    /// `Control` refusal's message is built by the broker and always sent.
    pub fn hides_cause(&self) -> bool {
        !matches!(self, BrokerError::Control { .. }) && code_hides_cause(self.code())
    }

    pub(crate) fn store(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> BrokerError {
        move |source| BrokerError::Store { operation, source }
    }

    pub fn io(
        operation: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> BrokerError {
        let path = path.into();
        move |source| BrokerError::Io {
            operation,
            path,
            source,
        }
    }

    pub fn json(operation: &'static str) -> impl FnOnce(serde_json::Error) -> BrokerError {
        move |source| BrokerError::Json { operation, source }
    }

    pub(crate) fn desktop(operation: &'static str) -> impl FnOnce(BackendError) -> BrokerError {
        move |source| BrokerError::Desktop { operation, source }
    }
}

/// Whether an answer with `code` (from any variant but `Control`) is a failure on the broker's
/// or the desktop's side: exactly the codes desk-server answers with a 5xx status.
fn code_hides_cause(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::InputOutcomeUnknown
            | ErrorCode::Internal
            | ErrorCode::SandboxUnavailable
            | ErrorCode::JournalUnavailable
            | ErrorCode::WorkspaceUnverified
            | ErrorCode::ResourceLimit
            | ErrorCode::DesktopFailed
            | ErrorCode::ClipboardOutcomeUnknown
    )
}
