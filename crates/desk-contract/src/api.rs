//! HTTP request and response bodies of the broker API (`/v1/...`).
//!
//! Over 400 lines: one documented struct per request and answer body of the API, which read best as
//! one list.

use serde::{Deserialize, Serialize};

use crate::action::{Action, ActionType};
use crate::desktop::{FocusFacts, WindowFacts};
use crate::geometry::ScreenPoint;
use crate::settle::{SettleOutcome, SettleRule};

crate::wire_enum! {
    /// Session states.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum SessionState {
        /// Reserved; no app yet.
        Leased = "leased",
        /// Reset finished; the agent may act.
        Ready = "ready",
        /// An action is executing.
        Running = "running",
        /// The agent sent `done`; checkpoint and retrieval remain.
        Done = "done",
        /// Released; everything was deleted.
        Released = "released",
        /// A failure; only status, retrieval of what exists, and release remain.
        Error = "error",
        /// Killed by the watchdog or the kill switch: workspace destroyed, lease revoked.
        Killed = "killed",
    }
}

/// `POST /v1/leases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LeaseRequest {
    /// The task being attempted.
    pub task_id: String,
    /// The attempt; `(task_id, attempt_id)` is the lease's idempotency identity.
    pub attempt_id: String,
    /// App profile name; the broker's default when absent.
    #[serde(default)]
    pub profile: Option<String>,
}

/// A lease, as returned by `POST /v1/leases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LeaseResponse {
    /// Opaque session id.
    pub session_id: String,
    /// Current state.
    pub state: SessionState,
    /// RFC 3339 UTC expiry.
    pub expires_at: String,
    /// Echo of the request.
    pub task_id: String,
    /// Echo of the request.
    pub attempt_id: String,
    /// Resolved profile name.
    pub profile: String,
    /// True when this answer replays an existing lease.
    pub idempotent_replay: bool,
    /// The lease-scoped credential: send it as `Authorization: Bearer <lease_token>` on every
    /// `/v1/sessions/{id}…` request. The broker stores only its SHA-256; a replayed lease gets a
    /// fresh token and earlier ones stay valid until release.
    pub lease_token: LeaseToken,
    /// The workspace policy the session was leased under: lowercase hex SHA-256 of the signed
    /// policy's RFC 8785 bytes (`docs/security.md`, "Workspace policy"). `None` only for a
    /// session leased by a broker older than workspace policies.
    #[serde(default)]
    pub policy_sha256: Option<String>,
}

/// A lease-scoped bearer credential. Serialized as a plain string; `Debug` never prints it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct LeaseToken(String);

impl LeaseToken {
    /// Wraps a token string.
    pub fn new(token: impl Into<String>) -> LeaseToken {
        LeaseToken(token.into())
    }

    /// The token, for an `Authorization` header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for LeaseToken {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("LeaseToken(<redacted>)")
    }
}

/// `POST /v1/sessions/{id}/reset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    /// Idempotency key for this reset.
    pub request_id: String,
}

/// The media type a client names in `Accept` to take an answer's screenshot as raw PNG bytes
/// after its JSON instead of base64 inside it. The answer's `Content-Type` is this type with
/// `; json=<N>`: the first N bytes are the JSON answer (`png_base64` empty), the rest the PNG.
pub const ANSWER_PNG_MEDIA_TYPE: &str = "application/vnd.deskbroker.answer+png";

/// PNG bytes held in process (never serialized), shared rather than copied. `Debug` prints the
/// length only.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PngBytes(pub std::sync::Arc<[u8]>);

impl std::fmt::Debug for PngBytes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "PngBytes({} bytes)", self.0.len())
    }
}

impl From<&[u8]> for PngBytes {
    fn from(bytes: &[u8]) -> PngBytes {
        PngBytes(std::sync::Arc::from(bytes))
    }
}

impl From<Vec<u8>> for PngBytes {
    fn from(bytes: Vec<u8>) -> PngBytes {
        PngBytes(std::sync::Arc::from(bytes))
    }
}

