//! From a validated [`InputAction`] to the exact `SendInput` steps and the input events the
//! receipt reports, checked again before anything is sent: every point on the display, no
//! chord of [`desk_contract::keys::REFUSED_CHORDS`] (Alt+F4, Ctrl+Alt+Delete, Ctrl+Shift+Esc,
//! Ctrl+Esc, Alt+Tab, ...; the Windows key has no name in the contract at all), every key
//! mappable to a virtual key.
//! A plan that fails a check is refused whole, so a refusal sends nothing.
//!
//! Key mapping: modifiers and named keys to their virtual keys; characters of a chord to the
//! US-layout key that carries them (shifted symbols add Shift); `type` text goes as Unicode
//! units (`KEYEVENTF_UNICODE`), independent of the keyboard layout.

use desk_contract::events::InputEventKind;
use desk_contract::keys::Key;
use desk_contract::{Button, DisplaySize, InputAction, Modifier, ScreenPoint};

use crate::platform::Step;

mod keys;

pub use keys::{char_vk, modifier_vk, named_vk};

/// Pointer steps of a timed gesture are this far apart.
pub const GESTURE_STEP_MS: u32 = 10;

/// One planned step and the event it reports once sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStep {
    /// What to send.
    pub step: Step,
    /// What the receipt records for it (`None` for a pause).
    pub event: Option<InputEventKind>,
}

/// Why an action was refused before any input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanRefusal {
    /// Out of bounds, a refused chord, an unmappable key: `invalid_request`.
    Invalid(String),
    /// A semantic step: this worker has no UI Automation provider yet.
    Semantic,
}

/// Plans `action` on a display of `display` with the pointer at `pointer`.
pub fn plan(
    action: &InputAction,
    display: DisplaySize,
    pointer: ScreenPoint,
) -> Result<Vec<PlannedStep>, PlanRefusal> {
    let mut planner = Planner {
        display,
        steps: Vec::new(),
        pointer,
    };
    match action {
        InputAction::Click {
            at,
            button,
            modifiers,
        }
        | InputAction::DoubleClick {
            at,
            button,
            modifiers,
        } => {
            let presses = if matches!(action, InputAction::DoubleClick { .. }) {
                2
            } else {
                1
            };
            planner.check(*at)?;
            planner.modifiers(modifiers, true);
            planner.move_to(*at, None);
            for _ in 0..presses {
                planner.button(*button, true);
                planner.button(*button, false);
            }
            planner.modifiers(modifiers, false);
        }
        InputAction::Drag {
            path,
            button,
            duration_ms,
            modifiers,
        } => {
            for point in path {
                planner.check(*point)?;
            }
            let (Some(first), Some(rest)) = (path.first(), path.get(1..)) else {
                return Err(PlanRefusal::Invalid(
                    "a drag needs at least 2 points".into(),
                ));
            };
            if rest.is_empty() {
                return Err(PlanRefusal::Invalid(
                    "a drag needs at least 2 points".into(),
                ));
            }
            planner.modifiers(modifiers, true);
            planner.move_to(*first, None);
            planner.button(*button, true);
            let segment_ms = *duration_ms / u32::try_from(rest.len()).unwrap_or(u32::MAX);
            for point in rest {
                planner.glide(*point, segment_ms, Some(*button));
            }
            planner.button(*button, false);
            planner.modifiers(modifiers, false);
        }
        InputAction::Move { to, duration_ms } => {
            planner.check(*to)?;
            planner.glide(*to, *duration_ms, None);
        }
        InputAction::Scroll { dx, dy, modifiers } => {
            planner.modifiers(modifiers, true);
            let at = planner.pointer;
            // Positive `dy` scrolls down: a negative wheel rotation on Windows.
            if *dy != 0 {
                planner.push(
                    Step::Wheel {
                        horizontal: false,
                        notches: -*dy,
                    },
                    None,
                );
            }
            if *dx != 0 {
                planner.push(
                    Step::Wheel {
                        horizontal: true,
                        notches: *dx,
                    },
                    None,
                );
            }
            planner.event(InputEventKind::Scroll {
                x: at.x,
                y: at.y,
                dx: *dx,
                dy: *dy,
            });
            planner.modifiers(modifiers, false);
        }
        InputAction::Key { keys } => planner.chord(keys)?,
        InputAction::Type { text } => {
            if text.is_empty()
                || !text
                    .chars()
                    .all(|character| (' '..='~').contains(&character))
            {
                return Err(PlanRefusal::Invalid(
                    "type takes 1 or more printable ASCII characters".into(),
                ));
            }
            for character in text.chars() {
                let unit = u16::try_from(u32::from(character)).unwrap_or(u16::from(b'?'));
                for down in [true, false] {
                    planner.push(
                        Step::Unicode { unit, down },
                        Some(InputEventKind::Key {
                            key: character.to_string(),
                            pressed: down,
                        }),
                    );
                }
            }
        }
        InputAction::Wait { .. } | InputAction::Done => {}
        InputAction::AxPress { .. } | InputAction::AxSetText { .. } => {
            return Err(PlanRefusal::Semantic);
        }
    }
    Ok(planner.steps)
}

/// The refused chord `keys` would press, if any (desk-contract's
/// [`desk_contract::keys::refused_chord`]), so
/// an action built past validation is refused here too.
pub fn refused_chord(keys: &[Key]) -> Option<&'static str> {
    desk_contract::keys::refused_chord(keys).map(|chord| chord.why)
}

