//! What the model is told: the system prompt, the `computer_action` tool schema, the task text
//! and the per-turn tool-result text.
//!
//! The system prompt states the contract's batching rule: the harness runs a whole batch open
//! loop and shows only the final screenshot, so any action that depends on seeing a focus change,
//! dialog, menu, command state or render must travel in a one-action batch, and `done` may only
//! be last. It also states the image size, because coordinates are pixels of the shown image.

use desk_harness::{Observation, TaskBrief};
use serde_json::{Value, json};

use crate::config::ToolMode;
use crate::scale::ImageScale;

/// The function tool's name, fixed by the benchmark contract.
pub(crate) const TOOL_NAME: &str = "computer_action";

/// The function tool's description.
pub(crate) const TOOL_DESCRIPTION: &str = "Run a non-empty ordered batch of desktop actions. The batch \
runs open loop: you see one aggregate outcome and the final screenshot only after every item \
ran. Batch only short deterministic sequences; send a one-action batch whenever the next action \
depends on seeing a focus change, dialog, menu, command state or render. `done` may appear only \
as the last item. Every action needs an `intent`.";

/// The system prompt for a run.
pub(crate) fn system_prompt(brief: &TaskBrief, scale: &ImageScale, mode: ToolMode) -> String {
    let image = scale.image();
    let tool_rules = match mode {
        ToolMode::Function => format!(
            "Act only through the `{TOOL_NAME}` tool, exactly one call per turn. Its `actions` \
             array is an ordered batch. The harness validates the whole batch first (schema, \
             screen bounds, remaining budget, `done` only last) and then executes the items \
             immediately and sequentially, with no screenshot between them. You then get one \
             aggregate delivery message and the final screenshot.\n\
             Batching rule: batch only short deterministic sequences, such as `type` into a field \
             whose focus you already saw followed by a `key` Enter. Use a one-action batch \
             whenever the next action depends on seeing a focus change, a dialog, a menu, the \
             command state or a render. `done` may appear only as the last item of a batch, and \
             ends the task. Every action needs a short `intent` saying why you do it.\n\
             Actions: click/double_click {{x, y, button, modifiers?}}, drag {{path: [{{x, y}}, \
             ...], button, duration_ms, modifiers?}}, move {{x, y, duration_ms}}, scroll {{dx, \
             dy, modifiers?}} in wheel notches at the pointer, key {{keys: [...]}} one chord such \
             as [\"ctrl\", \"s\"] or [\"enter\"], type {{text}} printable ASCII, wait \
             {{milliseconds}}, done {{}}. Modifiers are shift, ctrl and alt."
        ),
        ToolMode::Native => "Act only through the computer tool. Each tool call runs as one \
             batch: you see its outcome and a fresh screenshot only after all of it ran. Send \
             one action per call whenever the next action depends on seeing a focus change, a \
             dialog, a menu, the command state or a render. When the drawing is complete and \
             saved, answer without calling the tool; that ends the task."
            .to_string(),
    };
    format!(
        "You operate a real Linux desktop running LibreCAD to reproduce a CAD drawing.\n\
         Screenshots are shown to you at {width}x{height} pixels. Every coordinate you send is a \
         pixel of that image, (0, 0) at the top-left corner, x to the right, y down.\n\
         {tool_rules}\n\
         Budgets: at most {max_actions} actions in total (every item of every batch counts) and \
         {wall_time_s} s of wall time. Units are millimetres unless the task says otherwise. Only \
         the final saved drawing is scored; save it before you finish.",
        width = image.width,
        height = image.height,
        max_actions = brief.max_actions,
        wall_time_s = brief.wall_time_s,
    )
}

/// The first user message's text, placed before the reference image.
pub(crate) fn task_text(brief: &TaskBrief) -> String {
    format!(
        "Task {}:\n{}\n\nThe next image is the dimensioned reference drawing (not the screen).",
        brief.task_id, brief.prompt
    )
}

