//! The control session over a broker session (`docs/control-session.md`): its owner, mode,
//! generation and target revision; Stop and restart; typed input programs and their receipts;
//! screenshot geometry; the broker's capabilities.
//!
//! Every type here is wire API (`/v1`); adding an optional field is compatible.

use serde::{Deserialize, Serialize};

use crate::a11y::TextMode;
use crate::action::{Action, ActionType};
use crate::api::{Receipt, Screenshot};
use crate::error::ErrorCode;

mod state;

pub use state::{ControlMode, ControlStatus, PixelRect, StopReason, ZoomInfo};

/// `POST /v1/sessions/{id}/control`: claim the control session, or change the mode of one
/// this owner already holds. Restart after Stop is `POST /v1/sessions/{id}/control/restart`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ControlClaim {
    /// The owner's name: 1 to 200 printable ASCII characters.
    pub owner: String,
    /// The mode; `act` when absent.
    #[serde(default)]
    pub mode: ControlMode,
}

/// `POST /v1/sessions/{id}/stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    /// Why; `agent_stopped` when absent.
    #[serde(default)]
    pub reason: StopReason,
}

/// The answer to `POST /v1/sessions/{id}/stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct StopResponse {
    /// The control session after Stop (its generation already advanced).
    pub control: ControlStatus,
    /// Keys and buttons found held on the desktop and released after the generation advanced;
    /// `null` when the session has no desktop, or its queue was full (nothing is held after any
    /// step anyway: every step releases what it left held).
    pub released_held: Option<Vec<String>>,
}

/// The control token a program carries: who sends it and for which generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ControlToken {
    /// The owner that claimed the control session.
    pub owner: String,
    /// The generation the owner was given.
    pub generation: u64,
}

/// A program's semantic (accessibility) step: it acts on a node of the session's current
/// accessibility observation through AT-SPI, never through a coordinate. See
/// `docs/accessibility.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum SemanticStep {
    /// The node's default action, exactly once.
    AxPress {
        /// The current observation (from `GET .../accessibility`).
        observation_id: String,
        /// The node's index in it.
        node: u32,
        /// Why the agent does this; logged, never sent.
        intent: String,
    },
    /// Set or insert text in an editable node.
    AxSetText {
        /// The current observation.
        observation_id: String,
        /// The node's index in it.
        node: u32,
        /// The text: at most 2,000 characters, no control characters but newline and tab.
        text: String,
        /// `set` (the whole contents) or `insert` (at the caret, or over the one selection).
        mode: TextMode,
        /// Why the agent does this.
        intent: String,
    },
}

impl SemanticStep {
    /// The step's type.
    pub fn action_type(&self) -> ActionType {
        match self {
            SemanticStep::AxPress { .. } => ActionType::AxPress,
            SemanticStep::AxSetText { .. } => ActionType::AxSetText,
        }
    }

    /// The intent text as received.
    pub fn intent(&self) -> &str {
        match self {
            SemanticStep::AxPress { intent, .. } | SemanticStep::AxSetText { intent, .. } => intent,
        }
    }
}

/// One step of a program: an action of the action schema, or a semantic step. Both are objects
/// tagged by `type`; an action step serializes exactly as the action does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ProgramStep {
    /// `ax_press` or `ax_set_text`.
    Semantic(SemanticStep),
    /// Any action of the action schema.
    Input(Action),
}

impl ProgramStep {
    /// The wire names of the semantic step types, which decide how a step object is parsed.
    pub const SEMANTIC_TYPES: [&'static str; 2] = ["ax_press", "ax_set_text"];

    /// The intent text as received.
    pub fn intent(&self) -> &str {
        match self {
            ProgramStep::Semantic(step) => step.intent(),
            ProgramStep::Input(action) => action.intent(),
        }
    }
}

impl From<Action> for ProgramStep {
    fn from(action: Action) -> ProgramStep {
        ProgramStep::Input(action)
    }
}

impl From<SemanticStep> for ProgramStep {
    fn from(step: SemanticStep) -> ProgramStep {
        ProgramStep::Semantic(step)
    }
}

/// Most steps one program may carry.
pub const MAX_PROGRAM_STEPS: usize = 64;

/// `POST /v1/sessions/{id}/programs`: a typed input program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProgramRequest {
    /// Idempotency key: the program runs at most once per session and request id.
    pub request_id: String,
    /// The session's next action index; the whole program takes this one index.
    pub expected_action_index: u64,
    /// The control token; required once the session has an owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlToken>,
    /// The screenshot the steps' coordinates were read from; when present, every coordinate is
    /// an image pixel of that screenshot, checked against its geometry and mapped to the
    /// screen once. When absent, coordinates are screen pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_id: Option<String>,
    /// 1 to [`MAX_PROGRAM_STEPS`] steps, run in order: actions of the action schema and
    /// semantic steps.
    pub steps: Vec<ProgramStep>,
}

