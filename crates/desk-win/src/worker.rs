//! The dispatch of each operation onto a [`Platform`]; the protocol loop is the shared one of
//! `desk_worker_io` (stdin/stdout here, TCP with mutual TLS in `win32::main`'s `--listen`).
//!
//! Invariants: one response per request line, in order, with the frame's PNG as the binary
//! attachment the line announces; an unparseable line is answered with id 0 and
//! `invalid_request`; nothing stays held after an `execute` (success or failure) or after the
//! client goes away; an operation this slice does not implement answers an explicit error.

use std::io::{BufRead, Write};

use desk_contract::desktop::{ActionOutcome, observation};
use desk_contract::events::InputEvent;
use desk_contract::worker::{
    HelloInfo, WORKER_PROTOCOL_VERSION, WorkerFailure, WorkerFailureKind, WorkerOp, WorkerReply,
    WorkerValue,
};
use desk_contract::{DisplaySize, InputAction, SettleOutcome, SettlePolicy};

use crate::encode::to_frame;
use crate::error::WinError;
use crate::plan::{PlanRefusal, plan};
use crate::platform::{Platform, wall_clock_ms};
use crate::settle::{not_settled, settle};

mod destination;
mod handoff;
mod held;
mod observe;

pub use desk_worker_io::Ended;

/// The app the worker serves: its process and, after `await_app`, its main window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AppBinding {
    pub(crate) pid: u32,
    pub(crate) main: Option<u32>,
}

/// One worker over one platform.
pub struct Worker<P: Platform> {
    platform: P,
    app: Option<AppBinding>,
}

fn failure(kind: WorkerFailureKind, message: impl Into<String>) -> WorkerFailure {
    WorkerFailure {
        kind,
        message: message.into(),
    }
}

fn desktop_failed(error: WinError) -> WorkerFailure {
    failure(WorkerFailureKind::DesktopFailed, error.to_string())
}

impl<P: Platform> Worker<P> {
    /// A worker with no app yet; `app_pid` binds a process it launched itself.
    pub fn new(platform: P, app_pid: Option<u32>) -> Worker<P> {
        Worker {
            platform,
            app: app_pid.map(|pid| AppBinding { pid, main: None }),
        }
    }

    /// The platform (tests inspect their fake through it).
    pub fn platform(&mut self) -> &mut P {
        &mut self.platform
    }

    /// Serves requests from `reader` until EOF or `shutdown` (the shared loop,
    /// `desk_worker_io::serve_connection`); held input is released when the client goes away.
    pub fn serve(&mut self, reader: impl BufRead, writer: impl Write) -> Result<Ended, WinError> {
        let stream = desk_worker_io::Duplex { reader, writer };
        let ended = desk_worker_io::serve_connection(stream, self, None)?;
        if let Err(error) = self.release_held() {
            eprintln!("desk-win: failed to release held input at the end: {error}");
        }
        Ok(ended)
    }

    /// Runs one operation.
    pub fn handle(&mut self, op: WorkerOp) -> WorkerReply {
        let result = match op {
            WorkerOp::Hello => self.hello(),
            WorkerOp::Capture => self.capture().map(WorkerValue::Frame),
            WorkerOp::Execute { action, settle, .. } => self
                .execute(&action, &settle)
                .map(|outcome| WorkerValue::Outcome(Box::new(outcome))),
            WorkerOp::AwaitApp { pid, rules, settle } => self
                .await_app(pid, &rules, &settle)
                .map(|handoff| WorkerValue::Handoff(Box::new(handoff))),
            WorkerOp::Facts => self.facts().map(WorkerValue::Facts).map_err(desktop_failed),
            WorkerOp::ReleaseHeld => self
                .release_held()
                .map(|released| WorkerValue::Released { released })
                .map_err(|error| failure(WorkerFailureKind::OutcomeUnknown, error.to_string())),
            WorkerOp::Windows => self
                .windows()
                .map(|windows| WorkerValue::Windows { windows }),
            WorkerOp::ClipboardRead { .. } | WorkerOp::ClipboardWrite { .. } => Err(failure(
                WorkerFailureKind::ClipboardUnavailable,
                "the clipboard is not available on Windows: desk-win does not implement it yet; \
                 nothing was read or written",
            )),
            WorkerOp::Accessibility { .. } => Err(failure(
                WorkerFailureKind::AxUnavailable,
                "accessibility is not available on Windows: desk-win does not implement UI \
                 Automation yet; nothing was read",
            )),
            WorkerOp::Shutdown => self
                .release_held()
                .map(|_| WorkerValue::Bye)
                .map_err(|error| failure(WorkerFailureKind::OutcomeUnknown, error.to_string())),
        };
        match result {
            Ok(value) => WorkerReply::Ok(value),
            Err(failure) => WorkerReply::Error(failure),
        }
    }

