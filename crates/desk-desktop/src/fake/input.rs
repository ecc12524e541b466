//! What the fake reports for one action, modelled on the real worker (desk-x11's injector and
//! settle wait) and held to it by the conformance suite (`crate::conformance`): the events in
//! the worker's order, its bounds check before input, and the settle rule on a virtual clock.

use desk_contract::events::{InputEvent, InputEventKind};
use desk_contract::settle::{SettleDecision, SettleRule};
use desk_contract::{
    Button, DisplaySize, InputAction, Key, Modifier, ScreenPoint, SettleOutcome, SettlePolicy,
    SettleReport,
};

use crate::error::BackendError;

/// The real worker samples the screen this often while settling.
const SAMPLE_INTERVAL_MS: u64 = 20;

/// Characters that need Shift on the US layout Xvfb starts with (the worker adds it).
fn needs_shift(character: char) -> bool {
    character.is_ascii_uppercase() || "~!@#$%^&*()_+{}|:\"<>?".contains(character)
}

/// Refuses, before any input, what the worker refuses: points outside the display and a drag of
/// fewer than two points; and every semantic step, since the fake has no accessibility.
pub(super) fn check_bounds(display: DisplaySize, action: &InputAction) -> Result<(), BackendError> {
    let check = |at: &ScreenPoint| {
        if display.contains(i64::from(at.x), i64::from(at.y)) {
            Ok(())
        } else {
            Err(BackendError::Rejected(format!(
                "point ({}, {}) is outside the {display} display",
                at.x, at.y
            )))
        }
    };
    match action {
        InputAction::Click { at, .. } | InputAction::DoubleClick { at, .. } => check(at),
        InputAction::Move { to, .. } => check(to),
        InputAction::Drag { path, .. } if path.len() < 2 => Err(BackendError::Rejected(
            "a drag needs at least two points".to_string(),
        )),
        InputAction::Drag { path, .. } => path.iter().try_for_each(check),
        InputAction::AxPress { .. } | InputAction::AxSetText { .. } => {
            Err(BackendError::AccessibilityUnavailable(
                "the fake desktop has no accessibility; nothing was sent".to_string(),
            ))
        }
        _ => Ok(()),
    }
}

