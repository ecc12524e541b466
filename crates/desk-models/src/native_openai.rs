//! OpenAI's computer tool (`computer_call` items) mapped onto normalized actions.
//!
//! One `computer_call` (its `actions` array, or the preview tool's single `action`) becomes one
//! batch, in order:
//! - `click {x, y, button, keys?}`: button `left`/`right`, `wheel` → `middle`; `back`/`forward`
//!   have no equivalent and are refused. `keys` held during the click become `modifiers`.
//! - `double_click {x, y}` → `double_click` (left).
//! - `drag {path, keys?}` → `drag` (left button, 300 ms along the path).
//! - `keypress {keys}` → one `key` chord with the names lowercased (the broker resolves aliases
//!   such as `ENTER`, `ESC`, `ARROWLEFT`, `CTRL`).
//! - `move {x, y}` → `move` (instant).
//! - `scroll {x, y, scroll_x, scroll_y, keys?}` → `move` to (x, y), then `scroll` with pixel
//!   amounts converted to wheel notches: one notch per 100 screen pixels, rounded, at least one
//!   when nonzero.
//! - `type {text}` → `type`, newlines and tabs as Return and Tab keys.
//! - `wait {}` → `wait` 1000 ms (the reference harness's pause); `screenshot {}` → `wait` 1 ms,
//!   a no-input observation whose result is the fresh screenshot.
//!
//! Anything else is refused with a message the model sees as the tool result.

use serde_json::Value;

use crate::native::{NativeBatch, modifiers_from_names};
use crate::scale::ScreenXy;

/// Screen pixels per wheel notch when converting pixel scroll amounts.
const PIXELS_PER_NOTCH: f64 = 100.0;

/// The actions of one `computer_call` item: `actions` (GA) or `[action]` (preview).
pub(crate) fn call_actions(item: &Value) -> Result<Vec<Value>, String> {
    if let Some(Value::Array(actions)) = item.get("actions") {
        if actions.is_empty() {
            return Err("the computer call has an empty `actions` array".to_string());
        }
        return Ok(actions.clone());
    }
    match item.get("action") {
        Some(action @ Value::Object(_)) => Ok(vec![action.clone()]),
        _ => Err("the computer call has neither `actions` nor `action`".to_string()),
    }
}

/// Maps one vendor action into `batch`.
pub(crate) fn map_action(batch: &mut NativeBatch<'_>, action: &Value) -> Result<(), String> {
    let kind = action
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let at = || batch.point(action.get("x"), action.get("y"));
    let held_keys = || -> Result<Vec<&'static str>, String> {
        match action.get("keys") {
            Some(Value::Array(keys)) => modifiers_from_names(keys.iter().filter_map(Value::as_str)),
            _ => Ok(Vec::new()),
        }
    };
    match kind {
        "click" => {
            let button = match action
                .get("button")
                .and_then(Value::as_str)
                .unwrap_or("left")
            {
                "left" => "left",
                "right" => "right",
                "wheel" | "middle" => "middle",
                other => return Err(format!("click button `{other}` is not supported")),
            };
            let (point, modifiers) = (at()?, held_keys()?);
            batch.click("click", point, button, &modifiers)
        }
        "double_click" => {
            let (point, modifiers) = (at()?, held_keys()?);
            batch.click("double_click", point, "left", &modifiers)
        }
        "drag" => {
            let Some(Value::Array(points)) = action.get("path") else {
                return Err("drag needs a `path` array".to_string());
            };
            let path = points
                .iter()
                .map(|point| batch.point(point.get("x"), point.get("y")))
                .collect::<Result<Vec<ScreenXy>, String>>()?;
            let modifiers = held_keys()?;
            batch.drag(&path, &modifiers)
        }
        "keypress" => {
            let Some(Value::Array(keys)) = action.get("keys") else {
                return Err("keypress needs a `keys` array".to_string());
            };
            let keys: Vec<String> = keys
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_ascii_lowercase)
                .collect();
            if keys.is_empty() {
                return Err("keypress needs at least one key".to_string());
            }
            batch.key(keys)
        }
        "move" => {
            let point = at()?;
            batch.move_to(point);
            Ok(())
        }
        "scroll" => {
            let point = at()?;
            let scroll_x = action
                .get("scroll_x")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let scroll_y = action
                .get("scroll_y")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let modifiers = held_keys()?;
            let dx = notches(batch.scale().length_to_screen_x(scroll_x));
            let dy = notches(batch.scale().length_to_screen_y(scroll_y));
            batch.scroll(Some(point), dx, dy, &modifiers)
        }
        "type" => {
            let text = action
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            batch.type_text(text)
        }
        "wait" => {
            batch.wait(1000);
            Ok(())
        }
        "screenshot" => {
            batch.wait(1);
            Ok(())
        }
        other => Err(format!("computer action `{other}` is not supported")),
    }
}

fn notches(screen_pixels: f64) -> i64 {
    if screen_pixels == 0.0 {
        return 0;
    }
    let rounded = (screen_pixels / PIXELS_PER_NOTCH).round();
    // Saturating cast; absurd values stay absurd for the broker to reject.
    #[allow(clippy::cast_possible_truncation)]
    let rounded = rounded as i64;
    if rounded == 0 {
        if screen_pixels > 0.0 { 1 } else { -1 }
    } else {
        rounded
    }
}
