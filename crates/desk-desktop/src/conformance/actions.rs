//! The action cases: every action type's events, settle and held input ([`check_actions`]),
//! the refusals before input ([`check_rejections`]), and shutdown ([`check_shutdown`]).

use desk_contract::desktop::ActionOutcome;
use desk_contract::events::InputEventKind;
use desk_contract::{
    DisplaySize, InputAction, SettleOutcome, SettlePolicy, SettleReport, SettleRule,
};

use super::cases::{Case, action_cases, rejected_cases};
use super::check::{Failure, Witness, delivered, fail};
use super::report::{self, Report};
use crate::backend::DesktopBackend;
use crate::error::BackendError;

/// How far past `max_ms` a real settle wait may end (the last sample and its capture).
const SETTLE_SLACK_MS: u64 = 1_500;

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
        SettleOutcome::Stable => report.rule.is_app_idle() || report.rule == SettleRule::QuietTimer,
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

pub(super) fn check_outcome(
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

/// Runs every case of [`action_cases`] on a backend with its app started, checking events,
/// settle, held input and that the desktop received input exactly for the injecting cases.
pub fn check_actions(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    witness: &mut dyn Witness,
    report: &mut Report,
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
    report.pass(report::ACTIONS);
    let released = backend
        .release_held()
        .or_else(|error| fail(report::RELEASE_HELD, error.to_string()))?;
    if !released.is_empty() {
        return fail(report::RELEASE_HELD, format!("released {released:?}"));
    }
    let facts = backend
        .facts()
        .or_else(|error| fail(report::RELEASE_HELD, format!("facts failed: {error}")))?;
    if !facts.held.is_empty() {
        return fail(report::RELEASE_HELD, format!("held: {:?}", facts.held));
    }
    report.pass(report::RELEASE_HELD);
    Ok(())
}

/// Every case of [`rejected_cases`] fails with `Rejected` before any input, and the desktop
/// still executes a click afterwards.
pub fn check_rejections(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    witness: &mut dyn Witness,
    report: &mut Report,
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
    check_first_case(backend, policy, "after the rejections")?;
    report.pass(report::REJECTIONS);
    Ok(())
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
    report: &mut Report,
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
    report.pass(report::SHUTDOWN);
    Ok(())
}