/// The events the worker records for `action`, starting with the pointer at `*pointer`, which
/// is moved where the action leaves it.
pub(super) fn events_for(
    action: &InputAction,
    pointer: &mut ScreenPoint,
    now_ms: u64,
) -> Vec<InputEvent> {
    let mut kinds = Vec::new();
    let modifier = |modifier: Modifier, pressed: bool| InputEventKind::ModifierChange {
        modifier: modifier.as_str().to_string(),
        pressed,
    };
    let click = |at: ScreenPoint, button: Button, pressed: bool| InputEventKind::Click {
        x: at.x,
        y: at.y,
        button,
        pressed,
    };
    let moved = |at: ScreenPoint| InputEventKind::MouseMove { x: at.x, y: at.y };
    let down = |kinds: &mut Vec<InputEventKind>, held: &[Modifier]| {
        kinds.extend(held.iter().map(|held| modifier(*held, true)));
    };
    let up = |kinds: &mut Vec<InputEventKind>, held: &[Modifier]| {
        kinds.extend(held.iter().rev().map(|held| modifier(*held, false)));
    };
    let key = |key: String, pressed: bool| InputEventKind::Key { key, pressed };
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
            let n_clicks = if matches!(action, InputAction::Click { .. }) {
                1
            } else {
                2
            };
            kinds.push(moved(*at));
            down(&mut kinds, modifiers);
            for _ in 0..n_clicks {
                kinds.push(click(*at, *button, true));
                kinds.push(click(*at, *button, false));
            }
            up(&mut kinds, modifiers);
            *pointer = *at;
        }
        InputAction::Drag {
            path,
            button,
            modifiers,
            ..
        } => {
            if let (Some(first), Some(last)) = (path.first(), path.last()) {
                kinds.push(moved(*first));
                down(&mut kinds, modifiers);
                kinds.push(click(*first, *button, true));
                kinds.extend(path[1..].iter().map(|point| InputEventKind::Drag {
                    x: point.x,
                    y: point.y,
                    button: *button,
                }));
                kinds.push(click(*last, *button, false));
                up(&mut kinds, modifiers);
                *pointer = *last;
            }
        }
        InputAction::Move { to, .. } => {
            kinds.push(moved(*to));
            *pointer = *to;
        }
        InputAction::Scroll { dx, dy, modifiers } => {
            down(&mut kinds, modifiers);
            kinds.push(InputEventKind::Scroll {
                x: pointer.x,
                y: pointer.y,
                dx: *dx,
                dy: *dy,
            });
            up(&mut kinds, modifiers);
        }
        InputAction::Key { keys } => {
            let has_shift = keys.contains(&Key::Modifier(Modifier::Shift));
            let mut released = Vec::new();
            for chord_key in keys {
                let implicit_shift =
                    matches!(chord_key, Key::Char(c) if needs_shift(*c)) && !has_shift;
                if implicit_shift {
                    kinds.push(modifier(Modifier::Shift, true));
                    released.push(None);
                }
                kinds.push(match chord_key {
                    Key::Modifier(held) => modifier(*held, true),
                    other => key(other.canonical_name(), true),
                });
                released.push(Some(chord_key));
            }
            for entry in released.into_iter().rev() {
                kinds.push(match entry {
                    None => modifier(Modifier::Shift, false),
                    Some(Key::Modifier(held)) => modifier(*held, false),
                    Some(other) => key(other.canonical_name(), false),
                });
            }
        }
        InputAction::Type { text } => {
            for character in text.chars() {
                let shift = needs_shift(character);
                if shift {
                    kinds.push(modifier(Modifier::Shift, true));
                }
                kinds.push(key(character.to_string(), true));
                kinds.push(key(character.to_string(), false));
                if shift {
                    kinds.push(modifier(Modifier::Shift, false));
                }
            }
        }
        // Refused before input by the check above.
        InputAction::Wait { .. }
        | InputAction::Done
        | InputAction::AxPress { .. }
        | InputAction::AxSetText { .. } => {}
    }
    kinds
        .into_iter()
        .map(|kind| InputEvent {
            timestamp_ms: now_ms,
            kind,
        })
        .collect()
}

/// The settle wait the worker would report, on a virtual clock (the fake does not sleep):
/// samples every 20 ms, a change seen at the first sample when `changed`, at every sample when
/// the screen `never_settles`, decided by [`SettlePolicy::decide`]. `done` skips settling; an
/// `interrupted` wait (a Stop past its generation) ends at its first sample.
pub(super) fn settle(
    action: &InputAction,
    policy: SettlePolicy,
    changed: bool,
    never_settles: bool,
    interrupted: bool,
    changed_pixels: u64,
) -> SettleReport {
    if matches!(action, InputAction::Done) {
        return SettleReport {
            outcome: SettleOutcome::Skipped,
            wait_ms: 0,
            changed_pixels,
            n_samples: 0,
            post_action_visual_stable: false,
            rule: SettleRule::NotSettled,
            validation: None,
        };
    }
    if interrupted {
        return SettleReport {
            outcome: SettleOutcome::Interrupted,
            wait_ms: SAMPLE_INTERVAL_MS,
            changed_pixels,
            n_samples: 1,
            post_action_visual_stable: false,
            rule: SettleRule::NotSettled,
            validation: None,
        };
    }
    let mut last_change_ms = None;
    let mut n_samples = 0u32;
    loop {
        n_samples = n_samples.saturating_add(1);
        let elapsed_ms = u64::from(n_samples) * SAMPLE_INTERVAL_MS;
        if never_settles || (changed && n_samples == 1) {
            last_change_ms = Some(elapsed_ms);
        }
        let (outcome, rule) = match policy.decide(elapsed_ms, last_change_ms) {
            SettleDecision::Continue => continue,
            SettleDecision::Settled => (SettleOutcome::Stable, SettleRule::QuietTimer),
            SettleDecision::GiveUp => (SettleOutcome::StillChanging, SettleRule::MaxWait),
        };
        return SettleReport {
            outcome,
            wait_ms: elapsed_ms,
            changed_pixels,
            n_samples,
            post_action_visual_stable: outcome == SettleOutcome::Stable,
            rule,
            validation: None,
        };
    }
}
