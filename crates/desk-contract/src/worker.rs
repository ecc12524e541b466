//! The desktop worker protocol: JSON lines over the worker's stdin (requests) and stdout
//! (responses), one response per request, in order.
//!
//! The worker is the only process that connects to the X server. It answers `hello` first; every
//! other request is answered with `{"id", "ok": value}` or `{"id", "error": failure}`. A request
//! the worker cannot parse is answered with id 0 and `invalid_request`. Documented in
//! `docs/worker-protocol.md`.
//!
//! Frames travel as binary attachments, not base64 in the JSON: a response whose value carries a
//! frame (`capture`, `await_app`'s handoff, `execute`'s outcome) has `attachment_len: N`, and
//! exactly `N` raw PNG bytes follow its newline. [`WorkerResponse::detach_png`] and
//! [`WorkerResponse::attach_png`] are the two halves; the I/O stays with the caller.

use serde::{Deserialize, Serialize};

use crate::a11y::{AxLimits, AxTree};
use crate::desktop::{ActionOutcome, AppWindowInfo, DesktopFacts, Frame, Handoff, WindowRules};
use crate::geometry::DisplaySize;
use crate::settle::SettlePolicy;
use crate::validate::InputAction;

/// The protocol version; bumped on any incompatible change.
pub const WORKER_PROTOCOL_VERSION: u32 = 3;

/// The largest attachment a reader accepts (a 4K RGBA frame stored uncompressed is ~33 MB).
pub const MAX_ATTACHMENT_BYTES: u64 = 64 * 1024 * 1024;

/// The environment variable that selects socket mode: the path the worker listens on.
pub const WORKER_SOCKET_ENV: &str = "DESKBROKER_WORKER_SOCKET";

/// The environment variable that tells a socket-mode worker that a window manager is starting
/// on its display: its value is how many milliseconds the worker waits for the manager to take
/// the display (`_NET_SUPPORTING_WM_CHECK` on the root) before it listens. An app started
/// before the manager took the display can map a window the manager never adopts.
pub const WORKER_WAIT_WM_ENV: &str = "DESKBROKER_WORKER_WAIT_WM_MS";

/// The file beside a socket-mode worker's socket in which the broker writes the session's
/// control generation after a Stop (decimal, written by rename). An `execute` carrying a lower
/// `generation` ends its settle wait at the next sample with `interrupted`.
pub const STOP_GENERATION_FILE: &str = "stop-generation";

/// Test-only: the environment variable that makes the worker fail one observation after
/// input (`capture_after_input`, `encode_after_input`, `focus_after_input`); the launcher passes
/// it from the broker's environment to the worker. Never set in production.
pub const WORKER_FAULT_ENV: &str = "DESKBROKER_WORKER_FAULT";

/// One request line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerRequest {
    /// Correlates the response; chosen by the broker, increasing.
    pub id: u64,
    /// What to do.
    pub op: WorkerOp,
}

/// Operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkerOp {
    /// Report version, display size and capture path.
    Hello,
    /// Find the app's main window, dismiss overlays, maximize, wait for a stable render.
    AwaitApp {
        /// The app's process id; its windows are matched by `_NET_WM_PID`.
        pid: u32,
        /// Window rules.
        rules: WindowRules,
        /// Settle timing for the render wait.
        settle: SettlePolicy,
    },
    /// Capture the screen.
    Capture,
    /// Inject one validated action, release anything held, settle, capture. A semantic step
    /// (`ax_press`, `ax_set_text`) goes to the app's accessibility provider instead of XTEST,
    /// after the provider-side checks; its outcome is the same.
    Execute {
        /// The action; validated by the broker and checked again against the display.
        action: InputAction,
        /// Settle timing.
        settle: SettlePolicy,
        /// The control generation the action belongs to: a Stop that advances past it
        /// ([`STOP_GENERATION_FILE`]) interrupts the settle wait. Absent: not interruptible.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        generation: Option<u64>,
    },
    /// Read focus, pointer, app window and held keys/buttons.
    Facts,
    /// Release every held key and button.
    ReleaseHeld,
    /// Read the display's CLIPBOARD as UTF-8 text, at most `max_output_bytes` of it
    /// (`crate::clipboard`); sends no input.
    ClipboardRead {
        /// The read cap, already checked by the broker.
        max_output_bytes: u64,
    },
    /// Own the display's CLIPBOARD with `text` until another client takes it; sends no input.
    ClipboardWrite {
        /// The text, already checked by the broker (no NUL, within the ceiling).
        text: String,
    },
    /// Read the app's accessibility tree within the limits; it becomes the current observation.
    Accessibility {
        /// Node, depth and time limits.
        limits: AxLimits,
    },
    /// List the app's top-level windows (main, dialogs, menus, popups).
    Windows,
    /// Close the connection and exit.
    Shutdown,
}