    fn display(&mut self) -> Result<DisplaySize, WinError> {
        let screen = self.platform.screen()?;
        Ok(DisplaySize {
            width: screen.width,
            height: screen.height,
        })
    }

    fn hello(&mut self) -> Result<WorkerValue, WorkerFailure> {
        let display = self.display().map_err(desktop_failed)?;
        Ok(WorkerValue::Hello(HelloInfo {
            protocol_version: WORKER_PROTOCOL_VERSION,
            display,
            capture_path: self.platform.capture_path().to_string(),
            server_vendor: self.platform.vendor(),
            instance_id: None,
            app_pid: None,
        }))
    }

    fn capture(&mut self) -> Result<desk_contract::desktop::Frame, WorkerFailure> {
        let frame = self.platform.capture().map_err(desktop_failed)?;
        let maximized = self.app_maximized();
        to_frame(&frame, wall_clock_ms(), maximized).map_err(desktop_failed)
    }

    /// Plans, sends, releases, settles and observes one action.
    pub fn execute(
        &mut self,
        action: &InputAction,
        policy: &SettlePolicy,
    ) -> Result<ActionOutcome, WorkerFailure> {
        let display = self.display().map_err(desktop_failed)?;
        let focus_before = self.focus().map_err(desktop_failed)?;
        let steps = match plan(action, display, focus_before.pointer) {
            Ok(steps) => steps,
            Err(PlanRefusal::Invalid(message)) => {
                return Err(failure(WorkerFailureKind::InvalidRequest, message));
            }
            Err(PlanRefusal::Semantic) => {
                return Err(failure(
                    WorkerFailureKind::AxUnavailable,
                    "semantic steps are not available on Windows: they need UI Automation, \
                     which desk-win does not implement yet; nothing was sent",
                ));
            }
        };
        if action.injects_input() {
            self.check_destination(action, focus_before.pointer)?;
        }
        let windows_before = self.app_window_ids()?;
        let before = self.platform.capture().map_err(desktop_failed)?;
        let input_started = self.platform.now_ms();
        let mut events = Vec::new();
        for (step_idx, planned) in steps.iter().enumerate() {
            if let Err(error) = self.platform.send(&planned.step) {
                let released = self.release_after_failure(&steps[..step_idx]);
                let kind = if step_idx == 0 {
                    WorkerFailureKind::DesktopFailed
                } else {
                    WorkerFailureKind::OutcomeUnknown
                };
                return Err(failure(
                    kind,
                    format!("{error} (step {step_idx}; released {released:?})"),
                ));
            }
            if let Some(kind) = &planned.event {
                events.push(InputEvent {
                    timestamp_ms: wall_clock_ms(),
                    kind: kind.clone(),
                });
            }
        }
        let released_after = self.release_held().map_err(|error| {
            failure(
                WorkerFailureKind::OutcomeUnknown,
                format!("release after input: {error}"),
            )
        })?;
        let input_ms = self.platform.now_ms().saturating_sub(input_started);
        if let InputAction::Wait { milliseconds } = action {
            self.platform.sleep_ms(u64::from(*milliseconds));
        }
        let mut observation_failures = Vec::new();
        let (frame, settle_report) = if matches!(action, InputAction::Done) {
            let frame = self.platform.capture().ok();
            (frame, not_settled(SettleOutcome::Skipped))
        } else {
            match settle(&mut self.platform, &before, policy) {
                Ok((frame, report)) => (Some(frame), report),
                Err(_) => {
                    observation_failures.push(observation::CAPTURE.to_string());
                    (None, not_settled(SettleOutcome::Unavailable))
                }
            }
        };
        let maximized = self.app_maximized();
        let frame = match frame.map(|frame| to_frame(&frame, wall_clock_ms(), maximized)) {
            Some(Ok(frame)) => Some(frame),
            Some(Err(_)) => {
                observation_failures.push(observation::ENCODE.to_string());
                None
            }
            None => None,
        };
        let focus_after = match self.focus() {
            Ok(focus) => Some(focus),
            Err(_) => {
                observation_failures.push(observation::FOCUS.to_string());
                None
            }
        };
        let mut outcome = ActionOutcome {
            events,
            focus_before,
            focus_after,
            released_after,
            settle: settle_report,
            frame,
            input_ms,
            observation_failures,
            opened_windows: Vec::new(),
        };
        self.note_opened_windows(&windows_before, &mut outcome);
        Ok(outcome)
    }
}

impl<P: Platform> desk_worker_io::Handler for Worker<P> {
    fn handle(&mut self, op: WorkerOp) -> WorkerReply {
        Worker::handle(self, op)
    }

    fn disconnected(&mut self) {
        if let Err(error) = self.release_held() {
            eprintln!("desk-win: failed to release held input after a disconnect: {error}");
        }
    }
}
