//! Building blocks for mapping vendor computer-tool actions onto normalized actions.
//!
//! [`NativeBatch`] accumulates the normalized actions of one vendor call, in screen pixels. It
//! also carries the pointer state that outlives a call:
//! - the last pointer position this adapter moved to (for vendor actions without coordinates);
//! - a held mouse button. The normalized schema has no separate press and release, so a vendor
//!   press (`left_mouse_down`) opens a deferred drag; moves while held extend its path, and the
//!   release emits one `drag` along the whole path (a `click` when the pointer never moved). The
//!   screen does not show the held state in between; the tool result says so.
//!
//! Invariant: a batch handed to the harness is never empty; a vendor call that produced no input
//! (a screenshot request, a deferred press) becomes one `wait` of 1 ms, a no-input observation.

use serde_json::{Value, json};

use crate::scale::{ImagePoint, ImageScale, ScreenXy};

/// The longest `wait` the broker accepts, in milliseconds.
const MAX_WAIT_MS: u64 = 10_000;

/// Pointer state carried across vendor calls.
#[derive(Debug, Default, Clone)]
pub(crate) struct PointerState {
    last: Option<ScreenXy>,
    held: Option<HeldButton>,
}

#[derive(Debug, Clone)]
struct HeldButton {
    button: &'static str,
    path: Vec<ScreenXy>,
}

/// The normalized actions of one vendor call.
pub(crate) struct NativeBatch<'a> {
    scale: &'a ImageScale,
    pointer: &'a mut PointerState,
    intent: String,
    pub(crate) actions: Vec<Value>,
    pub(crate) notes: Vec<String>,
}

