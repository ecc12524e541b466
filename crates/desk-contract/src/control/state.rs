//! The control session's state as the wire shows it (owner, mode, generation, Stop) and the
//! screenshot geometry other answers carry: the types `api` names, kept apart from the
//! programs and receipts, which name `api`'s.

use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// What the control session's owner may do.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum ControlMode {
        /// Screenshots and status only; every program and action is refused (`control_observe_only`).
        Observe = "observe",
        /// Input programs and actions (XTEST seat input on the session's private display).
        #[default]
        Act = "act",
    }
}

crate::wire_enum! {
    /// Why a control generation was stopped.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum StopReason {
        /// The agent (or its harness) stopped itself.
        #[default]
        AgentStopped = "agent_stopped",
        /// A human stopped the agent.
        UserStopped = "user_stopped",
    }
}

/// The control session of one broker session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ControlStatus {
    /// Session id.
    pub session_id: String,
    /// The owner; `null` while nobody claimed the session (then requests without a control
    /// token may act, as before control sessions existed).
    pub owner: Option<String>,
    /// The owner's mode.
    pub mode: ControlMode,
    /// The generation: advanced by every claim, Stop and restart. Work carrying another
    /// generation is refused before any input.
    pub generation: u64,
    /// The target revision: advanced by every reset (a new bind of the app window).
    pub target_revision: u64,
    /// True after Stop until an explicit restart.
    pub stopped: bool,
    /// Why it was stopped; `null` unless `stopped`.
    pub stop_reason: Option<StopReason>,
}

/// What makes a screenshot a zoom: it is marked, never inferred from its region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ZoomInfo {
    /// The screenshot the region was given in.
    pub source_screenshot_id: String,
    /// Output pixels per screen pixel (a whole number, 1 to 8).
    pub scale: u32,
}

/// A rectangle in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PixelRect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}
