//! Anthropic's computer tool mapped onto normalized actions. Three wire forms exist (checked
//! against anthropic-sdk-typescript `src/resources/beta/messages/messages.ts` and
//! `src/resources/messages/messages.ts`, and anthropic-sdk-python
//! `src/anthropic/types/beta/beta_tool_computer_use_20251124_param.py`):
//! - `computer_20250124` (beta `computer-use-2025-01-24`): one tool named `computer`, the action
//!   in `input.action`;
//! - `computer_20251124` (beta `computer-use-2025-11-24`): the same plus `zoom` when the tool
//!   declares `enable_zoom: true`;
//! - the tool set `computer_toolset_20260801` (GA, no beta header): one `tools[]` entry with
//!   only a `type`; the model calls one tool per action name (`left_click`, `zoom`, …) with the
//!   same input fields minus `action`. [`member_input`] turns such a call into the single-tool
//!   form.
//!
//! [`tool_for_model`] picks the form by model; `--native-tool` overrides it.
//!
//! One `tool_use` becomes one batch:
//! - `left_click`/`right_click`/`middle_click`/`double_click {coordinate?, text?, key?}` →
//!   `click` or `double_click` with that button; without a coordinate, at the last pointer
//!   position. Modifiers held during the click (`"shift"`, `"ctrl+alt"`) are read from `key`
//!   (Anthropic's reference implementation sends them there) or from `text` → `modifiers`.
//! - `mouse_move {coordinate}` → `move` (instant).
//! - `left_click_drag {start_coordinate, coordinate}` → `drag` along the two points.
//! - `left_mouse_down` / `left_mouse_up` (optional `coordinate`, treated as a move first): a
//!   deferred drag (see `native`): moves while held extend its path and the release emits one
//!   `drag` (or a `click` if the pointer never moved).
//! - `scroll {coordinate?, scroll_direction, scroll_amount, text?}` → `move` to the coordinate,
//!   then `scroll` of `scroll_amount` notches in that direction, `text` as modifiers.
//! - `key {text}` → one `key` chord per space-separated xdotool chord (`"ctrl+s"`, `"Return"`).
//! - `hold_key {text, duration}` → the chord pressed once, then `wait` for `duration` seconds.
//!   The normalized schema cannot keep a key down across other input, so auto-repeat and
//!   "hold while the next call clicks" are not reproduced.
//! - `type {text}` → `type`, newlines and tabs as Return and Tab keys.
//! - `wait {duration}` → `wait` (seconds to ms, split into 10 s waits).
//! - `screenshot` → `wait` 1 ms, a no-input observation; `cursor_position` → the same, with the
//!   last known pointer position (image pixels) in the tool result.
//! - `zoom {region: [x0, y0, x1, y1]}` is answered by the adapter without input: a crop of the
//!   last full-resolution frame (see `anthropic`), never reaching the broker.
//! - `triple_click` has no normalized equivalent (the action schema has no click count); it is
//!   refused with a message naming what to do instead.

use serde_json::Value;

use crate::native::{NativeBatch, modifiers_from_names};
use crate::scale::ScreenXy;

/// The tool type for models before Claude Opus 4.5.
pub(crate) const TOOL_20250124: &str = "computer_20250124";
/// The tool type for Claude Opus 4.5, Opus 4.6 and Sonnet 4.6.
pub(crate) const TOOL_20251124: &str = "computer_20251124";
/// The tool set form (one tool per action name), for later models.
pub(crate) const TOOLSET_20260801: &str = "computer_toolset_20260801";

/// The member names of `computer_toolset_20260801` (its `configs` keys).
const TOOLSET_MEMBERS: [&str; 17] = [
    "cursor_position",
    "double_click",
    "hold_key",
    "key",
    "left_click",
    "left_click_drag",
    "left_mouse_down",
    "left_mouse_up",
    "middle_click",
    "mouse_move",
    "right_click",
    "screenshot",
    "scroll",
    "triple_click",
    "type",
    "wait",
    "zoom",
];

/// The computer tool form for `model`: `computer_20250124` for Claude 3.7 and Claude 4 models up
/// to Sonnet/Haiku 4.5 and Opus 4.1, `computer_20251124` for Opus 4.5, Opus 4.6 and Sonnet 4.6,
/// the tool set for every other (later) model.
pub(crate) fn tool_for_model(model: &str) -> &'static str {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or_default();
    const NEWER: [&str; 3] = ["claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-6"];
    const OLDER: [&str; 9] = [
        "claude-3-7-sonnet",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-3-5",
        "claude-3",
        "claude-2",
    ];
    if NEWER.iter().any(|prefix| model.starts_with(prefix)) {
        TOOL_20251124
    } else if OLDER.iter().any(|prefix| model.starts_with(prefix)) {
        TOOL_20250124
    } else {
        TOOLSET_20260801
    }
}

/// Whether `name` is a member of the tool set.
pub(crate) fn is_toolset_member(name: &str) -> bool {
    TOOLSET_MEMBERS.contains(&name)
}

