//! `execute`: the one action path of [`X11Session`]. Inject once, release held inputs,
//! settle, capture, and read focus; once the input was delivered, a failed settle capture, PNG
//! encode or focus read is an observation failure named in the outcome, never an error.
//!
//! A semantic step (`ax_press`, `ax_set_text`) takes the same path with the accessibility
//! provider in place of XTEST (`a11y.rs`).
//!
//! Invariants: coordinates are re-checked against the live display, and seat input's
//! destination against the bound app (`destination.rs`), before any input; an error
//! of the input itself after its first request is `outcome_unknown`, before it
//! `desktop_failed`; held keys and buttons are released after every action, also on failure.

use std::time::Instant;

use desk_contract::desktop::{ActionOutcome, observation};
use desk_contract::geometry::ScreenPoint;
use desk_contract::settle::{SettleOutcome, SettlePolicy, SettleReport, SettleRule};
use desk_contract::validate::InputAction;
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};

use crate::error::X11Error;
use crate::fault::{WORKER_FAULT_ENV, WorkerFault};
use crate::input::Injector;
use crate::session::X11Session;
use crate::settle::{Settled, millis, wait_for_idle, wait_for_stable};

impl X11Session {
    fn check_point(&self, point: ScreenPoint) -> Result<(), WorkerFailure> {
        let inside = self
            .display
            .contains(i64::from(point.x), i64::from(point.y));
        if inside {
            return Ok(());
        }
        Err(WorkerFailure {
            kind: WorkerFailureKind::InvalidRequest,
            message: format!(
                "point ({}, {}) is outside the {} display",
                point.x, point.y, self.display
            ),
        })
    }

    fn check_action(&self, action: &InputAction) -> Result<(), WorkerFailure> {
        match action {
            InputAction::Click { at, .. } | InputAction::DoubleClick { at, .. } => {
                self.check_point(*at)
            }
            InputAction::Move { to, .. } => self.check_point(*to),
            InputAction::Drag { path, .. } => {
                if path.len() < 2 {
                    return Err(WorkerFailure {
                        kind: WorkerFailureKind::InvalidRequest,
                        message: "a drag needs at least two points".into(),
                    });
                }
                path.iter().try_for_each(|point| self.check_point(*point))
            }
            _ => Ok(()),
        }
    }

    /// Answers `execute`: inject once, release held inputs, settle, capture.
    pub fn execute(
        &mut self,
        action: &InputAction,
        policy: &SettlePolicy,
    ) -> Result<ActionOutcome, WorkerFailure> {
        self.execute_for(action, policy, None)
    }

