//! The oracle's building blocks: one `computer_action` item per helper (key, type, click,
//! wait), numbers and points as typed at LibreCAD's command line, and the batches every
//! command and text dialog shares. Shared by the 2D recipes (the oracle, drafting, layers) and
//! the FreeCAD recipe.

use desk_cad::model::Point;
use serde_json::{Value, json};

/// Drawing millimetres → screen pixels of a fresh, never zoomed LibreCAD at 1920x1080 on the
/// broker's desktop: `px = 91 + 4·x`, `py = 912 − 4·y` (recipes, section 11).
pub fn drawing_to_screen(point: Point) -> (i64, i64) {
    // Corpus coordinates stay inside 0..375 x 0..200, so the rounded values fit easily.
    #[allow(clippy::cast_possible_truncation)]
    let px = (91.0 + 4.0 * point.x).round() as i64;
    #[allow(clippy::cast_possible_truncation)]
    let py = (912.0 - 4.0 * point.y).round() as i64;
    (px, py)
}

/// A number as typed at the command line: up to six decimals, trailing zeros trimmed.
pub(super) fn num(value: f64) -> String {
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// Text as typed: the `type` action takes printable ASCII only, so Ø, ° and ± go in as the
/// DXF control codes `%%c`, `%%d` and `%%p`, which LibreCAD keeps and the reader decodes.
pub(super) fn typeable(text: &str) -> String {
    text.replace('Ø', "%%c")
        .replace('°', "%%d")
        .replace('±', "%%p")
}

pub(super) fn pt(point: Point) -> String {
    format!("{},{}", num(point.x), num(point.y))
}

pub(super) fn key(keys: &[&str], intent: &str) -> Value {
    json!({"type": "key", "keys": keys, "intent": intent})
}

pub(super) fn type_text(text: &str, intent: &str) -> Value {
    json!({"type": "type", "text": text, "intent": intent})
}

pub(super) fn click((x, y): (i64, i64), intent: &str) -> Value {
    json!({"type": "click", "x": x, "y": y, "intent": intent})
}

pub(super) fn wait(milliseconds: u64, intent: &str) -> Value {
    json!({"type": "wait", "milliseconds": milliseconds, "intent": intent})
}

/// Builds the command-line batch of one command: focus, name, entries, two Escapes.
pub(super) fn command(name: &str, entries: &[(String, &str)]) -> Vec<Value> {
    let mut batch = vec![
        key(&["ctrl", "m"], "focus the command line"),
        type_text(name, &format!("start the {name} command")),
        key(&["return"], "confirm the command"),
    ];
    for (entry, intent) in entries {
        batch.push(type_text(entry, intent));
        batch.push(key(&["return"], "confirm the entry"));
    }
    batch.push(key(&["escape"], "finish the command"));
    batch.push(key(&["escape"], "back to idle"));
    batch
}

/// Starts `command`, whose dialog (`dialog`) opens at once, and waits for it to map.
pub(super) fn open_dialog(command: &str, dialog: &str, batches: &mut Vec<Vec<Value>>) {
    batches.push(vec![
        key(&["ctrl", "m"], "focus the command line"),
        type_text(command, &format!("start the {command} command")),
        key(&["return"], &format!("open the {dialog} dialog")),
    ]);
    batches.push(vec![wait(500, &format!("let the {dialog} dialog map"))]);
}

/// After a text dialog's OK: the pointer motion the insertion needs (recipes, section 6),
/// then `before_point` and the typed insertion point, and the two Escapes.
pub(super) fn place_after_dialog(
    insert: Point,
    intent: &str,
    before_point: &[Value],
    batches: &mut Vec<Vec<Value>>,
) {
    batches.push(vec![wait(200, "let the dialog close")]);
    let mut batch = vec![
        json!({"type": "move", "x": 600, "y": 400, "intent": "pointer over the canvas"}),
        json!({"type": "move", "x": 610, "y": 410, "intent": "pointer motion sets the preview"}),
    ];
    batch.extend_from_slice(before_point);
    batch.extend([
        type_text(&pt(insert), intent),
        key(&["return"], "confirm the insertion point"),
        key(&["escape"], "finish the command"),
        key(&["escape"], "back to idle"),
    ]);
    batches.push(batch);
}
