//! The crate's one error type, [`X11Error`], and its mapping onto worker failure kinds.
//!
//! Invariant: whether input had already been sent when an error happened is decided by the
//! caller (see `session.rs`), never guessed here; this module only carries context.

use desk_a11y::A11yError;
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};
use x11rb::errors::{ConnectError, ConnectionError, ReplyError, ReplyOrIdError};

/// Everything that can go wrong while talking to the X server or serving the worker protocol.
#[derive(Debug, thiserror::Error)]
pub enum X11Error {
    /// The accessibility bus or the app's tree could not be read (nothing was sent).
    #[error(transparent)]
    Accessibility(#[from] A11yError),
    /// The display could not be opened.
    #[error("failed to open display {display}: {source}")]
    Connect {
        /// The `$DISPLAY` value used.
        display: String,
        /// The underlying error.
        source: ConnectError,
    },
    /// The connection broke.
    #[error("x11 connection failed during {operation}: {source}")]
    Connection {
        /// What was being done.
        operation: &'static str,
        /// The underlying error.
        source: ConnectionError,
    },
    /// The server answered a request with an error.
    #[error("x11 request failed during {operation}: {source}")]
    Reply {
        /// What was being done.
        operation: &'static str,
        /// The underlying error.
        source: ReplyError,
    },
    /// A required extension is missing.
    #[error("x11 extension {name} is missing (need version {major}.{minor})")]
    MissingExtension {
        /// Extension name.
        name: &'static str,
        /// Required major version.
        major: u32,
        /// Required minor version.
        minor: u32,
    },
    /// Shared memory could not be set up.
    #[error("failed to set up mit-shm segment: {0}")]
    Shm(String),
    /// The client ran out of X resource ids.
    #[error("x11 resource ids exhausted during {operation}")]
    IdsExhausted {
        /// What was being done.
        operation: &'static str,
    },
    /// The screen image could not be read or has an unsupported format.
    #[error("failed to capture screen: {0}")]
    Capture(String),
    /// PNG encoding failed.
    #[error("failed to encode png: {0}")]
    Encode(#[from] png::EncodingError),
    /// Reading requests or writing responses failed.
    #[error("worker pipe failed: {0}")]
    Io(#[from] std::io::Error),
    /// The request cannot be executed on this display; nothing was sent.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The app's window did not appear.
    #[error("app window not found: {0}")]
    AppWindowNotFound(String),
    /// The app's window was not observed maximized.
    #[error("app window not maximized: {0}")]
    AppNotMaximized(String),
    /// The handoff's first frame did not settle within its attempts.
    #[error("the handoff did not settle: {0}")]
    HandoffUnstable(String),
    /// The clipboard could not be read or written and nothing changed.
    #[error("clipboard unavailable: {0}")]
    ClipboardUnavailable(String),
    /// A clipboard write failed after the clipboard was taken: its outcome is unknown.
    #[error("clipboard write outcome unknown: {0}")]
    ClipboardOutcomeUnknown(String),
    /// The window manager did not take the display in time.
    #[error("the window manager did not take the display within {waited_ms} ms")]
    NoWindowManager {
        /// How long the worker waited.
        waited_ms: u64,
    },
}

impl X11Error {
    /// Wraps a connection error with the operation's name.
    pub(crate) fn conn(operation: &'static str) -> impl Fn(ConnectionError) -> X11Error + Copy {
        move |source| X11Error::Connection { operation, source }
    }

    /// Wraps a reply error with the operation's name.
    pub(crate) fn reply(operation: &'static str) -> impl Fn(ReplyError) -> X11Error + Copy {
        move |source| X11Error::Reply { operation, source }
    }

    /// Wraps a reply-or-id error with the operation's name.
    pub(crate) fn reply_or_id(operation: &'static str) -> impl FnOnce(ReplyOrIdError) -> X11Error {
        move |source| match source {
            ReplyOrIdError::ConnectionError(source) => X11Error::Connection { operation, source },
            ReplyOrIdError::X11Error(error) => X11Error::Reply {
                operation,
                source: ReplyError::X11Error(error),
            },
            ReplyOrIdError::IdsExhausted => X11Error::IdsExhausted { operation },
        }
    }

    /// The failure sent to the broker when no input had been sent yet.
    pub fn to_failure(&self) -> WorkerFailure {
        if let X11Error::Accessibility(error) = self {
            return failure(error);
        }
        let kind = match self {
            X11Error::InvalidRequest(_) => WorkerFailureKind::InvalidRequest,
            X11Error::AppWindowNotFound(_) => WorkerFailureKind::AppWindowNotFound,
            X11Error::AppNotMaximized(_) => WorkerFailureKind::AppNotMaximized,
            X11Error::HandoffUnstable(_) => WorkerFailureKind::HandoffUnstable,
            X11Error::ClipboardUnavailable(_) => WorkerFailureKind::ClipboardUnavailable,
            X11Error::ClipboardOutcomeUnknown(_) => WorkerFailureKind::OutcomeUnknown,
            _ => WorkerFailureKind::DesktopFailed,
        };
        WorkerFailure {
            kind,
            message: self.to_string(),
        }
    }
}

/// The worker failure for an accessibility error: whether anything was sent decides the kind.
pub(crate) fn failure(error: &A11yError) -> WorkerFailure {
    let kind = match error {
        A11yError::Unavailable(_) | A11yError::AppNotRegistered(_) | A11yError::Bus(_) => {
            WorkerFailureKind::AxUnavailable
        }
        A11yError::StaleObservation(_) | A11yError::NoSuchNode { .. } => WorkerFailureKind::AxStale,
        A11yError::ForeignWindow(_) => WorkerFailureKind::AxForeignWindow,
        A11yError::NotActionable(_) => WorkerFailureKind::AxNotActionable,
        A11yError::ProviderBusy(_) => WorkerFailureKind::AxProviderBusy,
        A11yError::OutcomeUnknown(_) => WorkerFailureKind::OutcomeUnknown,
    };
    WorkerFailure {
        kind,
        message: error.to_string(),
    }
}