    /// [`X11Session::execute`] for the control `generation`: a Stop past it (see
    /// [`X11Session::set_stop_file`]) ends the settle wait with `interrupted`.
    pub fn execute_for(
        &mut self,
        action: &InputAction,
        policy: &SettlePolicy,
        generation: Option<u64>,
    ) -> Result<ActionOutcome, WorkerFailure> {
        let interrupt = generation
            .zip(self.stop_file.clone())
            .map(|(generation, path)| crate::settle::Interrupt { path, generation });
        self.check_action(action)?;
        let app_pid = self.app_pid();
        let before_failed = |error: X11Error| WorkerFailure {
            kind: WorkerFailureKind::DesktopFailed,
            message: error.to_string(),
        };
        let unknown = |error: X11Error| WorkerFailure {
            kind: WorkerFailureKind::OutcomeUnknown,
            message: error.to_string(),
        };
        let started = Instant::now();
        let focus_before = self.windows().focus(app_pid).map_err(before_failed)?;
        self.check_destination(action, &focus_before)?;
        // What was open before the input, to report the windows the step opens.
        let windows_before = self.top_level_windows();
        let focused = Instant::now();
        // Damage from here on counts as a change after the input.
        if let Some(watch) = self.idle.as_mut() {
            watch.arm(&self.conn).map_err(before_failed)?;
        }
        let before = self.capture_raw().map_err(before_failed)?;
        let input_started = Instant::now();
        let (injected, sent_any, events) = if action.is_semantic() {
            // To the accessibility provider, not the seat: a refusal before its one call sent
            // nothing, and its own failure kind says so.
            match self.semantic_input(action) {
                Ok(events) => (Ok(()), true, events),
                Err(failure) => {
                    self.capturer.recycle(before);
                    return Err(failure);
                }
            }
        } else {
            let mut injector = Injector::new(&self.conn, self.root, &mut self.keymap);
            let injected = inject(
                &mut injector,
                action,
                focus_before.pointer,
                interrupt.as_ref(),
            );
            let sent_any = injector.sent_any();
            (injected, sent_any, injector.into_events())
        };
        let injected_us = input_started.elapsed().as_micros();
        let restored = self.keymap.restore(&self.conn);
        let released = self.release_held();
        let released_us = input_started.elapsed().as_micros();
        let input_ms = millis(input_started.elapsed());
        let classify = |error: X11Error| {
            if sent_any {
                unknown(error)
            } else {
                before_failed(error)
            }
        };
        injected.map_err(classify)?;
        restored.map_err(classify)?;
        let released_after = released.map_err(classify)?;
        // The input was delivered: from here on a failure is an observation failure named in
        // the outcome, never an error of the action.
        let fault = self.fault.take();
        let mut observation_failures = Vec::new();
        let mut failed = |id: &str, error: &X11Error| {
            tracing::error!(observation = id, %error, "an observation after delivered input failed");
            observation_failures.push(id.to_string());
        };
        let settled = if matches!(action, InputAction::Done) {
            self.capture_raw().map(|frame| Settled {
                outcome: SettleOutcome::Skipped,
                rule: SettleRule::NotSettled,
                frame,
                wait_ms: 0,
                n_samples: 0,
                png: None,
            })
        } else if fault == WorkerFault::CaptureAfterInput {
            Err(X11Error::Capture(format!(
                "{WORKER_FAULT_ENV}: injected capture failure"
            )))
        } else if let Some(watch) = self.idle.as_mut() {
            wait_for_idle(
                &self.conn,
                &mut self.capturer,
                policy,
                watch,
                interrupt.as_ref(),
            )
        } else {
            wait_for_stable(
                &self.conn,
                &mut self.capturer,
                policy,
                &before,
                interrupt.as_ref(),
            )
        };
        let settled = settled
            .map_err(|error| failed(observation::CAPTURE, &error))
            .ok();
        let settled_at = Instant::now();
        let focus_after = if fault == WorkerFault::FocusAfterInput {
            Err(X11Error::InvalidRequest(format!(
                "{WORKER_FAULT_ENV}: injected focus read failure"
            )))
        } else {
            self.windows().focus(app_pid)
        };
        let focus_after = focus_after
            .map_err(|error| failed(observation::FOCUS, &error))
            .ok();
        let opened_windows = windows_before
            .and_then(|known| self.app_windows_except(&known))
            .map_err(|error| failed(observation::WINDOWS, &error))
            .unwrap_or_default();
        let refocused = Instant::now();
        // For the next input's destination check, while the app is settled.
        let stable = settled
            .as_ref()
            .is_some_and(|settled| settled.outcome == SettleOutcome::Stable);
        self.refresh_guard_snapshot(action, stable);
        let (settle, frame) = match settled {
            Some(settled) => {
                let changed_pixels = settled.frame.changed_pixels(&before);
                let encoded = if fault == WorkerFault::EncodeAfterInput {
                    Err(X11Error::InvalidRequest(format!(
                        "{WORKER_FAULT_ENV}: injected encode failure"
                    )))
                } else {
                    match settled.png {
                        // Encoded (and hashed) during the quiet wait from identical pixels.
                        Some(png) => {
                            Ok(self.frame(png, settled.frame.width(), settled.frame.height()))
                        }
                        None => self.encode(&settled.frame),
                    }
                };
                let validation = match (settled.outcome, policy.validate_ms) {
                    (SettleOutcome::Stable, validate_ms) if validate_ms > 0 => {
                        // The windows at the settle, to name the ones that open later.
                        let at_settle = self.top_level_windows().ok();
                        let screen = (settled.frame.width(), settled.frame.height());
                        crate::settle::validate(
                            &self.conn,
                            &mut self.capturer,
                            &settled.frame,
                            validate_ms,
                        )
                        .map(|mut validation| {
                            // None: the windows are unknown (the kind then rests on geometry).
                            let opened = match &at_settle {
                                Some(_) if validation.changed_pixels == 0 => Some(Vec::new()),
                                Some(known) => self.app_windows_except(known).ok(),
                                None => None,
                            };
                            validation.kind = Some(crate::settle::classify(
                                validation.changed_pixels,
                                validation.changed_box,
                                screen,
                                focus_after.as_ref().map(|focus| focus.pointer),
                                opened.as_deref(),
                            ));
                            validation
                        })
                        .map_err(|error| tracing::warn!(%error, "the validation capture failed"))
                        .ok()
                    }
                    _ => None,
                };
                self.capturer.recycle(settled.frame);
                let frame = encoded
                    .map_err(|error| failed(observation::ENCODE, &error))
                    .ok();
                let report = SettleReport {
                    outcome: settled.outcome,
                    wait_ms: settled.wait_ms,
                    changed_pixels,
                    n_samples: settled.n_samples,
                    post_action_visual_stable: settled.outcome == SettleOutcome::Stable,
                    rule: settled.rule,
                    validation,
                };
                (report, frame)
            }
            None => {
                let report = SettleReport {
                    outcome: SettleOutcome::Unavailable,
                    wait_ms: millis(settled_at - input_started).saturating_sub(input_ms),
                    changed_pixels: 0,
                    n_samples: 0,
                    post_action_visual_stable: false,
                    rule: SettleRule::NotSettled,
                    validation: None,
                };
                (report, None)
            }
        };
        self.capturer.recycle(before);
        // Microseconds: the parts outside the settle wait are each about a millisecond.
        tracing::debug!(
            checks_before_us = (focused - started).as_micros(),
            capture_before_us = (input_started - focused).as_micros(),
            inject_us = injected_us,
            release_held_us = released_us.saturating_sub(injected_us),
            input_ms,
            settle_ms = millis(settled_at - input_started).saturating_sub(input_ms),
            wait_ms = settle.wait_ms,
            focus_after_us = (refocused - settled_at).as_micros(),
            compare_and_encode_us = refocused.elapsed().as_micros(),
            total_ms = millis(started.elapsed()),
            "executed action"
        );
        Ok(ActionOutcome {
            events,
            focus_before,
            focus_after,
            released_after,
            settle,
            frame,
            input_ms,
            observation_failures,
            opened_windows,
        })
    }
}

