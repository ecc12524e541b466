//! The desktop conformance suite: one table of cases that every [`DesktopBackend`] must pass,
//! so that broker tests run on [`crate::FakeDesktop`] say something about the real desktop.
//!
//! `FakeDesktop` runs it in desk-desktop's own tests on every `cargo test`; `LocalDesktop` runs
//! the same functions on Xvfb with the probe window (deskbroker's `tests/it/conformance.rs`,
//! which needs the `deskbroker-worker` binary). What is checked:
//! - every action type produces exactly the expected [`InputEventKind`]s, in order, and the
//!   desktop really receives input for it (a [`Witness`] counts what arrived);
//! - the settle rule of [`SettlePolicy`]: `post_action_visual_stable` only when `stable`, a
//!   stable by the quiet-time rule not before the quiet time, stable by the idle rule
//!   (`app_idle`, a real desktop's) at any time, a give-up (`max_wait`) not before `max_ms`,
//!   `done` skipped, and the rule consistent with the outcome;
//! - held input is released: nothing held after any action;
//! - bounds: an action outside the display is refused before any input (`Rejected`), injects
//!   nothing and leaves the desktop usable;
//! - shutdown is idempotent and refuses every later operation without input;
//! - detach and reattach, where a backend supports it, keep the desktop working.
//!
//! The cases run in table order on one desktop: a scroll happens at the pointer the previous
//! case left. Failures are reported as [`Failure`] values naming the case, never panics.

use std::fmt;

use desk_contract::desktop::ActionOutcome;
use desk_contract::events::InputEventKind;
use desk_contract::{
    DisplaySize, InputAction, SettleOutcome, SettlePolicy, SettleReport, SettleRule,
};

mod cases;

pub(crate) use cases::rejected_cases;
pub use cases::{Case, action_cases};

use crate::backend::DesktopBackend;
use crate::error::BackendError;

/// How far past `max_ms` a real settle wait may end (the last sample and its capture).
const SETTLE_SLACK_MS: u64 = 1_500;

/// A check that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The check or case.
    pub check: String,
    /// What was seen instead.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.detail)
    }
}

fn fail<T>(check: &str, detail: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        check: check.to_string(),
        detail: detail.into(),
    })
}

/// What the desktop really received, independent of what the backend reports.
pub trait Witness {
    /// How many inputs the desktop has received so far (in the witness's own unit: recorded
    /// actions for the fake, X events for the probe window). Waits for delivery to finish.
    fn delivered(&mut self) -> Result<usize, String>;
}

/// Any closure counting deliveries is a witness.
impl<F: FnMut() -> Result<usize, String>> Witness for F {
    fn delivered(&mut self) -> Result<usize, String> {
        self()
    }
}

/// Checks one settle report against `policy` for `action`.
pub fn check_settle(
    name: &str,
    action: &InputAction,
    policy: SettlePolicy,
    report: &SettleReport,
) -> Result<(), Failure> {
    let check = format!("{name}: settle");
    if report.post_action_visual_stable != (report.outcome == SettleOutcome::Stable) {
        return fail(&check, format!("stable flag disagrees with {report:?}"));
    }
    if matches!(action, InputAction::Done) {
        if report.outcome != SettleOutcome::Skipped
            || report.wait_ms != 0
            || report.rule != SettleRule::NotSettled
        {
            return fail(&check, format!("done must skip settling, got {report:?}"));
        }
        return Ok(());
    }
    let quiet = policy
        .quiet_after_change_ms
        .min(policy.quiet_without_change_ms);
    let max = u64::from(policy.max_ms);
    let rule_fits = match report.outcome {
        SettleOutcome::Stable => {
            matches!(
                report.rule,
                SettleRule::AppIdle | SettleRule::AppIdleUndatedTimer | SettleRule::QuietTimer
            )
        }
        SettleOutcome::StillChanging => report.rule == SettleRule::MaxWait,
        _ => report.rule == SettleRule::NotSettled,
    };
    if !rule_fits {
        return fail(
            &check,
            format!("rule disagrees with the outcome: {report:?}"),
        );
    }
    match report.outcome {
        SettleOutcome::Stable
            if report.rule == SettleRule::QuietTimer && report.wait_ms < u64::from(quiet) =>
        {
            fail(
                &check,
                format!("stable after {} ms, before the quiet time", report.wait_ms),
            )
        }
        SettleOutcome::StillChanging if report.wait_ms < max => fail(
            &check,
            format!("gave up after {} ms, before max_ms", report.wait_ms),
        ),
        SettleOutcome::Stable | SettleOutcome::StillChanging => {
            if report.wait_ms > max + SETTLE_SLACK_MS || report.n_samples == 0 {
                return fail(&check, format!("implausible wait {report:?}"));
            }
            Ok(())
        }
        other => fail(&check, format!("unexpected outcome {other:?}")),
    }
}

