//! Reading a `computer_action` function call: arguments JSON to a batch of normalized actions.
//!
//! Only the shape needed to map coordinates is checked here (an object with a non-empty
//! `actions` array of objects); everything else is the harness's to validate, with its typed
//! errors. Coordinates (`x`/`y` of click, double_click and move, and every drag `path` point) are
//! mapped from image to screen pixels exactly once; values that are not numbers are left as they
//! are so the harness rejects them.

use serde_json::{Value, json};

use crate::scale::{ImagePoint, ImageScale};

/// Parses a function call's `arguments` string (OpenAI) into screen-pixel actions.
pub(crate) fn parse_arguments(arguments: &str, scale: &ImageScale) -> Result<Vec<Value>, String> {
    let value: Value = serde_json::from_str(arguments).map_err(|error| {
        format!("the computer_action arguments are not valid JSON ({error}); send {{\"actions\": [...]}}")
    })?;
    parse_input(value, scale)
}

/// Parses a function call's already-decoded input (Anthropic) into screen-pixel actions.
pub(crate) fn parse_input(value: Value, scale: &ImageScale) -> Result<Vec<Value>, String> {
    let Value::Object(mut object) = value else {
        return Err("the computer_action arguments must be an object {\"actions\": [...]}".into());
    };
    let Some(actions) = object.remove("actions") else {
        return Err("the computer_action arguments lack the `actions` array".into());
    };
    if let Some(extra) = object.keys().next() {
        return Err(format!(
            "the computer_action arguments have an unknown field `{extra}`; only `actions` is allowed"
        ));
    }
    let Value::Array(mut actions) = actions else {
        return Err("`actions` must be an array of action objects".into());
    };
    if actions.is_empty() {
        return Err("`actions` is empty; send at least one action".into());
    }
    for (action_idx, action) in actions.iter_mut().enumerate() {
        if !action.is_object() {
            return Err(format!("actions[{action_idx}] is not an object"));
        }
        map_coordinates(action, scale);
    }
    Ok(actions)
}

/// Maps the coordinates of one normalized action from image to screen pixels, in place.
pub(crate) fn map_coordinates(action: &mut Value, scale: &ImageScale) {
    let kind = action
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "click" | "double_click" | "move" => map_point(action, scale),
        "drag" => {
            if let Some(Value::Array(path)) = action.get_mut("path") {
                for point in path {
                    map_point(point, scale);
                }
            }
        }
        _ => {}
    }
}

fn map_point(object: &mut Value, scale: &ImageScale) {
    let (Some(x), Some(y)) = (
        object.get("x").and_then(Value::as_f64),
        object.get("y").and_then(Value::as_f64),
    ) else {
        return;
    };
    let screen = scale.to_screen(ImagePoint { x, y });
    if let Value::Object(map) = object {
        map.insert("x".into(), json!(screen.x));
        map.insert("y".into(), json!(screen.y));
    }
}
