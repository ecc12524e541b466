//! Anthropic's computer tool (`computer_20250124` style `tool_use` inputs) mapped onto
//! normalized actions. One `tool_use` becomes one batch:
//! - `left_click`/`right_click`/`middle_click`/`double_click {coordinate?, text?}` → `click` or
//!   `double_click` with that button; without a coordinate, at the last pointer position. `text`
//!   names modifiers held during the click (`"shift"`, `"ctrl+alt"`) → `modifiers`.
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
//! - `triple_click` and `zoom` have no normalized equivalent and are refused.

use serde_json::Value;

use crate::native::{NativeBatch, modifiers_from_names};
use crate::scale::ScreenXy;

/// The default native tool type and the beta header it needs.
pub(crate) const DEFAULT_TOOL: &str = "computer_20250124";

/// The `anthropic-beta` value for a computer tool type (`computer_YYYYMMDD`).
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
    let modifiers = || match text {
        Some(text) => modifiers_from_names(text.split('+')),
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
