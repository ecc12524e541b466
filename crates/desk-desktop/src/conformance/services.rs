//! The suite's cases beyond one action: Stop through the backend's control (`execute_for`),
//! the clipboard (round trip, read cap, refusal where there is none), detaching, and stopping
//! the app and starting one again. Each case the backend's declared capabilities rule out is
//! skipped with the reason, or, where the trait says what such a backend does (no clipboard:
//! refusals), checked for that instead.

use std::time::{Duration, Instant};

use desk_contract::{InputAction, SettleOutcome, SettlePolicy, SettleRule};

use super::actions::{check_first_case, check_outcome};
use super::cases::action_cases;
use super::check::{Failure, Witness, delivered, fail};
use super::observe::{check_frame, check_handoff};
use super::report::{
    CLIPBOARD_READ_CAP, CLIPBOARD_ROUND_TRIP, CLIPBOARD_UNAVAILABLE, DETACH, EXECUTE_FOR_CURRENT,
    Report, STOP_APP, STOP_INTERRUPTS,
};
use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;

/// The generation the Stop cases run at; the Stop advances the control to one past it.
const GENERATION: u64 = 1;
/// How long the interrupted `wait` asks to sleep: the Stop must end it well before.
const INTERRUPTED_WAIT_MS: u32 = 5_000;

/// Stop through the backend's control: with a Stop past its generation, an `execute_for` of a
/// long `wait` ends its settle `interrupted` at once (a backend that declares `interrupt`; one
/// that does not settles as usual and the case is skipped); at the current generation the
/// first action case executes and settles as `execute` does. No input for the wait.
pub fn check_stop(
    backend: &mut dyn DesktopBackend,
    policy: SettlePolicy,
    witness: &mut dyn Witness,
    report: &mut Report,
) -> Result<(), Failure> {
    let control = backend.control();
    control
        .signal_stop(GENERATION + 1)
        .or_else(|error| fail(STOP_INTERRUPTS, format!("signal_stop failed: {error}")))?;
    let wait = InputAction::Wait {
        milliseconds: INTERRUPTED_WAIT_MS,
    };
    let before = delivered(witness, STOP_INTERRUPTS)?;
    let started = Instant::now();
    let outcome = backend
        .execute_for(&wait, policy, GENERATION)
        .or_else(|error| fail(STOP_INTERRUPTS, format!("execute_for failed: {error}")))?;
    let elapsed = started.elapsed();
    if delivered(witness, STOP_INTERRUPTS)? != before || !outcome.events.is_empty() {
        return fail(STOP_INTERRUPTS, "a wait delivered input");
    }
    let settle = &outcome.settle;
    if backend.capabilities().interrupt {
        let cut = elapsed < Duration::from_millis(u64::from(INTERRUPTED_WAIT_MS));
        if settle.outcome != SettleOutcome::Interrupted
            || settle.rule != SettleRule::NotSettled
            || settle.post_action_visual_stable
            || !cut
        {
            return fail(
                STOP_INTERRUPTS,
                format!("after {} ms: {settle:?}", elapsed.as_millis()),
            );
        }
        match &outcome.frame {
            Some(frame) => check_frame(STOP_INTERRUPTS, backend, frame)?,
            None => return fail(STOP_INTERRUPTS, "no frame after the interrupted wait"),
        }
        report.pass(STOP_INTERRUPTS);
    } else {
        if settle.outcome == SettleOutcome::Interrupted {
            return fail(
                STOP_INTERRUPTS,
                format!("declares no interrupt but was interrupted: {settle:?}"),
            );
        }
        report.skip(
            STOP_INTERRUPTS,
            "the backend declares no interrupt (its settle ran in full)",
        );
    }

    let display = backend.display_size();
    let Some(case) = action_cases(display).into_iter().next() else {
        return fail(EXECUTE_FOR_CURRENT, "no cases");
    };
    let before = delivered(witness, EXECUTE_FOR_CURRENT)?;
    let outcome = backend
        .execute_for(&case.action, policy, GENERATION + 1)
        .or_else(|error| fail(EXECUTE_FOR_CURRENT, format!("execute_for failed: {error}")))?;
    check_outcome(&case, policy, display, &outcome)
        .or_else(|failure| fail(EXECUTE_FOR_CURRENT, failure.to_string()))?;
    if delivered(witness, EXECUTE_FOR_CURRENT)? <= before {
        return fail(EXECUTE_FOR_CURRENT, "the click did not reach the desktop");
    }
    report.pass(EXECUTE_FOR_CURRENT);
    Ok(())
}

/// Text with a character of three UTF-8 bytes, so a read cap can fall inside it.
const CLIPBOARD_TEXT: &str = "conformance \u{2713} clipboard";

