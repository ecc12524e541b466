//! Stable error codes and the error body every API failure carries.
//!
//! Codes are API: renaming one is a breaking change. Messages are lowercase, name the operation,
//! and never contain credentials or internal error chains.

use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// A stable, machine-readable error code.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum ErrorCode {
        /// The action failed validation; nothing reached the desktop.
        InvalidAction = "invalid_action",
        /// The request body or parameters are malformed; nothing changed.
        InvalidRequest = "invalid_request",
        /// A request id was reused for different content, or the expected action index is not next.
        ActionSequenceConflict = "action_sequence_conflict",
        /// The operation is not allowed in the session's current state.
        InvalidState = "invalid_state",
        /// No such session, profile or resource.
        NotFound = "not_found",
        /// The artifact was requested before a successful checkpoint.
        CheckpointRequired = "checkpoint_required",
        /// The checkpoint could not prove that post-reset changes reached the saved file.
        CheckpointFailed = "checkpoint_failed",
        /// The saved artifact failed its format's validator (a truncated or unparsable DXF); no
        /// checkpoint was recorded.
        ArtifactInvalid = "artifact_invalid",
        /// The lease expired; the session was or will be released.
        LeaseExpired = "lease_expired",
        /// Input may have reached the desktop but its outcome is unknown; it is never replayed.
        InputOutcomeUnknown = "input_outcome_unknown",
        /// The desktop (display, window manager, app or worker) failed.
        DesktopFailed = "desktop_failed",
        /// The kernel enforced one of the session's limits (its cgroup's memory limit killed a
        /// process, or its process limit refused a fork); the session ended in `error`.
        ResourceLimit = "resource_limit",
        /// The app was not observed maximized at handoff.
        AppNotMaximized = "app_not_maximized",
        /// The request lacks a valid credential for this session.
        Unauthorized = "unauthorized",
        /// The same lease identity is held with different parameters, or capacity is exhausted.
        LeaseConflict = "lease_conflict",
        /// The action journal cannot be written (disk full, file size limit, read-only or failing
        /// storage); the action was refused and nothing reached the desktop.
        JournalUnavailable = "journal_unavailable",
        /// The session already has as many requests waiting as the broker queues per session; this
        /// one was refused and changed nothing. Retry later (with the same request id). A reset
        /// answers it too when the host was too busy to start the session's desktop within its
        /// bound: what started was stopped and the session stays leased.
        SessionBusy = "session_busy",
        /// The session sandbox could not be built (the kernel or bubblewrap refused namespaces);
        /// or the session's resource limits (cgroups) cannot be applied; nothing ran. An operator
        /// may start `serve --unsafe-no-sandbox` (or `--unsafe-no-limits`) instead.
        SandboxUnavailable = "sandbox_unavailable",
        /// The workspace measured at handoff failed the sandbox's rules; the handoff was refused.
        WorkspaceUnverified = "workspace_unverified",
        /// The handoff's first frame kept changing through every settle wait reset allows; the
        /// handoff was refused (a reset with a new request id may try again).
        ResetUnstable = "reset_unstable",
        /// The broker's signed workspace policy is unsigned, altered, expired or not yet valid,
        /// fails lint, or states what this broker cannot enforce (a network allowlist); nothing
        /// was leased. The message says which.
        PolicyInvalid = "policy_invalid",
        /// The app profile asked for is not among the workspace policy's allowed profiles;
        /// nothing was leased.
        ProfileNotAllowed = "profile_not_allowed",
        /// The session was killed (by the watchdog at a limit, or by an operator's kill
        /// switch): its workspace is destroyed and its lease revoked; the message names the
        /// reason.
        SessionKilled = "session_killed",
        /// A program's steps failed parsing or validation; the message names the step index and
        /// field. Nothing reached the desktop.
        InvalidParams = "invalid_params",
        /// Another owner holds the session's control, or the request carries no control token
        /// while an owner does; nothing was sent.
        ControlBusy = "control_busy",
        /// The control generation was stopped; only an explicit restart gives a new one.
        ControlStopped = "control_stopped",
        /// The request's control generation is not the current one; nothing was sent.
        ControlStaleGeneration = "control_stale_generation",
        /// The control session is in `observe` mode; no input is sent.
        ControlObserveOnly = "control_observe_only",
        /// The named screenshot is not in the session's geometry history (never issued, or
        /// evicted); nothing was sent.
        ScreenshotUnknown = "screenshot_unknown",
        /// The named screenshot belongs to an earlier control generation or target revision.
        ScreenshotStale = "screenshot_stale",
        /// A point lies outside the named screenshot's content (in its padding or beyond its
        /// edge); it is never clamped.
        PointOutsideImage = "point_outside_image",
        /// The workspace policy's clipboard mode does not allow this access (`none` allows no
        /// access, `read` no write); nothing was asked of the desktop.
        ClipboardDisabled = "clipboard_disabled",
        /// The clipboard could not be read or written and nothing changed: it offers no UTF-8
        /// text, its text is over the ceiling or holds NUL, or its owner did not answer within
        /// the deadline. The message says which.
        ClipboardUnavailable = "clipboard_unavailable",
        /// A clipboard write failed after the desktop was asked to take the clipboard: whether
        /// the clipboard changed is unknown. It is never retried.
        ClipboardOutcomeUnknown = "clipboard_outcome_unknown",
        /// The feature asked for is not offered by this broker (see `GET /v1/capabilities`).
        Unsupported = "unsupported",
        /// The session's desktop has no accessibility bus, or its app is not (yet) accessible on
        /// it; nothing was sent.
        AccessibilityUnavailable = "accessibility_unavailable",
        /// A semantic step names an accessibility observation that is not the session's current
        /// one (unknown, replaced by a newer snapshot, or taken under an earlier control
        /// generation or target revision); nothing was sent.
        AxObservationStale = "ax_observation_stale",
        /// A semantic step's node lives in a window that is neither the app's bound window nor
        /// one of its admitted popups; nothing was sent.
        AxForeignWindow = "ax_foreign_window",
        /// A semantic step's node cannot take the step (disabled, gone, no action, not
        /// editable, several selections); nothing was sent.
        AxNotActionable = "ax_not_actionable",
        /// The app's accessibility provider did not answer the checks before input in time;
        /// nothing was sent (a later request may succeed).
        AxProviderBusy = "ax_provider_busy",
        /// An action's seat input would reach something other than the app: a point on the
        /// bare desktop or on another program's window, or keys while the keyboard focus is on
        /// no window of the app. Checked before every action and program step; nothing was sent.
        DestinationNotApp = "destination_not_app",
        /// An action's seat input would reach a destination the session's profile prohibits
        /// (a Python console, a macro editor or dialog, an add-on manager, an embedded web
        /// view), recognised by the destination window's class and title. Checked before every
        /// action and program step; nothing was sent.
        DestinationProhibited = "destination_prohibited",
        /// An action's input would reach a control the signed policy marks high-risk (its
        /// `approvals` section): the element under the point, or the focused element for keys
        /// and text, or a semantic step's node. Only an approved exact action may invoke it
        /// (`docs/approvals.md`); nothing was sent.
        ApprovalRequired = "approval_required",
        /// The accessibility data needed to check an action against the policy's high-risk
        /// targets was missing (no accessibility bus, the app not on it, a truncated tree, an
        /// observation the broker did not record): refused unverified, nothing was sent.
        InsufficientData = "insufficient_data",
        /// An unexpected failure inside the broker; details are in its log, not here.
        Internal = "internal",
    }
}

