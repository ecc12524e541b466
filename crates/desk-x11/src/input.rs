//! XTEST input injection: every low-level event is sent once, flushed, and recorded as an
//! [`InputEvent`] with its send time; gestures (click, drag, chord, typing...) are built here.
//!
//! Invariant: `sent_any` becomes true before the first request that could reach the server, so a
//! caller that sees an error can tell "nothing sent" from "outcome unknown".

use std::time::Duration;

use desk_contract::events::{InputEvent, InputEventKind};
use desk_contract::geometry::ScreenPoint;
use desk_contract::{Button, Key, Modifier};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT, ConnectionExt as _, KEY_PRESS_EVENT,
    KEY_RELEASE_EVENT, Keycode, MOTION_NOTIFY_EVENT, Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::capture::epoch_ms;
use crate::error::X11Error;
use crate::keymap::{Keymap, char_keysym, key_keysym, modifier_keysym};

/// Gap between the two clicks of a double click.
pub(crate) const DOUBLE_CLICK_GAP: Duration = Duration::from_millis(60);
/// Interval between interpolated pointer moves.
const MOVE_STEP: Duration = Duration::from_millis(16);

/// The X button number of a contract button.
pub(crate) fn button_code(button: Button) -> u8 {
    match button {
        Button::Left => 1,
        Button::Middle => 2,
        Button::Right => 3,
    }
}

/// What a chord pressed, to release in reverse.
enum Pressed {
    /// A chord key and the keycode used for it.
    Key(Key, Keycode),
    /// Shift added because a character sits in the shifted column.
    ImplicitShift,
}

/// Sends and records input for one action.
pub(crate) struct Injector<'a> {
    conn: &'a RustConnection,
    root: Window,
    keymap: &'a mut Keymap,
    events: Vec<InputEvent>,
    // Invariant: true from just before the first input request on.
    sent_any: bool,
}