/// The normalized absolute coordinate (0..=65535) that Win32 maps back to `pixel` of a screen
/// `size` pixels wide: it computes `pixel = normalized * size / 65536` rounded down, so the
/// smallest such value is `ceil(pixel * 65536 / size)`.
pub fn normalized(pixel: u32, size: u32) -> i32 {
    let size = u64::from(size.max(1));
    let value = (u64::from(pixel) * 65_536).div_ceil(size);
    i32::try_from(value.min(65_535)).unwrap_or(65_535)
}

struct Planner {
    display: DisplaySize,
    steps: Vec<PlannedStep>,
    pointer: ScreenPoint,
}

impl Planner {
    fn check(&self, point: ScreenPoint) -> Result<(), PlanRefusal> {
        if self
            .display
            .contains(i64::from(point.x), i64::from(point.y))
        {
            Ok(())
        } else {
            Err(PlanRefusal::Invalid(format!(
                "point ({}, {}) is outside the {}x{} display",
                point.x, point.y, self.display.width, self.display.height
            )))
        }
    }

    fn push(&mut self, step: Step, event: Option<InputEventKind>) {
        self.steps.push(PlannedStep { step, event });
    }

    /// Attaches an event to the last step (a scroll's one event for both wheels).
    fn event(&mut self, event: InputEventKind) {
        if let Some(last) = self.steps.last_mut() {
            last.event = Some(event);
        }
    }

    fn move_to(&mut self, to: ScreenPoint, held: Option<Button>) {
        let event = match held {
            Some(button) => InputEventKind::Drag {
                x: to.x,
                y: to.y,
                button,
            },
            None => InputEventKind::MouseMove { x: to.x, y: to.y },
        };
        self.push(Step::MoveTo { x: to.x, y: to.y }, Some(event));
        self.pointer = to;
    }

    /// Moves in `GESTURE_STEP_MS` steps over `duration_ms` (one jump when 0).
    fn glide(&mut self, to: ScreenPoint, duration_ms: u32, held: Option<Button>) {
        let n_steps = (duration_ms / GESTURE_STEP_MS).max(1);
        let from = self.pointer;
        for step_idx in 1..=n_steps {
            let along = |start: u32, end: u32| {
                let start = i64::from(start);
                let end = i64::from(end);
                let value = start + (end - start) * i64::from(step_idx) / i64::from(n_steps);
                u32::try_from(value).unwrap_or(0)
            };
            if step_idx > 1 {
                self.push(
                    Step::Pause {
                        ms: GESTURE_STEP_MS,
                    },
                    None,
                );
            }
            let point = ScreenPoint {
                x: along(from.x, to.x),
                y: along(from.y, to.y),
            };
            self.move_to(point, held);
        }
    }

    fn button(&mut self, button: Button, down: bool) {
        let at = self.pointer;
        self.push(
            Step::Button { button, down },
            Some(InputEventKind::Click {
                x: at.x,
                y: at.y,
                button,
                pressed: down,
            }),
        );
    }

    fn modifiers(&mut self, modifiers: &[Modifier], down: bool) {
        let ordered: Vec<Modifier> = if down {
            modifiers.to_vec()
        } else {
            modifiers.iter().rev().copied().collect()
        };
        for modifier in ordered {
            self.push(
                Step::Key {
                    vk: modifier_vk(modifier),
                    extended: false,
                    down,
                },
                Some(InputEventKind::ModifierChange {
                    modifier: modifier.as_str().to_string(),
                    pressed: down,
                }),
            );
        }
    }

    fn chord(&mut self, keys: &[Key]) -> Result<(), PlanRefusal> {
        if keys.is_empty() {
            return Err(PlanRefusal::Invalid(
                "a chord needs at least one key".into(),
            ));
        }
        if let Some(why) = refused_chord(keys) {
            let name = keys
                .iter()
                .map(Key::canonical_name)
                .collect::<Vec<_>>()
                .join("+");
            return Err(PlanRefusal::Invalid(format!(
                "chord {name} is refused: it {why}"
            )));
        }
        let mut modifiers: Vec<Modifier> = Vec::new();
        let mut main: Option<(u16, bool, String)> = None;
        for key in keys {
            match key {
                Key::Modifier(modifier) => {
                    if !modifiers.contains(modifier) {
                        modifiers.push(*modifier);
                    }
                }
                Key::Named(_) | Key::Char(_) if main.is_some() => {
                    return Err(PlanRefusal::Invalid(
                        "a chord holds at most one key besides its modifiers".into(),
                    ));
                }
                Key::Named(named) => {
                    let (vk, extended) = named_vk(*named).ok_or_else(|| {
                        PlanRefusal::Invalid(format!(
                            "key {} has no virtual key",
                            key.canonical_name()
                        ))
                    })?;
                    main = Some((vk, extended, key.canonical_name()));
                }
                Key::Char(character) => {
                    let (vk, shifted) = char_vk(*character).ok_or_else(|| {
                        PlanRefusal::Invalid(format!("key {character:?} has no virtual key"))
                    })?;
                    if shifted && !modifiers.contains(&Modifier::Shift) {
                        modifiers.push(Modifier::Shift);
                    }
                    main = Some((vk, false, key.canonical_name()));
                }
            }
        }
        self.modifiers(&modifiers, true);
        if let Some((vk, extended, name)) = main {
            for down in [true, false] {
                self.push(
                    Step::Key { vk, extended, down },
                    Some(InputEventKind::Key {
                        key: name.clone(),
                        pressed: down,
                    }),
                );
            }
        }
        self.modifiers(&modifiers, false);
        Ok(())
    }
}