/// A screenshot as returned to clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Screenshot {
    /// PNG bytes, standard base64. Empty when the frame was withheld (`gate`) and in an answer
    /// in the binary form (`application/vnd.deskbroker.answer+png`), which carries the PNG raw.
    pub png_base64: String,
    /// In process only (never on the wire): the PNG bytes, which the HTTP layer writes as
    /// base64 or, for a binary answer, raw. The broker fills this one, not `png_base64`, which
    /// stays empty in process.
    #[serde(skip)]
    #[cfg_attr(feature = "schemars", schemars(skip))]
    pub png: Option<PngBytes>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Strictly increasing per session.
    pub sequence: u64,
    /// Milliseconds since the Unix epoch at capture.
    pub timestamp_ms: u64,
    /// Whether the app's main window was observed maximized.
    pub app_maximized: bool,
    /// Lowercase hex SHA-256 of the PNG bytes.
    pub sha256: String,
    /// The image's identity: name it in a program's `screenshot_id` to use its pixels as
    /// coordinates. Absent in answers cached before screenshot ids existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_id: Option<String>,
    /// The part of the image that shows the screen (image pixels); outside it is padding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_content_rect: Option<crate::control::PixelRect>,
    /// The screen region (screen pixels) the content rectangle shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_global_bounds: Option<crate::control::PixelRect>,
    /// Present exactly on a zoom (`POST .../zoom`): its source and scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zoom: Option<crate::control::ZoomInfo>,
    /// Present exactly when the workspace policy has a screenshot gate: its verdict on this
    /// frame. Unless the verdict is `allow`, `png_base64` is empty: the frame was withheld
    /// (`docs/screenshot-gate.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<ScreenshotGate>,
}

impl Screenshot {
    /// Whether the screenshot carries its image, raw (`png`) or as base64.
    pub fn has_image(&self) -> bool {
        self.png.is_some() || !self.png_base64.is_empty()
    }

    /// Drops the image, both forms (a withheld frame).
    pub fn withhold_image(&mut self) {
        self.png = None;
        self.png_base64 = String::new();
    }
}

/// The screenshot gate's verdict on one frame, as the agent sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ScreenshotGate {
    /// `allow`, `withhold`, `review` (withheld until a person reviews it) or
    /// `insufficient_data` (the gate could not read the frame: withheld).
    pub verdict: String,
    /// Why: each finding, without the text it matched.
    pub reasons: Vec<GateReason>,
    /// The signed gate record's id in the session's evidence.
    pub record_id: String,
    /// For `review`: the queued review a reviewer decides (`GET /v1/reviews/{review_id}`);
    /// absent otherwise, and when the queue could not take the frame (it stays withheld).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_id: Option<String>,
}

/// One finding of the screenshot gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct GateReason {
    /// `ocr` (text read on the frame), `observer` (an accessible name), `frame` (the frame was
    /// refused before it was read), `engine` (the OCR engine or the classifier failed),
    /// `classifier` (the policy's classifier scored the text read) or `review` (a reviewer
    /// decided about these exact bytes).
    pub source: String,
    /// The policy pattern that matched, for `ocr` and `observer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Where on the frame, for `ocr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<crate::control::PixelRect>,
    /// The finding's score in thousandths.
    pub score_permille: u32,
}

/// The response of a reset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ResetResponse {
    /// Session id.
    pub session_id: String,
    /// `ready` after a successful reset.
    pub state: SessionState,
    /// The verified app window at handoff.
    pub window: WindowFacts,
    /// The initial screenshot.
    pub screenshot: Screenshot,
    /// Overlays dismissed.
    pub dismissed_overlays: Vec<String>,
    /// Milliseconds the reset took.
    pub elapsed_ms: u64,
    /// The settle receipt of the handoff frame: `stable` (a handoff that never settles is
    /// refused with `reset_unstable`), the wait over every settle attempt, the samples taken
    /// and the pixels changed since the first capture. Absent only in answers cached by a
    /// broker that predates it.
    #[serde(default)]
    pub settle: Option<crate::settle::SettleReport>,
    /// True when this answer replays an earlier identical reset.
    pub idempotent_replay: bool,
    /// The workspace as measured at handoff (sandbox on or off, and its facts); absent for a
    /// desktop without processes of its own (the fake).
    #[serde(default)]
    pub workspace: Option<crate::desktop::WorkspaceFacts>,
}

crate::wire_enum! {
    /// A workspace's durable state, as the broker's reconciler keeps it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum WorkspaceState {
        /// Reset is starting the desktop.
        Launching = "launching",
        /// The desktop was handed off.
        Running = "running",
        /// The session failed (`error`): every process of its desktop was stopped, so no input
        /// can reach it; its directory (logs, attempt file) is kept until release removes it.
        Stopped = "stopped",
        /// Its removal began and is not proven yet.
        RemovalPending = "removal_pending",
        /// Its removal is proven: no process, no directory, no X socket, no sandbox.
        Destroyed = "destroyed",
    }
}

/// `POST /v1/sessions/{id}/actions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ActionRequest {
    /// Idempotency key for this action.
    pub request_id: String,
    /// The index this action must receive; the session's next index.
    pub expected_action_index: u64,
    /// The screenshot the action's coordinates were read from: when present, they are image
    /// pixels of that screenshot, checked against its geometry and mapped to the screen once
    /// (`screenshot_unknown`, `screenshot_stale`, `point_outside_image` before any input).
    /// When absent, coordinates are screen pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_id: Option<String>,
    /// The action.
    pub action: Action,
}