fn check_outcome(
    case: &Case,
    policy: SettlePolicy,
    display: DisplaySize,
    outcome: &ActionOutcome,
) -> Result<(), Failure> {
    let events: Vec<&InputEventKind> = outcome.events.iter().map(|event| &event.kind).collect();
    let expected: Vec<&InputEventKind> = case.expected.iter().collect();
    if events != expected {
        return fail(
            case.name,
            format!("events {events:?}, expected {expected:?}"),
        );
    }
    check_settle(case.name, &case.action, policy, &outcome.settle)?;
    if !outcome.released_after.is_empty() {
        return fail(
            case.name,
            format!("left held: {:?}", outcome.released_after),
        );
    }
    if !outcome.observation_failures.is_empty() {
        return fail(
            case.name,
            format!("observations failed: {:?}", outcome.observation_failures),
        );
    }
    let Some(focus_after) = &outcome.focus_after else {
        return fail(case.name, "no focus after the action");
    };
    if let Some(at) = case.pointer_after
        && focus_after.pointer != at
    {
        let pointer = focus_after.pointer;
        return fail(
            case.name,
            format!("pointer at {pointer:?}, expected {at:?}"),
        );
    }
    let Some(frame) = &outcome.frame else {
        return fail(case.name, "no frame after the action");
    };
    if (frame.width, frame.height) != (display.width, display.height) {
        return fail(case.name, format!("frame {}x{}", frame.width, frame.height));
    }
    if desk_contract::sha256_hex(&frame.png) != frame.sha256 {
        return fail(case.name, "frame sha256 does not match its PNG");
    }
    Ok(())
}

fn delivered(witness: &mut dyn Witness, check: &str) -> Result<usize, Failure> {
    witness.delivered().or_else(|error| fail(check, error))
}

/// Runs every case of [`action_cases`] on a backend with its app started, checking events,
/// settle, held input and that the desktop received input exactly for the injecting cases.
pub fn check_actions(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    witness: &mut dyn Witness,
) -> Result<(), Failure> {
    let display = backend.display_size();
    for case in action_cases(display) {
        let before = delivered(witness, case.name)?;
        let outcome = backend
            .execute(&case.action, policy)
            .or_else(|error| fail(case.name, format!("execute failed: {error}")))?;
        check_outcome(&case, policy, display, &outcome)?;
        let after = delivered(witness, case.name)?;
        if case.action.injects_input() != (after > before) {
            return fail(
                case.name,
                format!(
                    "the desktop received {} inputs",
                    after.saturating_sub(before)
                ),
            );
        }
        let facts = backend
            .facts()
            .or_else(|error| fail(case.name, format!("facts failed: {error}")))?;
        if !facts.held.is_empty() {
            return fail(
                case.name,
                format!("held after the action: {:?}", facts.held),
            );
        }
    }
    let released = backend
        .release_held()
        .or_else(|error| fail("release_held", error.to_string()))?;
    if !released.is_empty() {
        return fail("release_held", format!("released {released:?}"));
    }
    Ok(())
}

/// Every case of [`rejected_cases`] fails with `Rejected` before any input, and the desktop
/// still executes a click afterwards.
pub fn check_rejections(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    witness: &mut dyn Witness,
) -> Result<(), Failure> {
    let display = backend.display_size();
    for (name, action) in rejected_cases(display) {
        let before = delivered(witness, name)?;
        match backend.execute(&action, policy) {
            Err(BackendError::Rejected(_)) => {}
            Err(other) => return fail(name, format!("expected a rejection, got {other}")),
            Ok(_) => return fail(name, "executed an action outside the display"),
        }
        let after = delivered(witness, name)?;
        if after != before {
            return fail(name, format!("{} inputs arrived", after - before));
        }
    }
    check_first_case(backend, policy, "after the rejections")
}

/// Runs the first case (a click), for use after a disturbance such as a reattach.
pub fn check_first_case(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    when: &str,
) -> Result<(), Failure> {
    let display = backend.display_size();
    let Some(case) = action_cases(display).into_iter().next() else {
        return fail(when, "no cases");
    };
    let outcome = backend
        .execute(&case.action, policy)
        .or_else(|error| fail(when, format!("execute failed: {error}")))?;
    check_outcome(&case, policy, display, &outcome)
}

/// Shuts the backend down twice (both succeed), then checks that every operation is refused
/// with `ShutDown`, injecting nothing, and that no process is left.
pub fn check_shutdown(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    witness: &mut dyn Witness,
) -> Result<(), Failure> {
    for attempt in ["first shutdown", "second shutdown"] {
        backend
            .shutdown()
            .or_else(|error| fail(attempt, error.to_string()))?;
    }
    let before = delivered(witness, "after shutdown")?;
    let click = action_cases(backend.display_size())
        .into_iter()
        .map(|case| case.action)
        .next();
    if let Some(action) = click {
        match backend.execute(&action, policy) {
            Err(BackendError::ShutDown) => {}
            other => return fail("execute after shutdown", format!("{other:?}")),
        }
    }
    match backend.capture() {
        Err(BackendError::ShutDown) => {}
        other => return fail("capture after shutdown", format!("{:?}", other.map(|_| ()))),
    }
    if delivered(witness, "after shutdown")? != before {
        return fail("after shutdown", "input arrived");
    }
    if !backend.process_ids().is_empty() {
        return fail(
            "after shutdown",
            format!("{:?} left", backend.process_ids()),
        );
    }
    Ok(())
}
