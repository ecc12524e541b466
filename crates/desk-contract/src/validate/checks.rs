//! The checks of every raw action type against the live display, and the types they build:
//! [`InputAction`] and [`ValidatedAction`]. (Over 400 lines: the checker of every action type
//! stays in this one place, as the invariant in `validate.rs` asks.)

use serde::{Deserialize, Serialize};

use crate::action::{Action, ActionType, Button, Modifier, WirePoint};
use crate::error::ActionError;
use crate::geometry::{DisplaySize, ScreenPoint};
use crate::keys::{Key, KeyProblem, parse_chord};

/// Fewest points in a drag path.
pub const MIN_DRAG_POINTS: usize = 2;
/// Most points in a drag path.
pub const MAX_DRAG_POINTS: usize = 64;
/// Longest drag, in milliseconds.
pub const MAX_DRAG_DURATION_MS: u32 = 10_000;
/// Longest pointer move, in milliseconds.
pub const MAX_MOVE_DURATION_MS: u32 = 5_000;
/// Shortest and longest `wait`, in milliseconds.
pub const WAIT_RANGE_MS: (u32, u32) = (1, 10_000);
/// Most wheel notches per axis in one scroll.
pub const MAX_SCROLL_NOTCHES: i32 = 25;
/// Most characters in one `type`.
pub const MAX_TEXT_CHARS: usize = 2_000;
/// Most characters in an `intent`.
pub const MAX_INTENT_CHARS: usize = 500;

/// Whether `character` renders as nothing: whitespace, a control character, or a format,
/// joiner, filler or bidi control character (Unicode `Cf` and the blank fillers).
fn is_invisible(character: char) -> bool {
    character.is_whitespace()
        || character.is_control()
        || matches!(
            character,
            '\u{00AD}' // soft hyphen
                | '\u{034F}' // combining grapheme joiner
                | '\u{061C}' // Arabic letter mark
                | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
                | '\u{17B4}' | '\u{17B5}' // Khmer inherent vowels
                | '\u{180B}'..='\u{180F}' // Mongolian variation selectors and vowel separator
                | '\u{200B}'..='\u{200F}' // zero-width space, joiners, LRM, RLM
                | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
                | '\u{2060}'..='\u{206F}' // word joiner, invisible operators, bidi isolates
                | '\u{2800}' // braille blank
                | '\u{FE00}'..='\u{FE0F}' // variation selectors
                | '\u{FEFF}' // zero-width no-break space
                | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation controls
                | '\u{1D173}'..='\u{1D17A}' // musical formatting controls
                | '\u{E0000}'..='\u{E007F}' // tags
                | '\u{E0100}'..='\u{E01EF}' // variation selectors supplement
        )
}

/// A normalized input program for one action. Carries no intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum InputAction {
    /// One click.
    Click {
        /// Where.
        at: ScreenPoint,
        /// Which button.
        button: Button,
        /// Held during the click.
        modifiers: Vec<Modifier>,
    },
    /// Two clicks.
    DoubleClick {
        /// Where.
        at: ScreenPoint,
        /// Which button.
        button: Button,
        /// Held during the clicks.
        modifiers: Vec<Modifier>,
    },
    /// Press, move along the path, release.
    Drag {
        /// 2..=64 points.
        path: Vec<ScreenPoint>,
        /// Which button.
        button: Button,
        /// Total movement time.
        duration_ms: u32,
        /// Held during the drag.
        modifiers: Vec<Modifier>,
    },
    /// Move the pointer.
    Move {
        /// Destination.
        to: ScreenPoint,
        /// Movement time.
        duration_ms: u32,
    },
    /// Wheel notches at the current pointer position.
    Scroll {
        /// Horizontal notches, positive right.
        dx: i32,
        /// Vertical notches, positive down.
        dy: i32,
        /// Held during the scroll.
        modifiers: Vec<Modifier>,
    },
    /// One chord.
    Key {
        /// Modifiers first, at most one other key last.
        keys: Vec<Key>,
    },
    /// Printable ASCII text.
    Type {
        /// 1..=2,000 printable ASCII characters.
        text: String,
    },
    /// A pause.
    Wait {
        /// Milliseconds.
        milliseconds: u32,
    },
    /// The final action.
    Done,
    /// The default action (AT-SPI `DoAction(0)`) of node `node` of accessibility observation
    /// `observation_id`, exactly once; never a coordinate click. A program step only.
    AxPress {
        /// The observation the node index belongs to.
        observation_id: String,
        /// The node's index in it.
        node: u32,
    },
    /// Set or insert text in an editable node (AT-SPI EditableText). A program step only.
    AxSetText {
        /// The observation the node index belongs to.
        observation_id: String,
        /// The node's index in it.
        node: u32,
        /// 0..=2,000 characters (at least one to insert); no control characters but newline
        /// and tab.
        text: String,
        /// Replace the whole text, or insert at the caret or selection.
        mode: crate::a11y::TextMode,
    },
}