/// The JSON body of every error response: `{"code", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// Stable code.
    pub code: ErrorCode,
    /// Human-readable explanation; not for parsing.
    pub message: String,
}

impl ErrorBody {
    /// Builds a body.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Why an action was refused by [`crate::validate_action`]. Always maps to
/// [`ErrorCode::InvalidAction`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {action_type} action: {message}")]
pub struct ActionError {
    /// The variant that was refused.
    pub action_type: &'static str,
    /// The field at fault, e.g. `x`, `path[3]`, `keys`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ActionError {
    /// The body sent to clients.
    pub fn to_body(&self) -> ErrorBody {
        ErrorBody::new(ErrorCode::InvalidAction, self.to_string())
    }
}

/// Why a piece of JSON was rejected by the strict parser ([`crate::strict`]) or by the typed
/// deserialization that follows it.
///
/// Every token and message is clipped (see [`crate::strict::clip`]), so a problem never echoes
/// a large input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrictJsonProblem {
    /// The bytes are not JSON at all (the message says what was expected).
    Syntax(String),
    /// An object has the same key twice.
    DuplicateKey(String),
    /// `NaN`, `Infinity` or `-Infinity` appeared where a value belongs.
    NonFiniteConstant(String),
    /// An integer outside ±(2^53 − 1), which a double (and RFC 8785) cannot represent exactly.
    IntegerOutOfRange(String),
    /// A number whose value overflows a finite double.
    NonFiniteNumber(String),
    /// Nesting deeper than the parser allows.
    TooDeep(usize),
    /// A value of the wrong JSON type for a typed record (e.g. a boolean where a number belongs).
    WrongType(String),
    /// A key the typed record does not know.
    UnknownField(String),
    /// A key the typed record requires is absent.
    MissingField(String),
    /// The value does not round-trip through its typed record exactly (key set or
    /// representation differs).
    NotExact(String),
}

impl std::fmt::Display for StrictJsonProblem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Syntax(message) => write!(formatter, "invalid JSON: {message}"),
            Self::DuplicateKey(key) => write!(formatter, "duplicate key {key:?}"),
            Self::NonFiniteConstant(token) => write!(formatter, "non-finite constant {token}"),
            Self::IntegerOutOfRange(token) => {
                write!(formatter, "integer {token} outside ±(2^53 - 1)")
            }
            Self::NonFiniteNumber(token) => write!(formatter, "number {token} is not finite"),
            Self::TooDeep(limit) => write!(formatter, "nesting deeper than {limit}"),
            Self::WrongType(message) => write!(formatter, "wrong type: {message}"),
            Self::UnknownField(field) => write!(formatter, "unknown field {field:?}"),
            Self::MissingField(field) => write!(formatter, "missing field {field:?}"),
            Self::NotExact(message) => write!(formatter, "not an exact record: {message}"),
        }
    }
}

/// A strict JSON rejection: the JSON path of the offending value (`$`, `$.a.b[2]`,
/// `$["odd key"]`) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct StrictJsonError {
    /// Where: a JSON path rooted at `$` (clipped when very long).
    pub path: String,
    /// What.
    pub problem: StrictJsonProblem,
}

impl StrictJsonError {
    /// Builds an error at `path`.
    pub fn new(path: impl Into<String>, problem: StrictJsonProblem) -> Self {
        StrictJsonError {
            path: path.into(),
            problem,
        }
    }

    /// True when the bytes were not a JSON document at all (as opposed to a well-formed
    /// document with a refused value).
    pub fn is_syntax(&self) -> bool {
        matches!(self.problem, StrictJsonProblem::Syntax(_))
    }
}
