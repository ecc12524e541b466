//! Input event records: what the desktop worker reports it injected, and the two NDJSON logs
//! (`events.json`, `frame_events.json`) the broker writes from them.
//!
//! Schema (one JSON object per line), documented in `docs/event-logs.md`:
//! `events.json`: `{"type", ...fields, "timestamp_ms", "sourcePid": -1, "actionIndex",
//! "provenance"}`; `frame_events.json`: `{"frame", "video_t_ms", "events": [event + "video_t_ms" +
//! "t_in_frame_ms"]}`.

use serde::{Deserialize, Serialize};

use crate::action::Button;

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

/// Who produced an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// An agent action executed by the broker.
    BrokerAction,
    /// The broker's own documented save gesture during a checkpoint.
    BrokerCheckpoint,
    /// The broker releasing keys or buttons left held.
    BrokerRelease,
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
    /// The action index that produced it.
    #[serde(rename = "actionIndex")]
    pub action_index: u64,
    /// Who produced it.
    pub provenance: Provenance,
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