/// Settle evidence inside a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct SettleReceipt {
    /// The conclusion.
    pub outcome: SettleOutcome,
    /// Milliseconds waited after input.
    pub wait_ms: u64,
    /// Pixels changed between the pre-action frame and the returned frame.
    pub changed_pixels: u64,
    /// The rule that ended the wait (`app_idle`, `app_idle_undated_timer`, `quiet_timer`,
    /// `max_wait`, `not_settled`).
    pub rule: SettleRule,
    /// Only in validation mode (`serve --settle-validate-ms`): the screen a while later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<crate::settle::SettleValidation>,
}

crate::wire_enum! {
    /// How an action reached the desktop.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Delivery {
        /// Its input was injected.
        InputInjected = "input_injected",
        /// A `wait`: nothing was injected, the screen was observed.
        Waited = "waited",
        /// `done`: nothing was injected, the final frame was captured.
        Done = "done",
    }
}

/// Delivery evidence for one action. Focus fields are diagnostic only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Receipt {
    /// The action's index.
    pub action_index: u64,
    /// The action variant.
    pub action_type: ActionType,
    /// The intent, as logged.
    pub intent: String,
    /// How it reached the desktop.
    pub delivery: Delivery,
    /// Low-level input events sent.
    pub n_input_events: u64,
    /// Focus before input.
    pub focus_before: Option<FocusFacts>,
    /// Focus after settling.
    pub focus_after: Option<FocusFacts>,
    /// Keys or buttons found held after the action and released.
    pub released_after: Vec<String>,
    /// Observations that failed after the input was delivered, in order: the worker's
    /// `capture` (the settle capture; no screenshot), `encode` (the PNG encode; no screenshot),
    /// `focus` (the diagnostic focus read; no `focus_after`), then the broker's `frame_store` (the
    /// frame file was not written; the frame is still returned and replayed), `event_log` (its
    /// rows are missing from `events.json` and `frame_events.json`), `evidence` (its signed
    /// receipt was not written; the action stays open in the evidence journal). The action
    /// still counts and the session continues; absent when every observation succeeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observation_failures: Vec<String>,
    /// Where the action put the pointer (click, double_click, move, the end of a drag); absent
    /// for actions without a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer_target: Option<ScreenPoint>,
    /// Whether the pointer was found at `pointer_target` after settling (`focus_after`);
    /// absent with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer_on_target: Option<bool>,
    /// Whether the session's desktop runs in its sandbox: `off` only when the operator started
    /// `serve --unsafe-no-sandbox` (or the fake backend, which has no desktop to contain).
    #[serde(default)]
    pub sandbox: crate::desktop::SandboxMode,
    /// `off` only when the operator started the broker with `--unsafe-no-limits` (the
    /// session's desktop has no memory, process or CPU limits); left out when enforced.
    #[serde(
        default,
        skip_serializing_if = "crate::desktop::LimitsMode::is_enforced"
    )]
    pub limits: crate::desktop::LimitsMode,
    /// Settle evidence.
    pub settle: SettleReceipt,
    /// True only when the settle wait ended stable.
    pub post_action_visual_stable: bool,
    /// Milliseconds since the Unix epoch when the broker accepted the action.
    pub accepted_at_ms: u64,
    /// Milliseconds spent injecting input.
    pub input_ms: u64,
    /// Milliseconds of host execution spent observing after the input: the settle wait, the
    /// capture and encode, the diagnostic reads and (for the answer's own screenshot) the
    /// broker's screenshot. Host time only, not model reasoning or network latency.
    #[serde(default)]
    pub observation_elapsed_ms: u64,
    /// Milliseconds from acceptance to response, excluding nothing.
    pub total_ms: u64,
    /// The app's top-level windows (dialogs, menus, popups) the step opened: those that
    /// appeared between its input and the end of its settle wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opened_windows: Vec<crate::desktop::AppWindowInfo>,
}

/// The response of an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ActionResponse {
    /// The index the action received.
    pub action_index: u64,
    /// True when this answer replays the cached response of an earlier identical request.
    pub idempotent_replay: bool,
    /// Delivery evidence.
    pub receipt: Receipt,
    /// The screenshot after settling; `null` when no frame could be captured or encoded after
    /// the input was delivered (the receipt names `capture` or `encode`): the action still
    /// counts, and `GET /v1/sessions/{id}/screenshot` takes a fresh one.
    pub screenshot: Option<Screenshot>,
}

/// How a checkpoint obtained its saved file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SaveMethod {
    /// The agent had already saved a changed file.
    AlreadySaved,
    /// The broker sent the profile's documented save gesture.
    ControllerSave,
}

