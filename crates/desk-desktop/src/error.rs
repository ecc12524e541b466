//! `BackendError`: every way a desktop backend can fail, classified for exactly-once.

use desk_contract::worker::{WorkerFailure, WorkerFailureKind};

/// A desktop backend failure.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request was refused before any input was sent.
    #[error("desktop refused the request: {0}")]
    Rejected(String),
    /// The desktop failed before any input was sent.
    #[error("desktop failed: {0}")]
    DesktopFailed(String),
    /// Input was at least partly sent, then the outcome became unknown.
    #[error("input outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// The app's main window did not appear.
    #[error("app window not found: {0}")]
    AppWindowNotFound(String),
    /// The app's main window was not observed maximized.
    #[error("app not maximized: {0}")]
    AppNotMaximized(String),
    /// The handoff's first frame did not settle.
    #[error("handoff unstable: {0}")]
    HandoffUnstable(String),
    /// A process could not be started.
    #[error("failed to start {what}: {source}")]
    Spawn {
        /// What was being started.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The worker pipe broke or carried something unexpected.
    #[error("desktop worker failed: {0}")]
    Worker(String),
    /// The session sandbox could not be built (the kernel or bwrap refused it); nothing ran.
    #[error("sandbox unavailable: {0}")]
    SandboxUnavailable(String),
    /// The host was too busy to start the desktop within its bound: a sandbox start waited
    /// too long for its turn, bwrap did not report or complete the sandbox in time, or a
    /// process entering it did not appear (`sandbox::start_gate`). The sandbox is available;
    /// what was started was stopped, and a later reset may succeed.
    #[error("the host did not start the desktop in time (busy): {0}")]
    StartTimedOut(String),
    /// The session's resource limits cannot be applied on this host (no cgroup v1 `memory` or
    /// `pids` hierarchy, or no group can be made in it: a broker that is not root); the
    /// message names the controller and why. Nothing ran. Only the operator's
    /// `--unsafe-no-limits` runs desktops without limits.
    #[error(
        "the session's limits cannot be applied: {0}; a broker that cannot create cgroup v1 \
         groups (one not run as root) must be started with --unsafe-no-limits"
    )]
    LimitsUnavailable(String),
    /// The workspace measured at handoff fails the sandbox's rules (the ids are listed); the
    /// app was stopped and the handoff refused.
    #[error("workspace unverified: {}", .0.join(", "))]
    WorkspaceUnverified(Vec<String>),
    /// The clipboard could not be read or written and nothing changed (no UTF-8 text, over the
    /// ceiling, its owner did not answer in time, or the backend has no clipboard).
    #[error("clipboard unavailable: {0}")]
    ClipboardUnavailable(String),
    /// The backend was shut down.
    #[error("desktop was shut down")]
    ShutDown,
    /// A process of the desktop (display, window manager, worker or app) is no longer running;
    /// the operation sent nothing. The message names the process and how it ended.
    #[error("desktop process died: {0}")]
    ProcessDied(String),
    /// The desktop has no accessibility bus, or the app is not on it; nothing was sent.
    #[error("accessibility unavailable: {0}")]
    AccessibilityUnavailable(String),
    /// A semantic step named an observation that is not the worker's current one, or a node
    /// it does not have; nothing was sent.
    #[error("{0}")]
    AxStale(String),
    /// A semantic step's node is not in the bound window or an admitted popup; nothing was sent.
    #[error("{0}")]
    AxForeignWindow(String),
    /// A semantic step's node cannot take it (disabled, gone, no action, read-only); nothing
    /// was sent.
    #[error("{0}")]
    AxNotActionable(String),
    /// The accessibility provider did not answer the checks before input; nothing was sent.
    #[error("{0}")]
    AxProviderBusy(String),
    /// Seat input would reach something other than the bound app (the desktop, another
    /// client's window, focus on no window of the app); nothing was sent.
    #[error("{0}")]
    DestinationNotApp(String),
    /// Seat input would reach a destination the profile prohibits (a Python console, macro
    /// editor or dialog, add-on manager, web view); nothing was sent.
    #[error("{0}")]
    DestinationProhibited(String),
    /// The process listening on the worker socket is not the recorded worker (`SO_PEERCRED`:
    /// another uid or pid); nothing was sent to it.
    #[error("the worker socket's peer was refused: {0}")]
    WorkerPeerRefused(String),
    /// The remote worker (`serve --worker tcp://`) could not be reached: no answer at its
    /// address, the connection refused or cut before `hello`. Nothing was sent.
    #[error("the remote worker is unreachable: {0}")]
    WorkerUnreachable(String),
    /// The TLS session with the remote worker failed: its certificate does not chain to the
    /// pinned worker CA or does not name the host dialled, or the worker refused the broker's
    /// client certificate. Nothing was sent.
    #[error("the remote worker's TLS session was refused: {0}")]
    WorkerTlsRefused(String),
    /// The remote worker that answered is not the one the session's desktop is on (another
    /// instance id in `hello`: the worker restarted, or another worker took its address), or it
    /// is not a listening worker. Nothing was sent.
    #[error("the remote worker is not the session's: {0}")]
    WorkerMismatch(String),
    /// The kernel enforced one of the session's limits (memory, processes): the session ends.
    #[error("a resource limit of the session was reached: {0}")]
    ResourceLimit(String),
}