impl<'a> NativeBatch<'a> {
    pub(crate) fn new(
        scale: &'a ImageScale,
        pointer: &'a mut PointerState,
        intent: String,
    ) -> NativeBatch<'a> {
        NativeBatch {
            scale,
            pointer,
            intent,
            actions: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The image scale of this rollout.
    pub(crate) fn scale(&self) -> &ImageScale {
        self.scale
    }

    /// Maps an image point given as two JSON numbers.
    pub(crate) fn point(&self, x: Option<&Value>, y: Option<&Value>) -> Result<ScreenXy, String> {
        match (x.and_then(Value::as_f64), y.and_then(Value::as_f64)) {
            (Some(x), Some(y)) => Ok(self.scale.to_screen(ImagePoint { x, y })),
            _ => Err("expected numeric x and y coordinates".to_string()),
        }
    }

    /// The pointer position for an action that has no coordinate of its own.
    pub(crate) fn current(&self) -> Result<ScreenXy, String> {
        self.pointer.last.ok_or_else(|| {
            "the pointer position is unknown; give a coordinate or move the mouse first".to_string()
        })
    }

    /// The pointer position in image pixels, when known.
    pub(crate) fn current_in_image(&self) -> Option<ScreenXy> {
        self.pointer.last.map(|point| self.scale.to_image(point))
    }

    fn refuse_while_held(&self, what: &str) -> Result<(), String> {
        match &self.pointer.held {
            Some(held) => Err(format!(
                "`{what}` while the {} button is held; release it first",
                held.button
            )),
            None => Ok(()),
        }
    }

    fn push(&mut self, mut action: Value) {
        if let Value::Object(map) = &mut action {
            map.insert("intent".into(), json!(self.intent));
        }
        self.actions.push(action);
    }

    /// A click or double click; `kind` is `click` or `double_click`.
    pub(crate) fn click(
        &mut self,
        kind: &str,
        at: ScreenXy,
        button: &str,
        modifiers: &[&str],
    ) -> Result<(), String> {
        self.refuse_while_held(kind)?;
        let mut action = json!({"type": kind, "x": at.x, "y": at.y, "button": button});
        if !modifiers.is_empty() {
            action["modifiers"] = json!(modifiers);
        }
        self.push(action);
        self.pointer.last = Some(at);
        Ok(())
    }

    /// A pointer move; while a button is held it extends the deferred drag instead.
    pub(crate) fn move_to(&mut self, at: ScreenXy) {
        if let Some(held) = &mut self.pointer.held {
            held.path.push(at);
        } else {
            self.push(json!({"type": "move", "x": at.x, "y": at.y, "duration_ms": 0}));
        }
        self.pointer.last = Some(at);
    }

    /// A complete drag along `path` (at least two points).
    pub(crate) fn drag(&mut self, path: &[ScreenXy], modifiers: &[&str]) -> Result<(), String> {
        self.refuse_while_held("drag")?;
        if path.len() < 2 {
            return Err("a drag needs at least two points".to_string());
        }
        let points: Vec<Value> = path
            .iter()
            .map(|point| json!({"x": point.x, "y": point.y}))
            .collect();
        let mut action =
            json!({"type": "drag", "path": points, "button": "left", "duration_ms": 300});
        if !modifiers.is_empty() {
            action["modifiers"] = json!(modifiers);
        }
        self.push(action);
        self.pointer.last = path.last().copied();
        Ok(())
    }

    /// Presses `button` at the current pointer position, deferring it until the release.
    pub(crate) fn press(&mut self, button: &'static str) -> Result<(), String> {
        self.refuse_while_held("mouse down")?;
        let at = self.current()?;
        self.pointer.held = Some(HeldButton {
            button,
            path: vec![at],
        });
        self.notes.push(format!(
            "the {button} button press is deferred: it is injected together with the moves and \
             the release as one drag when the button is released; the screen does not show the \
             held state"
        ));
        Ok(())
    }

    /// Releases the held button: one drag along the recorded path, or a click if it never moved.
    pub(crate) fn release(&mut self) -> Result<(), String> {
        let Some(held) = self.pointer.held.take() else {
            return Err("mouse up without a held button".to_string());
        };
        let mut path = held.path;
        path.dedup();
        if path.len() < 2 {
            let at = path.first().copied().unwrap_or(ScreenXy { x: 0, y: 0 });
            return self.click("click", at, held.button, &[]);
        }
        if path.len() > 64 {
            // Keep the ends and an even spread of the middle (the broker takes 64 points).
            let n_points = path.len();
            path = (0..64).map(|idx| path[idx * (n_points - 1) / 63]).collect();
        }
        let points: Vec<Value> = path
            .iter()
            .map(|point| json!({"x": point.x, "y": point.y}))
            .collect();
        self.push(
            json!({"type": "drag", "path": points, "button": held.button,
            "duration_ms": 300}),
        );
        self.pointer.last = path.last().copied();
        Ok(())
    }

    /// One key chord, e.g. `["ctrl", "s"]` or `["ctrl+s"]`.
    pub(crate) fn key(&mut self, keys: Vec<String>) -> Result<(), String> {
        self.refuse_while_held("key")?;
        self.push(json!({"type": "key", "keys": keys}));
        Ok(())
    }

    /// Scroll notches at `at` (a move first when given).
    pub(crate) fn scroll(
        &mut self,
        at: Option<ScreenXy>,
        dx: i64,
        dy: i64,
        modifiers: &[&str],
    ) -> Result<(), String> {
        self.refuse_while_held("scroll")?;
        if let Some(at) = at {
            self.move_to(at);
        }
        let mut action = json!({"type": "scroll", "dx": dx, "dy": dy});
        if !modifiers.is_empty() {
            action["modifiers"] = json!(modifiers);
        }
        self.push(action);
        Ok(())
    }

    /// Types text; newlines and tabs become Return and Tab key presses (as xdotool types them).
    pub(crate) fn type_text(&mut self, text: &str) -> Result<(), String> {
        self.refuse_while_held("type")?;
        let mut run = String::new();
        for character in text.chars() {
            let key = match character {
                '\n' => Some("return"),
                '\t' => Some("tab"),
                '\r' => continue,
                _ => None,
            };
            match key {
                Some(key) => {
                    if !run.is_empty() {
                        self.push(json!({"type": "type", "text": std::mem::take(&mut run)}));
                    }
                    self.push(json!({"type": "key", "keys": [key]}));
                }
                None => run.push(character),
            }
        }
        if !run.is_empty() {
            self.push(json!({"type": "type", "text": run}));
        }
        Ok(())
    }

    /// Waits `milliseconds`, split into broker-sized waits of at most 10 s.
    pub(crate) fn wait(&mut self, milliseconds: u64) {
        let mut left = milliseconds.max(1);
        while left > 0 {
            let chunk = left.min(MAX_WAIT_MS);
            self.push(json!({"type": "wait", "milliseconds": chunk}));
            left -= chunk;
        }
    }

    /// Finishes the batch: never empty (a no-input observation stands in).
    pub(crate) fn finish(mut self) -> (Vec<Value>, Option<String>) {
        if self.actions.is_empty() {
            self.wait(1);
        }
        let note = (!self.notes.is_empty()).then(|| self.notes.join("; "));
        (self.actions, note)
    }
}

/// Maps modifier key names (`shift`, `ctrl`/`control`, `alt`) onto normalized modifiers.
pub(crate) fn modifiers_from_names<'n>(
    names: impl IntoIterator<Item = &'n str>,
) -> Result<Vec<&'static str>, String> {
    let mut modifiers = Vec::new();
    for name in names {
        let modifier = match name.trim().to_ascii_lowercase().as_str() {
            "shift" | "shift_l" | "shift_r" => "shift",
            "ctrl" | "control" | "control_l" | "control_r" => "ctrl",
            "alt" | "alt_l" | "alt_r" | "option" => "alt",
            "" => continue,
            other => {
                return Err(format!(
                    "`{other}` cannot be held during a pointer action; only shift, ctrl and alt"
                ));
            }
        };
        if !modifiers.contains(&modifier) {
            modifiers.push(modifier);
        }
    }
    Ok(modifiers)
}
