//! The conformance table: every action type with the events the real worker reports for it,
//! and the actions a backend must refuse before input.

use desk_contract::events::InputEventKind;
use desk_contract::{Button, DisplaySize, InputAction, Key, Modifier, NamedKey, ScreenPoint};

/// One action and the events a backend must report for it.
#[derive(Debug, Clone)]
pub struct Case {
    /// A short name for failure messages.
    pub name: &'static str,
    /// The action, as validated by the broker.
    pub action: InputAction,
    /// The input events, in order (timestamps ignored).
    pub expected: Vec<InputEventKind>,
    /// Where the pointer must be afterwards, for pointer actions.
    pub pointer_after: Option<ScreenPoint>,
}

fn point(x: u32, y: u32) -> ScreenPoint {
    ScreenPoint { x, y }
}

fn moved(at: ScreenPoint) -> InputEventKind {
    InputEventKind::MouseMove { x: at.x, y: at.y }
}

fn button(at: ScreenPoint, button: Button, pressed: bool) -> InputEventKind {
    InputEventKind::Click {
        x: at.x,
        y: at.y,
        button,
        pressed,
    }
}

fn modifier(modifier: Modifier, pressed: bool) -> InputEventKind {
    InputEventKind::ModifierChange {
        modifier: modifier.as_str().to_string(),
        pressed,
    }
}

fn key(name: &str, pressed: bool) -> InputEventKind {
    InputEventKind::Key {
        key: name.to_string(),
        pressed,
    }
}

/// The action table for a display of `display` (at least 200x200), in the order it must run.
pub fn action_cases(display: DisplaySize) -> Vec<Case> {
    let (w, h) = (display.width, display.height);
    let center = point(w / 2, h / 2);
    let corner = point(w - 1, h - 1);
    let a = point(w / 4, h / 4);
    let b = point(w / 3, h / 3);
    let c = point(w / 2 + 10, h / 3);
    vec![
        Case {
            name: "click",
            action: InputAction::Click {
                at: center,
                button: Button::Left,
                modifiers: Vec::new(),
            },
            expected: vec![
                moved(center),
                button(center, Button::Left, true),
                button(center, Button::Left, false),
            ],
            pointer_after: Some(center),
        },
        Case {
            name: "shift+right click at the last pixel",
            action: InputAction::Click {
                at: corner,
                button: Button::Right,
                modifiers: vec![Modifier::Shift],
            },
            expected: vec![
                moved(corner),
                modifier(Modifier::Shift, true),
                button(corner, Button::Right, true),
                button(corner, Button::Right, false),
                modifier(Modifier::Shift, false),
            ],
            pointer_after: Some(corner),
        },
        Case {
            name: "double click",
            action: InputAction::DoubleClick {
                at: a,
                button: Button::Left,
                modifiers: Vec::new(),
            },
            expected: vec![
                moved(a),
                button(a, Button::Left, true),
                button(a, Button::Left, false),
                button(a, Button::Left, true),
                button(a, Button::Left, false),
            ],
            pointer_after: Some(a),
        },
        Case {
            name: "ctrl+drag",
            action: InputAction::Drag {
                path: vec![a, b, c],
                button: Button::Left,
                duration_ms: 0,
                modifiers: vec![Modifier::Ctrl],
            },
            expected: vec![
                moved(a),
                modifier(Modifier::Ctrl, true),
                button(a, Button::Left, true),
                InputEventKind::Drag {
                    x: b.x,
                    y: b.y,
                    button: Button::Left,
                },
                InputEventKind::Drag {
                    x: c.x,
                    y: c.y,
                    button: Button::Left,
                },
                button(c, Button::Left, false),
                modifier(Modifier::Ctrl, false),
            ],
            pointer_after: Some(c),
        },
        Case {
            name: "move",
            action: InputAction::Move {
                to: b,
                duration_ms: 0,
            },
            expected: vec![moved(b)],
            pointer_after: Some(b),
        },
        Case {
            name: "scroll at the pointer",
            action: InputAction::Scroll {
                dx: 0,
                dy: 2,
                modifiers: vec![Modifier::Alt],
            },
            expected: vec![
                modifier(Modifier::Alt, true),
                InputEventKind::Scroll {
                    x: b.x,
                    y: b.y,
                    dx: 0,
                    dy: 2,
                },
                modifier(Modifier::Alt, false),
            ],
            pointer_after: Some(b),
        },
        Case {
            name: "chord",
            action: InputAction::Key {
                keys: vec![Key::Modifier(Modifier::Ctrl), Key::Char('a')],
            },
            expected: vec![
                modifier(Modifier::Ctrl, true),
                key("a", true),
                key("a", false),
                modifier(Modifier::Ctrl, false),
            ],
            pointer_after: None,
        },
        Case {
            name: "named key",
            action: InputAction::Key {
                keys: vec![Key::Named(NamedKey::Escape)],
            },
            expected: vec![key("escape", true), key("escape", false)],
            pointer_after: None,
        },
        Case {
            name: "type with an implicit shift",
            action: InputAction::Type {
                text: "aB".to_string(),
            },
            expected: vec![
                key("a", true),
                key("a", false),
                modifier(Modifier::Shift, true),
                key("B", true),
                key("B", false),
                modifier(Modifier::Shift, false),
            ],
            pointer_after: None,
        },
        Case {
            name: "wait",
            action: InputAction::Wait { milliseconds: 30 },
            expected: Vec::new(),
            pointer_after: None,
        },
        Case {
            name: "done",
            action: InputAction::Done,
            expected: Vec::new(),
            pointer_after: None,
        },
    ]
}

/// Actions a backend must refuse before any input: points outside the display, a one-point
/// drag. The broker's validation never lets these through; the backend checks again.
pub(crate) fn rejected_cases(display: DisplaySize) -> Vec<(&'static str, InputAction)> {
    let (w, h) = (display.width, display.height);
    vec![
        (
            "click one pixel right of the display",
            InputAction::Click {
                at: point(w, 0),
                button: Button::Left,
                modifiers: Vec::new(),
            },
        ),
        (
            "move one pixel below the display",
            InputAction::Move {
                to: point(0, h),
                duration_ms: 0,
            },
        ),
        (
            "drag leaving the display",
            InputAction::Drag {
                path: vec![point(1, 1), point(2, 2), point(w + 5, 2)],
                button: Button::Left,
                duration_ms: 0,
                modifiers: Vec::new(),
            },
        ),
        (
            "one-point drag",
            InputAction::Drag {
                path: vec![point(1, 1)],
                button: Button::Left,
                duration_ms: 0,
                modifiers: Vec::new(),
            },
        ),
    ]
}
