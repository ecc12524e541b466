//! Accessibility (AT-SPI) observations and their limits: what the worker reads from the
//! session's private accessibility bus and the broker hands to a client. See
//! `docs/accessibility.md`.

use serde::{Deserialize, Serialize};

use crate::desktop::WindowRect;

/// Default node limit of a snapshot.
pub const AX_DEFAULT_MAX_NODES: u32 = 2000;
/// Largest node limit a client may ask for.
pub const AX_MAX_NODES_CEILING: u32 = 10_000;
/// Default depth limit (the application is depth 0).
pub const AX_DEFAULT_MAX_DEPTH: u32 = 64;
/// Largest depth limit a client may ask for.
pub const AX_MAX_DEPTH_CEILING: u32 = 256;
/// The snapshot's deadline.
pub const AX_DEADLINE_MS: u32 = 3000;
/// Most characters an `ax_set_text` step may carry.
pub const AX_MAX_TEXT_CHARS: usize = 2_000;

crate::wire_enum! {
    /// Which window an accessible object lives in, as the worker found it at the snapshot: its
    /// top-level ancestor (depth 1) compared with the app's bound window. Semantic steps are
    /// admitted only on `bound` and `popup` nodes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum AxWindow {
        /// The application object itself, which is in no window.
        #[default]
        None = "none",
        /// The app's bound main window: a `frame` whose screen rectangle is the bound window's.
        Bound = "bound",
        /// One of the app's popups (`menu`, `popup menu`, `tool tip`), admitted explicitly.
        Popup = "popup",
        /// Another top-level window (a dialog, a second window, a hidden one): refused.
        Other = "other",
    }
}

crate::wire_enum! {
    /// How an `ax_set_text` step changes an editable object's text.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum TextMode {
        /// The whole contents become the text (EditableText `SetTextContents`).
        Set = "set",
        /// The text replaces the one selected range, or goes in at the caret (`DeleteText` +
        /// `InsertText`); text outside the selection stays.
        Insert = "insert",
    }
}

/// Bounds of one snapshot, checked by [`AxLimits::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AxLimits {
    /// At most this many nodes (1..=[`AX_MAX_NODES_CEILING`]).
    pub max_nodes: u32,
    /// Nodes deeper than this are not read (1..=[`AX_MAX_DEPTH_CEILING`]).
    pub max_depth: u32,
    /// The walk stops (truncated) after this many milliseconds.
    pub deadline_ms: u32,
}

/// Why a limit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be between 1 and {ceiling}, got {value}")]
pub struct AxLimitError {
    /// The query field.
    pub field: &'static str,
    /// The largest accepted value.
    pub ceiling: u32,
    /// What was asked.
    pub value: u32,
}

impl AxLimits {
    /// Limits from optional query values: defaults when absent, refused (never clamped) when
    /// zero or over the ceiling.
    pub fn new(max_nodes: Option<u32>, max_depth: Option<u32>) -> Result<AxLimits, AxLimitError> {
        let check = |field, value: Option<u32>, default, ceiling| match value {
            None => Ok(default),
            Some(value) if (1..=ceiling).contains(&value) => Ok(value),
            Some(value) => Err(AxLimitError {
                field,
                ceiling,
                value,
            }),
        };
        Ok(AxLimits {
            max_nodes: check(
                "max_nodes",
                max_nodes,
                AX_DEFAULT_MAX_NODES,
                AX_MAX_NODES_CEILING,
            )?,
            max_depth: check(
                "max_depth",
                max_depth,
                AX_DEFAULT_MAX_DEPTH,
                AX_MAX_DEPTH_CEILING,
            )?,
            deadline_ms: AX_DEADLINE_MS,
        })
    }
}

/// One accessible object of the app, in breadth-first order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct AxNode {
    /// Its index in this observation (the application is 0).
    pub index: u32,
    /// The parent's index; `None` for the application.
    pub parent: Option<u32>,
    /// Distance from the application.
    pub depth: u32,
    /// AT-SPI role name, e.g. `push button`, `frame`, `menu item`.
    pub role: String,
    /// Accessible name (may be empty).
    pub name: String,
    /// AT-SPI states, e.g. `enabled`, `showing`, `focused`.
    pub states: Vec<String>,
    /// Screen rectangle, when the object has one (Component).
    pub bounds: Option<WindowRect>,
    /// Names of its actions (Action), the first being the default one.
    pub actions: Vec<String>,
    /// Whether it implements EditableText (a target for `ax_set_text`).
    pub editable: bool,
    /// How many children the object reported (some may be beyond the limits).
    pub child_count: u32,
    /// The window it lives in (its top-level ancestor), as classified at the snapshot.
    #[serde(default)]
    pub window: AxWindow,
}

/// One snapshot of the app's accessibility tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct AxTree {
    /// Identifies this observation; node indices are valid only with it, and only until the
    /// next snapshot replaces it.
    pub observation_id: String,
    /// The nodes, breadth first; `nodes[i].index == i`.
    pub nodes: Vec<AxNode>,
    /// Whether objects were left out: by a limit (nodes, depth or deadline), or because one
    /// could not be read during the walk.
    pub truncated: bool,
    /// How long the walk took, in milliseconds.
    pub elapsed_ms: u64,
}