/// The clipboard, as the backend declares it. With one: a write is read back whole, and a read
/// capped inside a character returns the prefix before it, `truncated`, with the whole text's
/// length. Without one: both directions refuse with `clipboard_unavailable`. Neither sends
/// input.
pub fn check_clipboard(
    backend: &mut dyn DesktopBackend,
    witness: &mut dyn Witness,
    report: &mut Report,
) -> Result<(), Failure> {
    let before = delivered(witness, CLIPBOARD_ROUND_TRIP)?;
    let length = CLIPBOARD_TEXT.len() as u64;
    if backend.capabilities().clipboard {
        let written = backend
            .clipboard_write(CLIPBOARD_TEXT)
            .or_else(|error| fail(CLIPBOARD_ROUND_TRIP, format!("write failed: {error}")))?;
        let read = backend
            .clipboard_read(1024)
            .or_else(|error| fail(CLIPBOARD_ROUND_TRIP, format!("read failed: {error}")))?;
        if written.byte_length != length
            || read.text != CLIPBOARD_TEXT
            || read.truncated
            || read.byte_length != length
        {
            return fail(
                CLIPBOARD_ROUND_TRIP,
                format!("wrote {written:?}, read {read:?}"),
            );
        }
        report.pass(CLIPBOARD_ROUND_TRIP);

        let Some(mark) = CLIPBOARD_TEXT.find('\u{2713}') else {
            return fail(CLIPBOARD_READ_CAP, "no mark in the text");
        };
        let cap = mark as u64 + 1;
        let read = backend
            .clipboard_read(cap)
            .or_else(|error| fail(CLIPBOARD_READ_CAP, format!("read failed: {error}")))?;
        if read.text != CLIPBOARD_TEXT[..mark] || !read.truncated || read.byte_length != length {
            return fail(CLIPBOARD_READ_CAP, format!("cap {cap}: {read:?}"));
        }
        report.pass(CLIPBOARD_READ_CAP);
        report.skip(CLIPBOARD_UNAVAILABLE, "the backend declares a clipboard");
    } else {
        let reason = "the backend declares no clipboard";
        report.skip(CLIPBOARD_ROUND_TRIP, reason);
        report.skip(CLIPBOARD_READ_CAP, reason);
        let read = backend.clipboard_read(1024);
        let write = backend.clipboard_write(CLIPBOARD_TEXT);
        if !matches!(read, Err(BackendError::ClipboardUnavailable(_)))
            || !matches!(write, Err(BackendError::ClipboardUnavailable(_)))
        {
            return fail(
                CLIPBOARD_UNAVAILABLE,
                format!("read {read:?}, write {write:?}"),
            );
        }
        report.pass(CLIPBOARD_UNAVAILABLE);
    }
    if delivered(witness, CLIPBOARD_ROUND_TRIP)? != before {
        return fail(CLIPBOARD_ROUND_TRIP, "the clipboard delivered input");
    }
    Ok(())
}

/// Detaches the backend. One that declares `detach` keeps its desktop running: `reattach`
/// (the runner's way back to it, e.g. its factory's) returns a backend with the same processes
/// whose first action case passes. One that does not shuts down: every later operation is
/// refused with `ShutDown`, and `reattach` is not called. Returns the backend to go on with.
pub fn check_detach(
    mut backend: Box<dyn DesktopBackend>,
    policy: SettlePolicy,
    reattach: impl FnOnce() -> Result<Box<dyn DesktopBackend>, String>,
    report: &mut Report,
) -> Result<Box<dyn DesktopBackend>, Failure> {
    let pids = backend.process_ids();
    if !backend.capabilities().detach {
        backend.detach();
        match backend.capture() {
            Err(BackendError::ShutDown) => {}
            other => {
                return fail(
                    DETACH,
                    format!("declares no detach but answered {:?}", other.map(|_| ())),
                );
            }
        }
        report.pass(DETACH);
        return Ok(backend);
    }
    backend.detach();
    drop(backend);
    let mut backend = reattach().or_else(|error| fail(DETACH, error))?;
    if backend.process_ids() != pids {
        return fail(
            DETACH,
            format!(
                "processes {:?} after, {pids:?} before",
                backend.process_ids()
            ),
        );
    }
    check_first_case(backend.as_mut(), policy, DETACH)?;
    report.pass(DETACH);
    Ok(backend)
}

/// Stops the app, leaving the display running (a capture still works), then starts the app
/// of `launch` (the same or another) and checks its handoff.
pub fn check_stop_app(
    backend: &mut dyn DesktopBackend,
    launch: &AppLaunch,
    report: &mut Report,
) -> Result<(), Failure> {
    backend
        .stop_app()
        .or_else(|error| fail(STOP_APP, format!("stop_app failed: {error}")))?;
    let frame = backend
        .capture()
        .or_else(|error| fail(STOP_APP, format!("capture without the app failed: {error}")))?;
    check_frame(STOP_APP, backend, &frame)?;
    check_handoff(backend, launch, STOP_APP, report)
}