/// A tool set call (`name`, `input`) in the single-tool form: `input` with `action: name`.
pub(crate) fn member_input(name: &str, input: &Value) -> Value {
    let mut merged = match input {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    merged.insert("action".into(), Value::String(name.to_string()));
    Value::Object(merged)
}

/// The `anthropic-beta` value for a single computer tool type (`computer_YYYYMMDD`); the tool
/// set needs none.
pub(crate) fn beta_header(tool_type: &str) -> Option<String> {
    let date = tool_type.strip_prefix("computer_")?;
    if date.len() != 8 || !date.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(format!(
        "computer-use-{}-{}-{}",
        &date[..4],
        &date[4..6],
        &date[6..]
    ))
}

/// Maps one `tool_use` input into `batch`.
pub(crate) fn map_input(batch: &mut NativeBatch<'_>, input: &Value) -> Result<(), String> {
    let action = input
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let text = input.get("text").and_then(Value::as_str);
    let coordinate = |name: &str| -> Result<Option<ScreenXy>, String> {
        match input.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(pair)) if pair.len() == 2 => {
                batch.point(pair.first(), pair.get(1)).map(Some)
            }
            Some(_) => Err(format!("`{name}` must be [x, y]")),
        }
    };
    // Held modifiers: `key` (the reference implementation) or `text`, e.g. "shift", "ctrl+alt".
    let held = input.get("key").and_then(Value::as_str).or(text);
    let modifiers = || match held {
        Some(names) => modifiers_from_names(names.split('+')),
        None => Ok(Vec::new()),
    };
    match action {
        "left_click" | "right_click" | "middle_click" | "double_click" => {
            let (kind, button) = match action {
                "right_click" => ("click", "right"),
                "middle_click" => ("click", "middle"),
                "double_click" => ("double_click", "left"),
                _ => ("click", "left"),
            };
            let at = match coordinate("coordinate")? {
                Some(at) => at,
                None => batch.current()?,
            };
            let modifiers = modifiers()?;
            batch.click(kind, at, button, &modifiers)
        }
        "mouse_move" => {
            let at = coordinate("coordinate")?.ok_or("mouse_move needs `coordinate`")?;
            batch.move_to(at);
            Ok(())
        }
        "left_click_drag" => {
            let start = match coordinate("start_coordinate")? {
                Some(start) => start,
                None => batch.current()?,
            };
            let end = coordinate("coordinate")?.ok_or("left_click_drag needs `coordinate`")?;
            batch.drag(&[start, end], &[])
        }
        "left_mouse_down" => {
            if let Some(at) = coordinate("coordinate")? {
                batch.move_to(at);
            }
            batch.press("left")
        }
        "left_mouse_up" => {
            if let Some(at) = coordinate("coordinate")? {
                batch.move_to(at);
            }
            batch.release()
        }
        "scroll" => {
            let at = coordinate("coordinate")?;
            let amount = input
                .get("scroll_amount")
                .and_then(Value::as_i64)
                .unwrap_or(3);
            let (dx, dy) = match input.get("scroll_direction").and_then(Value::as_str) {
                Some("up") => (0, -amount),
                Some("down") => (0, amount),
                Some("left") => (-amount, 0),
                Some("right") => (amount, 0),
                _ => return Err("scroll needs `scroll_direction` up, down, left or right".into()),
            };
            let modifiers = modifiers()?;
            batch.scroll(at, dx, dy, &modifiers)
        }
        "key" => {
            let chords: Vec<String> = text
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect();
            if chords.is_empty() {
                return Err("key needs `text`, e.g. \"ctrl+s\" or \"Return\"".to_string());
            }
            for chord in chords {
                batch.key(vec![chord])?;
            }
            Ok(())
        }
        "hold_key" => {
            let chord = text.unwrap_or_default().trim();
            if chord.is_empty() {
                return Err("hold_key needs `text`".to_string());
            }
            batch.key(vec![chord.to_string()])?;
            batch.wait(seconds_to_ms(input.get("duration")));
            batch.notes.push(
                "hold_key was sent as one key press followed by a wait; keys cannot stay held \
                 across other actions here"
                    .to_string(),
            );
            Ok(())
        }
        "type" => batch.type_text(text.unwrap_or_default()),
        "wait" => {
            batch.wait(seconds_to_ms(input.get("duration")));
            Ok(())
        }
        "screenshot" => {
            batch.wait(1);
            Ok(())
        }
        "cursor_position" => {
            batch.wait(1);
            let note = match batch.current_in_image() {
                Some(at) => format!("the pointer is at [{}, {}]", at.x, at.y),
                None => "the pointer position is unknown (the pointer was not moved yet)".into(),
            };
            batch.notes.push(note);
            Ok(())
        }
        "triple_click" => Err(
            "triple_click is not available on this desktop (the action schema \
             has no click count); select a word with double_click, a line with left_click then \
             key \"Home\" and key \"shift+End\", or a range with left_click_drag"
                .to_string(),
        ),
        "" => Err("the computer tool input lacks `action`".to_string()),
        other => Err(format!(
            "computer action `{other}` is not supported here; use click, double_click, drag, key \
             or type actions"
        )),
    }
}

fn seconds_to_ms(value: Option<&Value>) -> u64 {
    let seconds = value.and_then(Value::as_f64).unwrap_or(1.0).max(0.0);
    // Non-negative and bounded by the vendor's 100 s limit in practice; saturates otherwise.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let milliseconds = (seconds * 1000.0).round() as u64;
    milliseconds
}