/// The response of `POST /v1/sessions/{id}/checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CheckpointResponse {
    /// Session id.
    pub session_id: String,
    /// How the file was saved.
    pub method: SaveMethod,
    /// Lowercase hex SHA-256 of the saved file.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the file as prepared at reset; differs from `sha256` by construction.
    pub reset_sha256: String,
}

/// The response of `GET /v1/sessions/{id}/artifact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ArtifactResponse {
    /// File name, e.g. `attempt.dxf`.
    pub filename: String,
    /// File bytes, standard base64.
    pub bytes_base64: String,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// The checkpoint part of a status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CheckpointStatus {
    /// SHA-256 of the checkpointed artifact.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// The response of `GET /v1/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct StatusResponse {
    /// Session id.
    pub session_id: String,
    /// Current state.
    pub state: SessionState,
    /// Task.
    pub task_id: String,
    /// Attempt.
    pub attempt_id: String,
    /// Profile.
    pub profile: String,
    /// Actions accepted so far.
    pub action_count: u64,
    /// The index the next action must carry.
    pub next_action_index: u64,
    /// The last checkpoint, when any.
    pub checkpoint: Option<CheckpointStatus>,
    /// The last error, when any.
    pub last_error: Option<crate::error::ErrorBody>,
    /// RFC 3339 UTC expiry.
    pub expires_at: String,
    /// The workspace as measured at the last handoff; absent before the first reset.
    #[serde(default)]
    pub workspace: Option<crate::desktop::WorkspaceFacts>,
    /// The workspace policy the session was leased under (see [`LeaseResponse::policy_sha256`]).
    #[serde(default)]
    pub policy_sha256: Option<String>,
    /// The workspace's durable state (`launching`, `running`, `stopped`, `removal_pending`,
    /// `destroyed`);
    /// absent before the first reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_state: Option<WorkspaceState>,
    /// The control session: owner, mode, generation, target revision, stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<crate::control::ControlStatus>,
}

/// The response of `DELETE /v1/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ReleaseResponse {
    /// Session id.
    pub session_id: String,
    /// Always `released`.
    pub state: SessionState,
    /// False when the session was already released.
    pub released_now: bool,
}

/// `POST /v1/sessions/{id}/kill` (an operator route: a Unix peer, or over TLS an orchestration
/// credential with the `kill` scope; never the lease token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KillRequest {
    /// Why, in words (1 to 256 bytes, no control characters); signed into the terminal receipt.
    pub reason: String,
}

/// The response of `POST /v1/sessions/{id}/kill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct KillResponse {
    /// Session id.
    pub session_id: String,
    /// Always `killed`.
    pub state: SessionState,
    /// False when the session had been killed before (nothing was done again).
    pub killed_now: bool,
    /// The reason the session was killed with (the first kill's).
    pub reason: String,
    /// The terminal receipt's id (`record_id` of its `session_killed` evidence record).
    pub record_id: String,
    /// `contained` (removal proven) or `removal_unproven`; `None` when killed before.
    pub outcome: Option<String>,
}

/// Whether the broker can lease now, and the capacity behind it: the answer of
/// `POST /v1/drain` and of the health listener's `GET /readyz` (`serve --health-listen`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Capacity {
    /// True when a lease of the smallest profile would be admitted now.
    pub ready: bool,
    /// Why not, when not ready (`draining`, sessions at the cap, memory budget, no sandbox).
    pub reason: Option<String>,
    /// True once `POST /v1/drain` was called: no new lease until the broker restarts.
    pub draining: bool,
    /// Sessions leased and not yet released.
    pub live_sessions: u64,
    /// The most unreleased sessions at once (`serve --max-sessions`).
    pub max_sessions: u64,
    /// The sum of the live sessions' memory estimates (each its profile's memory limit), MiB.
    pub reserved_mib: u64,
    /// The memory the live sessions' estimates may add up to (`serve --memory-budget-mib`);
    /// `None`: no budget.
    pub memory_budget_mib: Option<u64>,
}

/// Answer to `GET /v1/sessions/{id}/accessibility`: the app's accessibility tree, a new current
/// observation (see `docs/accessibility.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct AccessibilityResponse {
    /// The tree, flattened into the answer: `observation_id`, `nodes`, `truncated`,
    /// `elapsed_ms`.
    #[serde(flatten)]
    pub tree: crate::a11y::AxTree,
}

/// Answer to `GET /v1/sessions/{id}/windows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct WindowsResponse {
    /// The app's top-level windows, bottom to top: managed ones, then override-redirect ones.
    pub windows: Vec<crate::desktop::AppWindowInfo>,
}
