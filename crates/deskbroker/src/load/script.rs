//! The load benchmark's action script and what the probe window must record for it.
//!
//! [`script`] builds a deterministic mix per session (click, right click, double click, move,
//! key chord, single key, typed text, scroll, wait) inside the middle of the display, where the
//! maximized probe window is. [`Expected`] accumulates, for every action the broker
//! acknowledged, the X events the probe must have received; [`Expected::check`] compares them with
//! the probe's NDJSON log: the exact sequence of button presses (button and position), as many
//! releases, the exact typed characters, and every move target among the motion events in order.

use desk_contract::{Action, Button, DisplaySize};
use serde_json::Value;

/// A small deterministic generator (64-bit LCG), so every run sends the same actions.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u32) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let high = u32::try_from(self.0 >> 33).unwrap_or(0);
        high % bound.max(1)
    }
}

/// The action list of one session.
pub(crate) fn script(session_idx: usize, n_actions: usize, display: DisplaySize) -> Vec<Action> {
    let mut rng = Lcg(0x5eed_0000 + session_idx as u64);
    let (x_min, y_min) = (display.width / 4, display.height / 4);
    let (x_span, y_span) = (display.width / 2, display.height / 2);
    let mut last = (u32::MAX, u32::MAX);
    let mut point = move |rng: &mut Lcg| loop {
        let candidate = (x_min + rng.next(x_span), y_min + rng.next(y_span));
        // Consecutive pointer targets differ, so every move produces a motion event.
        if candidate != last {
            last = candidate;
            return (i64::from(candidate.0), i64::from(candidate.1));
        }
    };
    let words = ["load", "probe", "desk", "broker", "exact", "once"];
    (0..n_actions)
        .map(|action_idx| {
            let intent = format!("load step {action_idx}");
            match action_idx % 10 {
                0 => {
                    let (x, y) = point(&mut rng);
                    Action::Click {
                        x,
                        y,
                        button: Button::Left,
                        modifiers: vec![],
                        intent,
                    }
                }
                1 | 6 => {
                    let (x, y) = point(&mut rng);
                    Action::Move {
                        x,
                        y,
                        duration_ms: 0,
                        intent,
                    }
                }
                2 => Action::Key {
                    keys: vec!["ctrl".to_string(), "s".to_string()],
                    intent,
                },
                3 => {
                    let word = words[rng.next(words.len() as u32) as usize];
                    Action::Type {
                        text: format!("{word} {action_idx}"),
                        intent,
                    }
                }
                4 => Action::Scroll {
                    dx: 0,
                    dy: if rng.next(2) == 0 { 2 } else { -1 },
                    modifiers: vec![],
                    intent,
                },
                5 => {
                    let (x, y) = point(&mut rng);
                    Action::Click {
                        x,
                        y,
                        button: Button::Right,
                        modifiers: vec![],
                        intent,
                    }
                }
                7 => Action::Wait {
                    milliseconds: 50,
                    intent,
                },
                8 => {
                    let (x, y) = point(&mut rng);
                    Action::DoubleClick {
                        x,
                        y,
                        button: Button::Left,
                        modifiers: vec![],
                        intent,
                    }
                }
                _ => Action::Key {
                    keys: vec!["x".to_string()],
                    intent,
                },
            }
        })
        .collect()
}

fn button_number(button: Button) -> i64 {
    match button {
        Button::Left => 1,
        Button::Middle => 2,
        Button::Right => 3,
    }
}

/// What the probe must have recorded for the acknowledged actions.
#[derive(Debug, Default)]
pub(crate) struct Expected {
    /// `(button, x, y)` of every button press, in order.
    presses: Vec<(i64, i64, i64)>,
    /// Every typed character, in order.
    chars: String,
    /// Every move target, in order.
    moves: Vec<(i64, i64)>,
    /// Where the pointer is after the acknowledged actions.
    pointer: Option<(i64, i64)>,
}

impl Expected {
    /// Adds the effects of an action the broker acknowledged.
    pub(crate) fn acknowledged(&mut self, action: &Action) {
        match action {
            Action::Click { x, y, button, .. } => {
                self.presses.push((button_number(*button), *x, *y));
                self.pointer = Some((*x, *y));
            }
            Action::DoubleClick { x, y, button, .. } => {
                for _ in 0..2 {
                    self.presses.push((button_number(*button), *x, *y));
                }
                self.pointer = Some((*x, *y));
            }
            Action::Move { x, y, .. } => {
                self.moves.push((*x, *y));
                self.pointer = Some((*x, *y));
            }
            Action::Scroll { dy, .. } => {
                let (x, y) = self.pointer.unwrap_or((-1, -1));
                let wheel = if *dy > 0 { 5 } else { 4 };
                for _ in 0..dy.unsigned_abs() {
                    self.presses.push((wheel, x, y));
                }
            }
            Action::Key { keys, .. } => {
                if let Some(last) = keys.last() {
                    self.chars.push_str(last);
                }
            }
            Action::Type { text, .. } => self.chars.push_str(text),
            Action::Drag { .. } | Action::Wait { .. } | Action::Done { .. } => {}
        }
    }

    /// How many button events the probe must log at least (presses and releases).
    pub(crate) fn n_button_events(&self) -> usize {
        self.presses.len() * 2
    }

    /// Compares with the probe's events; returns every mismatch found.
    pub(crate) fn check(&self, events: &[Value]) -> Vec<String> {
        let of_type = |kind: &'static str| events.iter().filter(move |event| event["type"] == kind);
        let position = |event: &Value| {
            (
                event["root_x"].as_i64().unwrap_or(-1),
                event["root_y"].as_i64().unwrap_or(-1),
            )
        };
        let mut mismatches = Vec::new();
        let presses: Vec<(i64, i64, i64)> = of_type("button_press")
            .map(|event| {
                let (x, y) = position(event);
                (event["button"].as_i64().unwrap_or(-1), x, y)
            })
            .collect();
        if presses != self.presses {
            let first_diff = presses
                .iter()
                .zip(&self.presses)
                .position(|(got, want)| got != want)
                .unwrap_or(presses.len().min(self.presses.len()));
            mismatches.push(format!(
                "button presses: expected {}, probe got {}; first difference at press {first_diff} \
                 (expected {:?}, got {:?})",
                self.presses.len(),
                presses.len(),
                self.presses.get(first_diff),
                presses.get(first_diff)
            ));
        }
        let n_releases = of_type("button_release").count();
        if n_releases != self.presses.len() {
            mismatches.push(format!(
                "button releases: expected {}, probe got {n_releases}",
                self.presses.len()
            ));
        }
        let chars: String = of_type("key_press")
            .filter_map(|event| event["char"].as_str())
            .collect();
        if chars != self.chars {
            mismatches.push(format!(
                "typed characters: expected {} ({:?}…), probe got {} ({:?}…)",
                self.chars.len(),
                self.chars.chars().take(40).collect::<String>(),
                chars.len(),
                chars.chars().take(40).collect::<String>()
            ));
        }
        let mut motions = of_type("motion").map(position);
        let n_found = self
            .moves
            .iter()
            .take_while(|target| motions.any(|motion| motion == **target))
            .count();
        if n_found != self.moves.len() {
            mismatches.push(format!(
                "moves: target {n_found} {:?} (of {}) never reached the probe in order",
                self.moves.get(n_found),
                self.moves.len()
            ));
        }
        mismatches
    }
}