impl InputAction {
    /// Whether executing this action sends any input to the desktop.
    pub fn injects_input(&self) -> bool {
        !matches!(self, InputAction::Wait { .. } | InputAction::Done)
    }

    /// Whether this is a semantic (accessibility) step rather than seat input.
    pub fn is_semantic(&self) -> bool {
        matches!(
            self,
            InputAction::AxPress { .. } | InputAction::AxSetText { .. }
        )
    }
}

/// An action that passed validation, with its intent kept for the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedAction {
    // Invariant: built only by `validate_action`, so `input` fits the display it was checked
    // against.
    pub(super) input: InputAction,
    pub(super) intent: String,
    pub(super) action_type: ActionType,
}

impl ValidatedAction {
    /// What the desktop executes.
    pub fn input(&self) -> &InputAction {
        &self.input
    }
    /// The trimmed intent, for logs only.
    pub fn intent(&self) -> &str {
        &self.intent
    }
    /// The wire name of the action variant.
    pub fn action_type(&self) -> ActionType {
        self.action_type
    }
    /// Splits into its parts.
    pub fn into_parts(self) -> (InputAction, String) {
        (self.input, self.intent)
    }
}

pub(super) struct Checker {
    pub(super) action_type: &'static str,
    pub(super) display: DisplaySize,
}

impl Checker {
    pub(super) fn fail(&self, field: impl Into<String>, message: impl Into<String>) -> ActionError {
        ActionError {
            action_type: self.action_type,
            field: field.into(),
            message: message.into(),
        }
    }

    pub(super) fn point(&self, field: &str, x: i64, y: i64) -> Result<ScreenPoint, ActionError> {
        if !self.display.contains(x, y) {
            return Err(self.fail(
                field,
                format!(
                    "{field} ({x}, {y}) is outside the {} display (x in 0..{}, y in 0..{})",
                    self.display, self.display.width, self.display.height
                ),
            ));
        }
        // Both conversions hold because `contains` checked 0 <= x < width <= u32::MAX.
        let (Ok(x), Ok(y)) = (u32::try_from(x), u32::try_from(y)) else {
            return Err(self.fail(field, "coordinate does not fit a screen pixel"));
        };
        Ok(ScreenPoint { x, y })
    }

    pub(super) fn ranged(
        &self,
        field: &str,
        value: i64,
        low: u32,
        high: u32,
    ) -> Result<u32, ActionError> {
        if value < i64::from(low) || value > i64::from(high) {
            return Err(self.fail(field, format!("{field} {value} is outside {low}..={high}")));
        }
        u32::try_from(value).map_err(|_| self.fail(field, "value does not fit"))
    }

    pub(super) fn modifiers(&self, modifiers: &[Modifier]) -> Result<Vec<Modifier>, ActionError> {
        let mut seen = Vec::new();
        for modifier in modifiers {
            if seen.contains(modifier) {
                return Err(self.fail(
                    "modifiers",
                    format!("modifier {:?} is listed twice", modifier.as_str()),
                ));
            }
            seen.push(*modifier);
        }
        Ok(seen)
    }

    pub(super) fn intent(&self, intent: &str) -> Result<String, ActionError> {
        let trimmed = intent.trim();
        if trimmed.is_empty() {
            return Err(self.fail("intent", "intent is required and must not be blank"));
        }
        if trimmed.chars().all(is_invisible) {
            return Err(self.fail(
                "intent",
                "intent must contain a visible character (it has only whitespace, zero-width or \
                 bidi control characters)",
            ));
        }
        let n_chars = trimmed.chars().count();
        if n_chars > MAX_INTENT_CHARS {
            return Err(self.fail(
                "intent",
                format!("intent has {n_chars} characters, at most {MAX_INTENT_CHARS} allowed"),
            ));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(self.fail("intent", "intent must not contain control characters"));
        }
        Ok(trimmed.to_string())
    }

    pub(super) fn text(&self, text: &str) -> Result<String, ActionError> {
        if text.is_empty() {
            return Err(self.fail("text", "text must not be empty"));
        }
        let n_chars = text.chars().count();
        if n_chars > MAX_TEXT_CHARS {
            return Err(self.fail(
                "text",
                format!("text has {n_chars} characters, at most {MAX_TEXT_CHARS} allowed"),
            ));
        }
        if let Some((position, bad)) = text
            .chars()
            .enumerate()
            .find(|(_, c)| !(c.is_ascii_graphic() || *c == ' '))
        {
            return Err(self.fail(
                "text",
                format!(
                    "text character {position} ({:?}) is not printable ASCII; use a key action \
                     for Return, Tab and other keys",
                    bad.escape_default().to_string()
                ),
            ));
        }
        Ok(text.to_string())
    }

