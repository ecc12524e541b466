//! The agent-facing action schema, exactly as it appears on the wire.
//!
//! These types accept any JSON number so that an out-of-range value becomes a typed
//! [`crate::ActionError`] from [`crate::validate_action`] rather than a parse failure with a vague
//! message. Nothing here is trusted: only a [`crate::ValidatedAction`] may reach a desktop.

use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// A mouse button.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum Button {
        /// The primary button.
        #[default]
        Left = "left",
        /// The secondary button.
        Right = "right",
        /// The middle button (wheel press).
        Middle = "middle",
    }
}

crate::wire_enum! {
    /// A modifier that may be held during a pointer gesture.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Modifier {
        /// Either Shift key.
        Shift = "shift",
        /// Either Control key.
        Ctrl = "ctrl",
        /// Either Alt key.
        Alt = "alt",
    }
}

/// A point as sent by a client; validated against the display before use.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WirePoint {
    /// Column in screen pixels.
    pub x: i64,
    /// Row in screen pixels.
    pub y: i64,
}

/// One agent action, as received. Every variant carries a required `intent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Press and release a button once at a point.
    Click {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// Button; left when absent.
        #[serde(default)]
        button: Button,
        /// Modifiers held during the gesture and released after it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
        /// Why the agent does this; logged, never injected.
        intent: String,
    },
    /// Two clicks in quick succession at a point.
    DoubleClick {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// Button; left when absent.
        #[serde(default)]
        button: Button,
        /// Modifiers held during the gesture and released after it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
        /// Why the agent does this.
        intent: String,
    },
    /// Press at the first point, move through the others, release at the last.
    Drag {
        /// 2 to 64 points.
        path: Vec<WirePoint>,
        /// Button; left when absent.
        #[serde(default)]
        button: Button,
        /// Total time spent moving along the path.
        #[serde(default)]
        duration_ms: i64,
        /// Modifiers held during the gesture and released after it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
        /// Why the agent does this.
        intent: String,
    },
    /// Move the pointer without pressing anything.
    Move {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// Time spent moving; 0 jumps.
        #[serde(default)]
        duration_ms: i64,
        /// Why the agent does this.
        intent: String,
    },
    /// Turn the wheel at the current pointer position. Positive `dy` scrolls down, positive `dx`
    /// scrolls right; each unit is one wheel notch.
    Scroll {
        /// Horizontal notches.
        #[serde(default)]
        dx: i64,
        /// Vertical notches.
        #[serde(default)]
        dy: i64,
        /// Modifiers held during the gesture and released after it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
        /// Why the agent does this.
        intent: String,
    },
    /// Press one chord: modifiers down in order, the key, then everything up in reverse.
    Key {
        /// Key names, e.g. `["ctrl", "s"]`; an element may itself be a `+` chord (`"ctrl+s"`).
        keys: Vec<String>,
        /// Why the agent does this.
        intent: String,
    },
    /// Type printable ASCII text, character by character.
    Type {
        /// At most 2,000 printable ASCII characters.
        text: String,
        /// Why the agent does this.
        intent: String,
    },
    /// Do nothing for a while, then observe.
    Wait {
        /// How long to wait.
        milliseconds: i64,
        /// Why the agent does this.
        intent: String,
    },
    /// The agent declares the task finished. Only ever the final action of a session.
    Done {
        /// Why the agent stops.
        intent: String,
    },
}

crate::wire_enum! {
    /// The variant of an [`Action`], by its wire name (its `type`), or of a program's semantic
    /// step ([`crate::control::SemanticStep`]: `ax_press`, `ax_set_text`, never an action).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ActionType {
        /// [`Action::Click`].
        Click = "click",
        /// [`Action::DoubleClick`].
        DoubleClick = "double_click",
        /// [`Action::Drag`].
        Drag = "drag",
        /// [`Action::Move`].
        Move = "move",
        /// [`Action::Scroll`].
        Scroll = "scroll",
        /// [`Action::Key`].
        Key = "key",
        /// [`Action::Type`].
        Type = "type",
        /// [`Action::Wait`].
        Wait = "wait",
        /// [`Action::Done`].
        Done = "done",
        /// [`crate::control::SemanticStep::AxPress`] (programs only).
        AxPress = "ax_press",
        /// [`crate::control::SemanticStep::AxSetText`] (programs only).
        AxSetText = "ax_set_text",
    }
}

impl ActionType {
    /// Whether this is a semantic (accessibility) step, which only a program may carry.
    pub fn is_semantic(self) -> bool {
        matches!(self, ActionType::AxPress | ActionType::AxSetText)
    }
}

impl Action {
    /// The variant.
    pub fn action_type(&self) -> ActionType {
        match self {
            Action::Click { .. } => ActionType::Click,
            Action::DoubleClick { .. } => ActionType::DoubleClick,
            Action::Drag { .. } => ActionType::Drag,
            Action::Move { .. } => ActionType::Move,
            Action::Scroll { .. } => ActionType::Scroll,
            Action::Key { .. } => ActionType::Key,
            Action::Type { .. } => ActionType::Type,
            Action::Wait { .. } => ActionType::Wait,
            Action::Done { .. } => ActionType::Done,
        }
    }

    /// The wire name of the variant.
    pub fn type_name(&self) -> &'static str {
        self.action_type().as_str()
    }

    /// The intent text as received.
    pub fn intent(&self) -> &str {
        match self {
            Action::Click { intent, .. }
            | Action::DoubleClick { intent, .. }
            | Action::Drag { intent, .. }
            | Action::Move { intent, .. }
            | Action::Scroll { intent, .. }
            | Action::Key { intent, .. }
            | Action::Type { intent, .. }
            | Action::Wait { intent, .. }
            | Action::Done { intent } => intent,
        }
    }
}