/// The text placed before the first screenshot.
pub(crate) fn first_screen_text(observation: &Observation) -> String {
    format!(
        "The current screen (turn {}, {} actions and {} ms left).",
        observation.turn, observation.remaining_actions, observation.remaining_ms
    )
}

/// What the previous tool call produced, as sent back in the tool result.
#[derive(Debug, Default, Clone)]
pub(crate) struct PendingResult {
    /// The call ids that await a result (usually one).
    pub(crate) call_ids: Vec<String>,
    /// The error when the call was malformed.
    pub(crate) error: Option<String>,
    /// An adapter note (e.g. how a native action was mapped).
    pub(crate) note: Option<String>,
}

/// The tool-result text for this turn: the delivery summary (or the error) plus budgets.
pub(crate) fn tool_result_text(observation: &Observation, pending: &PendingResult) -> String {
    let mut result = serde_json::Map::new();
    if let Some(error) = &pending.error {
        result.insert("error".into(), json!(error));
    }
    if let Some(delivery) = &observation.delivery {
        result.insert(
            "delivery".into(),
            serde_json::to_value(delivery).unwrap_or(Value::Null),
        );
    }
    if let Some(note) = &pending.note {
        result.insert("note".into(), json!(note));
    }
    result.insert("turn".into(), json!(observation.turn));
    result.insert(
        "remaining_actions".into(),
        json!(observation.remaining_actions),
    );
    result.insert("remaining_ms".into(), json!(observation.remaining_ms));
    Value::Object(result).to_string()
}

/// The JSON schema of the `computer_action` tool's arguments.
pub(crate) fn computer_action_schema() -> Value {
    let intent = json!({"type": "string", "description": "why you do this (logged, never typed)"});
    let button = json!({"type": "string", "enum": ["left", "right", "middle"]});
    let modifiers =
        json!({"type": "array", "items": {"type": "string", "enum": ["shift", "ctrl", "alt"]}});
    let coordinate = json!({"type": "integer", "description": "image pixels"});
    let point = json!({"type": "object", "properties": {"x": coordinate, "y": coordinate},
        "required": ["x", "y"], "additionalProperties": false});
    let variant = |name: &str, properties: Value, required: &[&str]| {
        let mut props = properties.as_object().cloned().unwrap_or_default();
        props.insert("type".into(), json!({"type": "string", "const": name}));
        props.insert("intent".into(), intent.clone());
        let mut required: Vec<&str> = required.to_vec();
        required.extend(["type", "intent"]);
        json!({"type": "object", "properties": props, "required": required,
            "additionalProperties": false})
    };
    let click = json!({"x": coordinate, "y": coordinate, "button": button, "modifiers": modifiers});
    json!({
        "type": "object",
        "properties": {
            "actions": {
                "type": "array",
                "minItems": 1,
                "description": "ordered batch; `done` only last",
                "items": {"anyOf": [
                    variant("click", click.clone(), &["x", "y"]),
                    variant("double_click", click, &["x", "y"]),
                    variant("drag", json!({"path": {"type": "array", "items": point,
                        "minItems": 2, "maxItems": 64}, "button": button,
                        "duration_ms": {"type": "integer"}, "modifiers": modifiers}), &["path"]),
                    variant("move", json!({"x": coordinate, "y": coordinate,
                        "duration_ms": {"type": "integer"}}), &["x", "y"]),
                    variant("scroll", json!({"dx": {"type": "integer"}, "dy": {"type": "integer"},
                        "modifiers": modifiers}), &[]),
                    variant("key", json!({"keys": {"type": "array", "items": {"type": "string"},
                        "minItems": 1}}), &["keys"]),
                    variant("type", json!({"text": {"type": "string"}}), &["text"]),
                    variant("wait", json!({"milliseconds": {"type": "integer"}}), &["milliseconds"]),
                    variant("done", json!({}), &[]),
                ]}
            }
        },
        "required": ["actions"],
        "additionalProperties": false
    })
}