/// Answer to `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloInfo {
    /// [`WORKER_PROTOCOL_VERSION`] of the worker.
    pub protocol_version: u32,
    /// The display's size.
    pub display: DisplaySize,
    /// `mit-shm` or `get-image`.
    pub capture_path: String,
    /// The X server vendor string.
    pub server_vendor: String,
    /// Who this worker is, minted once at its start (`w_` and 32 hex digits): a worker that
    /// listens on TCP says it so a reconnecting broker can prove it reached the same desktop
    /// (`docs/worker-protocol.md`, "Transport"). Absent on the Unix socket and stdin/stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The app the worker launched itself (`--launch`), the pid `await_app` binds; absent when
    /// the worker launched none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_pid: Option<u32>,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkerValue {
    /// To `hello`.
    Hello(HelloInfo),
    /// To `await_app`.
    Handoff(Box<Handoff>),
    /// To `capture`.
    Frame(Frame),
    /// To `execute`.
    Outcome(Box<ActionOutcome>),
    /// To `facts`.
    Facts(DesktopFacts),
    /// To `release_held`: what was held and released.
    Released {
        /// Names of released keys and buttons.
        released: Vec<String>,
    },
    /// To `clipboard_read`.
    Clipboard(crate::clipboard::ClipboardText),
    /// To `clipboard_write`.
    ClipboardWritten(crate::clipboard::ClipboardWritten),
    /// To `shutdown`.
    Bye,
    /// To `accessibility`.
    Accessibility(Box<AxTree>),
    /// To `windows`.
    Windows {
        /// The app's windows, stacking order bottom to top.
        windows: Vec<AppWindowInfo>,
    },
}

/// Failure classes. `nothing_sent` and `outcome_unknown` matter to exactly-once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerFailureKind {
    /// The request was malformed or out of bounds; no input was sent.
    InvalidRequest,
    /// The display or X connection failed before any input was sent.
    DesktopFailed,
    /// Input was at least partly sent and then something failed.
    OutcomeUnknown,
    /// The app's window did not appear in time.
    AppWindowNotFound,
    /// The app's window could not be observed maximized over the work area (or it is not
    /// viewable, or iconic).
    AppNotMaximized,
    /// The handoff's first frame did not settle within its settle waits.
    HandoffUnstable,
    /// The clipboard could not be read or written and nothing changed: no text offered in
    /// UTF-8, over the ceiling, NUL or invalid UTF-8 in it, or its owner did not answer in time.
    ClipboardUnavailable,
    /// The session has no accessibility bus, or the app is not on it.
    AxUnavailable,
    /// A semantic step's observation is not the current one, or has no such node; nothing
    /// was sent.
    AxStale,
    /// A semantic step's node is not in the bound window or an admitted popup; nothing was
    /// sent.
    AxForeignWindow,
    /// A semantic step's node cannot take it (disabled, gone, no action, read-only, several
    /// selections); nothing was sent.
    AxNotActionable,
    /// The accessibility provider did not answer the checks before input in time; nothing
    /// was sent.
    AxProviderBusy,
    /// Seat input would reach something other than the bound app: a point on the bare desktop
    /// or on another client's window, or keys while the focus is on no window of the app;
    /// nothing was sent.
    DestinationNotApp,
    /// Seat input would reach a destination the profile prohibits (`WindowRules::prohibited`);
    /// nothing was sent.
    DestinationProhibited,
}

/// A failed answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerFailure {
    /// Class.
    pub kind: WorkerFailureKind,
    /// Explanation.
    pub message: String,
}

/// One response line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerReply {
    /// Success.
    Ok(WorkerValue),
    /// Failure.
    Error(WorkerFailure),
}

/// One response line with its correlation id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerResponse {
    /// The request's id.
    pub id: u64,
    /// How many raw bytes (the PNG of the value's frame) follow this line; absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attachment_len: u64,
    /// The answer.
    #[serde(flatten)]
    pub reply: WorkerReply,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl WorkerResponse {
    /// A response without an attachment yet; [`WorkerResponse::detach_png`] adds one.
    pub fn new(id: u64, reply: WorkerReply) -> WorkerResponse {
        WorkerResponse {
            id,
            attachment_len: 0,
            reply,
        }
    }

    fn frame_mut(&mut self) -> Option<&mut Frame> {
        match &mut self.reply {
            WorkerReply::Ok(WorkerValue::Frame(frame)) => Some(frame),
            WorkerReply::Ok(WorkerValue::Handoff(handoff)) => Some(&mut handoff.frame),
            WorkerReply::Ok(WorkerValue::Outcome(outcome)) => outcome.frame.as_mut(),
            _ => None,
        }
    }

    /// The sender's half: moves the frame's PNG out of the value and records its length in
    /// `attachment_len`; the caller writes the line, then these bytes. Empty when the value
    /// carries no frame.
    pub fn detach_png(&mut self) -> Vec<u8> {
        let png = self
            .frame_mut()
            .map(|frame| std::mem::take(&mut frame.png))
            .unwrap_or_default();
        self.attachment_len = png.len() as u64;
        png
    }

    /// The receiver's half: puts the `attachment_len` bytes read after the line back into the
    /// value's frame. A frame without an attachment, an attachment without a frame, or a length
    /// that differs from the line's is a protocol error.
    pub fn attach_png(&mut self, png: Vec<u8>) -> Result<(), String> {
        if png.len() as u64 != self.attachment_len {
            return Err(format!(
                "attachment of {} bytes where the line announced {}",
                png.len(),
                self.attachment_len
            ));
        }
        match self.frame_mut() {
            Some(_) if png.is_empty() => Err("a frame arrived without its PNG attachment".into()),
            Some(frame) => {
                frame.png = png;
                Ok(())
            }
            None if png.is_empty() => Ok(()),
            None => Err("an attachment arrived with a value that carries no frame".into()),
        }
    }
}