    pub(super) fn keys(&self, keys: &[String]) -> Result<Vec<Key>, ActionError> {
        parse_chord(keys).map_err(|problem| match problem {
            KeyProblem::Unknown(name) => self.fail("keys", format!("unknown key name {name:?}")),
            KeyProblem::SystemKey(name) => self.fail(
                "keys",
                format!("system key {name:?} (Super/Windows/Meta) is not allowed"),
            ),
            KeyProblem::ForbiddenChord(chord) => {
                self.fail("keys", format!("system chord {chord:?} is not allowed"))
            }
            KeyProblem::Malformed(message) => self.fail("keys", message),
        })
    }

    pub(super) fn path(&self, path: &[WirePoint]) -> Result<Vec<ScreenPoint>, ActionError> {
        if path.len() < MIN_DRAG_POINTS || path.len() > MAX_DRAG_POINTS {
            return Err(self.fail(
                "path",
                format!(
                    "a drag path has {MIN_DRAG_POINTS} to {MAX_DRAG_POINTS} points, got {}",
                    path.len()
                ),
            ));
        }
        path.iter()
            .enumerate()
            .map(|(point_idx, point)| self.point(&format!("path[{point_idx}]"), point.x, point.y))
            .collect()
    }

    pub(super) fn scroll(&self, dx: i64, dy: i64) -> Result<(i32, i32), ActionError> {
        let limit = i64::from(MAX_SCROLL_NOTCHES);
        for (field, value) in [("dx", dx), ("dy", dy)] {
            if !(-limit..=limit).contains(&value) {
                return Err(self.fail(
                    field,
                    format!("{field} {value} is outside -{limit}..={limit} notches"),
                ));
            }
        }
        if dx == 0 && dy == 0 {
            return Err(self.fail("dy", "a scroll needs a non-zero dx or dy"));
        }
        // Both fit: checked against MAX_SCROLL_NOTCHES above.
        let (Ok(dx), Ok(dy)) = (i32::try_from(dx), i32::try_from(dy)) else {
            return Err(self.fail("dy", "scroll amount does not fit"));
        };
        Ok((dx, dy))
    }
}

/// Validates `action` against the live display and strips its intent into a [`ValidatedAction`].
pub fn validate_action(
    action: &Action,
    display: DisplaySize,
) -> Result<ValidatedAction, ActionError> {
    let check = Checker {
        action_type: action.type_name(),
        display,
    };
    let intent = check.intent(action.intent())?;
    let input = match action {
        Action::Click {
            x,
            y,
            button,
            modifiers,
            ..
        } => InputAction::Click {
            at: check.point("point", *x, *y)?,
            button: *button,
            modifiers: check.modifiers(modifiers)?,
        },
        Action::DoubleClick {
            x,
            y,
            button,
            modifiers,
            ..
        } => InputAction::DoubleClick {
            at: check.point("point", *x, *y)?,
            button: *button,
            modifiers: check.modifiers(modifiers)?,
        },
        Action::Drag {
            path,
            button,
            duration_ms,
            modifiers,
            ..
        } => InputAction::Drag {
            path: check.path(path)?,
            button: *button,
            duration_ms: check.ranged("duration_ms", *duration_ms, 0, MAX_DRAG_DURATION_MS)?,
            modifiers: check.modifiers(modifiers)?,
        },
        Action::Move {
            x, y, duration_ms, ..
        } => InputAction::Move {
            to: check.point("point", *x, *y)?,
            duration_ms: check.ranged("duration_ms", *duration_ms, 0, MAX_MOVE_DURATION_MS)?,
        },
        Action::Scroll {
            dx, dy, modifiers, ..
        } => {
            let (dx, dy) = check.scroll(*dx, *dy)?;
            InputAction::Scroll {
                dx,
                dy,
                modifiers: check.modifiers(modifiers)?,
            }
        }
        Action::Key { keys, .. } => InputAction::Key {
            keys: check.keys(keys)?,
        },
        Action::Type { text, .. } => InputAction::Type {
            text: check.text(text)?,
        },
        Action::Wait { milliseconds, .. } => InputAction::Wait {
            milliseconds: check.ranged(
                "milliseconds",
                *milliseconds,
                WAIT_RANGE_MS.0,
                WAIT_RANGE_MS.1,
            )?,
        },
        Action::Done { .. } => InputAction::Done,
    };
    Ok(ValidatedAction {
        input,
        intent,
        action_type: action.action_type(),
    })
}