/// A service a backend may lack ([`crate::BackendCapabilities`] false), named by
/// [`BackendError::unsupported`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// `clipboard_read` and `clipboard_write` ([`crate::BackendCapabilities::clipboard`]).
    Clipboard,
    /// `accessibility` ([`crate::BackendCapabilities::accessibility`]).
    Accessibility,
}

impl BackendError {
    /// The refusal of a backend that declares it lacks `feature`: nothing was sent and
    /// nothing changed. The one place this text is written.
    pub fn unsupported(feature: Unsupported) -> BackendError {
        match feature {
            Unsupported::Clipboard => BackendError::ClipboardUnavailable(
                "this desktop backend has no clipboard".to_string(),
            ),
            Unsupported::Accessibility => BackendError::AccessibilityUnavailable(
                "this desktop backend has no accessibility".to_string(),
            ),
        }
    }

    /// Whether input may have reached the desktop before this error. When an `execute` fails
    /// with such an error, its outcome is unknown and it must never be replayed.
    pub fn input_may_have_been_sent(&self) -> bool {
        matches!(
            self,
            BackendError::OutcomeUnknown(_) | BackendError::Worker(_)
        )
    }
}

impl From<WorkerFailure> for BackendError {
    fn from(failure: WorkerFailure) -> Self {
        match failure.kind {
            WorkerFailureKind::InvalidRequest => BackendError::Rejected(failure.message),
            WorkerFailureKind::DesktopFailed => BackendError::DesktopFailed(failure.message),
            WorkerFailureKind::OutcomeUnknown => BackendError::OutcomeUnknown(failure.message),
            WorkerFailureKind::AppWindowNotFound => {
                BackendError::AppWindowNotFound(failure.message)
            }
            WorkerFailureKind::AppNotMaximized => BackendError::AppNotMaximized(failure.message),
            WorkerFailureKind::HandoffUnstable => BackendError::HandoffUnstable(failure.message),
            WorkerFailureKind::ClipboardUnavailable => {
                BackendError::ClipboardUnavailable(failure.message)
            }
            WorkerFailureKind::AxUnavailable => {
                BackendError::AccessibilityUnavailable(failure.message)
            }
            WorkerFailureKind::AxStale => BackendError::AxStale(failure.message),
            WorkerFailureKind::AxForeignWindow => BackendError::AxForeignWindow(failure.message),
            WorkerFailureKind::AxNotActionable => BackendError::AxNotActionable(failure.message),
            WorkerFailureKind::AxProviderBusy => BackendError::AxProviderBusy(failure.message),
            WorkerFailureKind::DestinationNotApp => {
                BackendError::DestinationNotApp(failure.message)
            }
            WorkerFailureKind::DestinationProhibited => {
                BackendError::DestinationProhibited(failure.message)
            }
        }
    }
}