fn inject(
    injector: &mut Injector<'_>,
    action: &InputAction,
    pointer: ScreenPoint,
    interrupt: Option<&crate::settle::Interrupt>,
) -> Result<(), X11Error> {
    match action {
        InputAction::Click {
            at,
            button,
            modifiers,
        } => injector.click(*at, *button, modifiers, 1)?,
        InputAction::DoubleClick {
            at,
            button,
            modifiers,
        } => injector.click(*at, *button, modifiers, 2)?,
        InputAction::Drag {
            path,
            button,
            duration_ms,
            modifiers,
        } => injector.drag(path, *button, *duration_ms, modifiers)?,
        InputAction::Move { to, duration_ms } => injector.move_to(pointer, *to, *duration_ms)?,
        InputAction::Scroll { dx, dy, modifiers } => {
            injector.scroll(pointer, *dx, *dy, modifiers)?
        }
        InputAction::Key { keys } => injector.chord(keys)?,
        InputAction::Type { text } => injector.type_text(text)?,
        InputAction::Wait { milliseconds } => wait(
            std::time::Duration::from_millis(u64::from(*milliseconds)),
            interrupt,
        ),
        // Sent by `semantic_input`, never through the injector.
        InputAction::Done | InputAction::AxPress { .. } | InputAction::AxSetText { .. } => {}
    }
    if injector.sent_any() {
        injector.sync()?;
    }
    Ok(())
}

/// How often a `wait` step looks for a Stop.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// A `wait` step: sleeps `duration`, ending within [`WAIT_POLL`] once a Stop (or a mode or
/// owner change) advanced the control generation past the step's (`interrupt`). It sends no
/// input either way; the settle wait after it then ends `interrupted` too.
fn wait(duration: std::time::Duration, interrupt: Option<&crate::settle::Interrupt>) {
    let end = Instant::now() + duration;
    loop {
        let now = Instant::now();
        if now >= end || interrupt.is_some_and(crate::settle::Interrupt::requested) {
            return;
        }
        std::thread::sleep((end - now).min(WAIT_POLL));
    }
}