impl<'a> Injector<'a> {
    /// Starts an empty recording.
    pub(crate) fn new(
        conn: &'a RustConnection,
        root: Window,
        keymap: &'a mut Keymap,
    ) -> Injector<'a> {
        Injector {
            conn,
            root,
            keymap,
            events: Vec::new(),
            sent_any: false,
        }
    }

    /// Whether any input request was (possibly) sent.
    pub(crate) fn sent_any(&self) -> bool {
        self.sent_any
    }

    /// The recorded events.
    pub(crate) fn into_events(self) -> Vec<InputEvent> {
        self.events
    }

    fn fake(&mut self, kind: u8, detail: u8, x: i16, y: i16) -> Result<(), X11Error> {
        self.sent_any = true;
        self.conn
            .xtest_fake_input(kind, detail, x11rb::CURRENT_TIME, self.root, x, y, 0)
            .map_err(X11Error::conn("xtest fake input"))?;
        self.conn.flush().map_err(X11Error::conn("flush input"))
    }

    fn record(&mut self, kind: InputEventKind) {
        self.events.push(InputEvent {
            timestamp_ms: epoch_ms(),
            kind,
        });
    }

    /// Waits until the server has processed everything sent so far.
    pub(crate) fn sync(&self) -> Result<(), X11Error> {
        self.conn
            .get_input_focus()
            .map_err(X11Error::conn("sync"))?
            .reply()
            .map_err(X11Error::reply("sync"))?;
        Ok(())
    }

    /// Moves the pointer; records `drag` when a button is held, else `mouse_move`.
    pub(crate) fn motion(&mut self, to: ScreenPoint, held: Option<Button>) -> Result<(), X11Error> {
        let x = i16::try_from(to.x).unwrap_or(i16::MAX);
        let y = i16::try_from(to.y).unwrap_or(i16::MAX);
        self.fake(MOTION_NOTIFY_EVENT, 0, x, y)?;
        self.record(match held {
            Some(button) => InputEventKind::Drag {
                x: to.x,
                y: to.y,
                button,
            },
            None => InputEventKind::MouseMove { x: to.x, y: to.y },
        });
        Ok(())
    }

    /// Presses or releases a button at `at` (the pointer is already there).
    pub(crate) fn button(
        &mut self,
        button: Button,
        at: ScreenPoint,
        pressed: bool,
    ) -> Result<(), X11Error> {
        let kind = if pressed {
            BUTTON_PRESS_EVENT
        } else {
            BUTTON_RELEASE_EVENT
        };
        self.fake(kind, button_code(button), 0, 0)?;
        self.record(InputEventKind::Click {
            x: at.x,
            y: at.y,
            button,
            pressed,
        });
        Ok(())
    }

    fn raw_key(&mut self, keycode: Keycode, pressed: bool) -> Result<(), X11Error> {
        let kind = if pressed {
            KEY_PRESS_EVENT
        } else {
            KEY_RELEASE_EVENT
        };
        self.fake(kind, keycode, 0, 0)
    }

    /// Presses or releases a modifier.
    pub(crate) fn modifier(&mut self, modifier: Modifier, pressed: bool) -> Result<(), X11Error> {
        let resolved = self.keymap.resolve(self.conn, modifier_keysym(modifier))?;
        self.raw_key(resolved.keycode, pressed)?;
        self.record(InputEventKind::ModifierChange {
            modifier: modifier.as_str().to_string(),
            pressed,
        });
        Ok(())
    }

    /// Presses modifiers in order.
    pub(crate) fn modifiers_down(&mut self, modifiers: &[Modifier]) -> Result<(), X11Error> {
        modifiers
            .iter()
            .try_for_each(|modifier| self.modifier(*modifier, true))
    }

    /// Releases modifiers in reverse order.
    pub(crate) fn modifiers_up(&mut self, modifiers: &[Modifier]) -> Result<(), X11Error> {
        modifiers
            .iter()
            .rev()
            .try_for_each(|modifier| self.modifier(*modifier, false))
    }

    /// One click, optionally with modifiers.
    pub(crate) fn click(
        &mut self,
        at: ScreenPoint,
        button: Button,
        modifiers: &[Modifier],
        n_clicks: u32,
    ) -> Result<(), X11Error> {
        self.motion(at, None)?;
        self.modifiers_down(modifiers)?;
        for click_idx in 0..n_clicks {
            if click_idx > 0 {
                self.sync()?;
                std::thread::sleep(DOUBLE_CLICK_GAP);
            }
            self.button(button, at, true)?;
            self.button(button, at, false)?;
        }
        self.modifiers_up(modifiers)
    }

    /// Press at the first point, move through every point, release at the last.
    pub(crate) fn drag(
        &mut self,
        path: &[ScreenPoint],
        button: Button,
        duration_ms: u32,
        modifiers: &[Modifier],
    ) -> Result<(), X11Error> {
        let (Some(first), Some(last)) = (path.first(), path.last()) else {
            return Err(X11Error::InvalidRequest(
                "a drag needs at least two points".into(),
            ));
        };
        let n_steps = u32::try_from(path.len().saturating_sub(1))
            .unwrap_or(1)
            .max(1);
        let step = Duration::from_millis(u64::from(duration_ms / n_steps));
        self.motion(*first, None)?;
        self.modifiers_down(modifiers)?;
        self.button(button, *first, true)?;
        for point in &path[1..] {
            if !step.is_zero() {
                std::thread::sleep(step);
            }
            self.motion(*point, Some(button))?;
        }
        self.button(button, *last, false)?;
        self.modifiers_up(modifiers)
    }

    /// Moves the pointer from `from` to `to`, interpolating over `duration_ms`.
    pub(crate) fn move_to(
        &mut self,
        from: ScreenPoint,
        to: ScreenPoint,
        duration_ms: u32,
    ) -> Result<(), X11Error> {
        let n_steps = (u128::from(duration_ms) / MOVE_STEP.as_millis()).max(1);
        let n_steps = u32::try_from(n_steps).unwrap_or(1);
        let step = Duration::from_millis(u64::from(duration_ms / n_steps));
        for step_idx in 1..=n_steps {
            let lerp = |a: u32, b: u32| {
                let value = i64::from(a)
                    + (i64::from(b) - i64::from(a)) * i64::from(step_idx) / i64::from(n_steps);
                u32::try_from(value).unwrap_or(b)
            };
            if step_idx > 1 {
                std::thread::sleep(step);
            }
            self.motion(
                ScreenPoint {
                    x: lerp(from.x, to.x),
                    y: lerp(from.y, to.y),
                },
                None,
            )?;
        }
        Ok(())
    }

    /// Wheel notches at the pointer: one press/release per notch, one recorded `scroll`.
    pub(crate) fn scroll(
        &mut self,
        at: ScreenPoint,
        dx: i32,
        dy: i32,
        modifiers: &[Modifier],
    ) -> Result<(), X11Error> {
        self.modifiers_down(modifiers)?;
        let vertical = if dy < 0 { 4 } else { 5 };
        let horizontal = if dx < 0 { 6 } else { 7 };
        let notches = [
            (vertical, dy.unsigned_abs()),
            (horizontal, dx.unsigned_abs()),
        ];
        for (code, n_notches) in notches {
            for _ in 0..n_notches {
                self.fake(BUTTON_PRESS_EVENT, code, 0, 0)?;
                self.fake(BUTTON_RELEASE_EVENT, code, 0, 0)?;
            }
        }
        self.record(InputEventKind::Scroll {
            x: at.x,
            y: at.y,
            dx,
            dy,
        });
        self.modifiers_up(modifiers)
    }

    /// A chord: press in order, release in reverse. A character that needs Shift gets it.
    pub(crate) fn chord(&mut self, keys: &[Key]) -> Result<(), X11Error> {
        let mut pressed: Vec<Pressed> = Vec::new();
        let has_shift = keys.contains(&Key::Modifier(Modifier::Shift));
        for key in keys {
            let resolved = self.keymap.resolve(self.conn, key_keysym(*key))?;
            if resolved.shift && !has_shift {
                self.modifier(Modifier::Shift, true)?;
                pressed.push(Pressed::ImplicitShift);
            }
            self.raw_key(resolved.keycode, true)?;
            self.record_key(*key, true);
            pressed.push(Pressed::Key(*key, resolved.keycode));
        }
        for entry in pressed.into_iter().rev() {
            match entry {
                Pressed::ImplicitShift => self.modifier(Modifier::Shift, false)?,
                Pressed::Key(key, keycode) => {
                    self.raw_key(keycode, false)?;
                    self.record_key(key, false);
                }
            }
        }
        Ok(())
    }

    fn record_key(&mut self, key: Key, pressed: bool) {
        self.record(match key {
            Key::Modifier(modifier) => InputEventKind::ModifierChange {
                modifier: modifier.as_str().to_string(),
                pressed,
            },
            other => InputEventKind::Key {
                key: other.canonical_name(),
                pressed,
            },
        });
    }

    /// Types printable text, one press/release per character, adding Shift where needed.
    pub(crate) fn type_text(&mut self, text: &str) -> Result<(), X11Error> {
        for character in text.chars() {
            let resolved = self.keymap.resolve(self.conn, char_keysym(character))?;
            if resolved.shift {
                self.modifier(Modifier::Shift, true)?;
            }
            for pressed in [true, false] {
                self.raw_key(resolved.keycode, pressed)?;
                self.record(InputEventKind::Key {
                    key: character.to_string(),
                    pressed,
                });
            }
            if resolved.shift {
                self.modifier(Modifier::Shift, false)?;
            }
        }
        Ok(())
    }
}
