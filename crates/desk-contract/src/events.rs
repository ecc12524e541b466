//! Input event records: what the desktop worker reports it injected, and the two NDJSON logs
//! (`events.json`, `frame_events.json`) the broker writes from them.
//!
//! Schema (one JSON object per line), documented in `docs/event-logs.md`:
//! `events.json`: `{"type", ...fields, "timestamp_ms", "sourcePid": -1, "actionIndex",
//! "provenance": "broker_action", "origin"}`; `frame_events.json`: `{"frame", "video_t_ms",
//! "events": [event + "video_t_ms" + "t_in_frame_ms"]}`.
//!
//! Invariant: every row is broker-generated input, so `provenance` is always `broker_action`
//! (the benchmark contract's value); what produced it (the agent's action, the checkpoint's save
//! gesture, the release of input left held) is `origin`.

use serde::{Deserialize, Serialize};

use crate::action::{Button, Modifier};
use crate::geometry::ScreenPoint;

/// File name of the raw input log (the benchmark contract's name).
pub const EVENTS_FILE: &str = "events.json";
/// File name of the frame-aligned input log (the benchmark contract's name).
pub const FRAME_EVENTS_FILE: &str = "frame_events.json";

/// One low-level input the worker sent, in order.
///
/// No `deny_unknown_fields` here or on [`InputEvent`]: both are flattened into larger records,
/// and serde cannot deserialize a flattened type that denies unknown fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputEventKind {
    /// The pointer moved to a point with no button held.
    MouseMove {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
    },
    /// A button went down or up.
    Click {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
        /// Button.
        button: Button,
        /// Down (true) or up (false).
        pressed: bool,
    },
    /// The pointer moved with a button held.
    Drag {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
        /// Held button.
        button: Button,
    },
    /// One wheel notch batch.
    Scroll {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
        /// Horizontal notches.
        dx: i32,
        /// Vertical notches.
        dy: i32,
    },
    /// A non-modifier key went down or up.
    Key {
        /// Canonical key name, or the character typed.
        key: String,
        /// Down or up.
        pressed: bool,
    },
    /// A modifier went down or up.
    ModifierChange {
        /// `shift`, `ctrl` or `alt`.
        modifier: String,
        /// Down or up.
        pressed: bool,
    },
    /// A semantic step reached the app's accessibility provider (no seat input).
    AxAction {
        /// `ax_press` or `ax_set_text`.
        action: String,
        /// The observation the node belongs to.
        observation_id: String,
        /// The node's index in it.
        node: u32,
        /// For `ax_set_text`: how many characters were set or inserted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text_chars: Option<u32>,
    },
}

/// A low-level input with the wall-clock time it was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputEvent {
    /// Milliseconds since the Unix epoch when the worker sent it.
    pub timestamp_ms: u64,
    /// What was sent.
    #[serde(flatten)]
    pub kind: InputEventKind,
}

/// Who generated an event: always the broker (the benchmark contract's
/// `provenance="broker_action"`); [`Origin`] says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Input the broker injected.
    BrokerAction,
}

/// Why the broker generated an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The agent's action `actionIndex`.
    Action,
    /// The profile's save gesture sent by a checkpoint; `actionIndex` is the last action
    /// accepted before it (null when none was).
    Checkpoint,
    /// A key or button found held after action `actionIndex` and released by the broker.
    Release,
}

/// The events of releasing `names` (as an `ActionOutcome`'s `released_after` reports them:
/// `shift`/`ctrl`/`alt`, `mouse_left`/`mouse_middle`/`mouse_right`, or a key name) at `at_ms`
/// with the pointer at `pointer`. A name that is no modifier or pointer button (including other
/// mouse buttons) is a `key` release of that name.
pub fn release_events(names: &[String], at_ms: u64, pointer: ScreenPoint) -> Vec<InputEvent> {
    names
        .iter()
        .map(|name| {
            let modifier = [Modifier::Shift, Modifier::Ctrl, Modifier::Alt]
                .into_iter()
                .find(|modifier| modifier.as_str() == name);
            let button = match name.as_str() {
                "mouse_left" => Some(Button::Left),
                "mouse_middle" => Some(Button::Middle),
                "mouse_right" => Some(Button::Right),
                _ => None,
            };
            let kind = match (modifier, button) {
                (Some(modifier), _) => InputEventKind::ModifierChange {
                    modifier: modifier.as_str().to_string(),
                    pressed: false,
                },
                (None, Some(button)) => InputEventKind::Click {
                    x: pointer.x,
                    y: pointer.y,
                    button,
                    pressed: false,
                },
                (None, None) => InputEventKind::Key {
                    key: name.clone(),
                    pressed: false,
                },
            };
            InputEvent {
                timestamp_ms: at_ms,
                kind,
            }
        })
        .collect()
}

/// A row of `events.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The event.
    #[serde(flatten)]
    pub event: InputEvent,
    /// Always -1 for synthetic input.
    #[serde(rename = "sourcePid")]
    pub source_pid: i32,
    /// The action that produced it ([`Origin::Action`], [`Origin::Release`]) or preceded it
    /// ([`Origin::Checkpoint`]; `None`, serialized as null, when no action preceded it).
    #[serde(rename = "actionIndex")]
    pub action_index: Option<u64>,
    /// Always [`Provenance::BrokerAction`].
    pub provenance: Provenance,
    /// Why the broker sent it.
    pub origin: Origin,
    /// The step of the input program `actionIndex` that produced it; absent for a single
    /// action and a checkpoint.
    #[serde(rename = "stepIndex", default, skip_serializing_if = "Option::is_none")]
    pub step_index: Option<u64>,
}

/// An event embedded in a `frame_events.json` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameEvent {
    /// The event record.
    #[serde(flatten)]
    pub record: EventRecord,
    /// Milliseconds from the handoff frame (video time 0) to this event.
    pub video_t_ms: u64,
    /// Milliseconds from the previous captured frame to this event.
    pub t_in_frame_ms: u64,
}

/// A row of `frame_events.json`: one per captured action frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameEventsRow {
    /// The screenshot sequence number of the frame.
    pub frame: u64,
    /// Milliseconds from the handoff frame to this frame's capture.
    pub video_t_ms: u64,
    /// Inputs accepted since the previous frame.
    pub events: Vec<FrameEvent>,
}