/// The step at which a program stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct StepFailure {
    /// Index of the failing step in `steps`.
    pub step_index: u64,
    /// Why: `control_stopped`, `control_stale_generation`, `desktop_failed`, ...
    pub code: ErrorCode,
    /// What happened.
    pub message: String,
}

/// The receipt of a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ProgramReceipt {
    /// The action index the program took.
    pub action_index: u64,
    /// The control generation it ran under.
    pub generation: u64,
    /// The target revision it ran against.
    pub target_revision: u64,
    /// Steps in the request.
    pub n_steps: u64,
    /// Steps whose input the broker started to send (a failing step counts when the backend
    /// was called for it).
    pub attempted: u64,
    /// Steps whose input was delivered.
    pub submitted: u64,
    /// The step that failed or was stopped; the steps after it never ran. `null` when every
    /// step was submitted.
    pub failing_step: Option<StepFailure>,
    /// Why the program's one final observation is missing (`stopped`: the generation changed
    /// while the program ran, so its frame was discarded; or the last step's own
    /// `observation_failures`); `null` when the screenshot is current.
    pub observation_error: Option<String>,
    /// The broker's own failed observations after delivery (`frame_store`, `event_log`,
    /// `evidence`), as in an action's receipt; the program still counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observation_failures: Vec<String>,
    /// One receipt per submitted step, in order.
    pub steps: Vec<Receipt>,
    /// Milliseconds of host execution spent on the program's one final observation (the last
    /// step's settle wait, capture and encode, and the broker's screenshot); each step's own
    /// is in its receipt. Host time only, not model reasoning or network latency.
    #[serde(default)]
    pub observation_elapsed_ms: u64,
    /// Milliseconds from acceptance to response.
    pub total_ms: u64,
}

/// The answer to a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ProgramResponse {
    /// The action index the program took.
    pub action_index: u64,
    /// True when this answer replays the cached response of an earlier identical request.
    pub idempotent_replay: bool,
    /// The receipt.
    pub receipt: ProgramReceipt,
    /// The one final observation, after the last submitted step settled; `null` with
    /// `observation_error`.
    pub screenshot: Option<Screenshot>,
}

/// `POST /v1/sessions/{id}/zoom`: a fresh capture of a region, enlarged. The region is in the
/// image pixels of `screenshot_id` and must lie inside its content rectangle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ZoomRequest {
    /// The screenshot whose pixels the region is given in (current generation and revision).
    pub screenshot_id: String,
    /// Left edge, image pixels.
    pub x: u32,
    /// Top edge, image pixels.
    pub y: u32,
    /// Width, image pixels (at least 1).
    pub width: u32,
    /// Height, image pixels (at least 1).
    pub height: u32,
}

/// Whether a feature is offered, and the refusal code when it is not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FeatureSupport {
    /// The feature's name, e.g. `background_input`.
    pub feature: String,
    /// True when this broker offers it.
    pub supported: bool,
    /// The error code a request for it gets when unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<ErrorCode>,
    /// One line on what it is or why it is missing.
    pub note: String,
}

/// `GET /v1/capabilities` (and `GET /v1/sessions/{id}/capabilities`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Capabilities {
    /// The API path prefix, `/v1`.
    pub api: String,
    /// Every route as `METHOD path`.
    pub routes: Vec<String>,
    /// Action types of `POST .../actions`.
    pub action_types: Vec<String>,
    /// Step types of `POST .../programs`: the action schema, plus `ax_press` and
    /// `ax_set_text` when this broker's desktops offer accessibility.
    pub step_types: Vec<String>,
    /// Most steps per program.
    pub max_program_steps: u64,
    /// Screenshot geometry entries kept per control generation and target revision.
    pub screenshot_history: u64,
    /// Control modes.
    pub modes: Vec<String>,
    /// Every feature a client may ask for, offered or not.
    pub features: Vec<FeatureSupport>,
    /// The session, for the per-session document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session's control state, for the per-session document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlStatus>,
}
