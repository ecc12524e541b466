//! `FakeDesktop`: an in-process [`DesktopBackend`] for fast tests of broker logic.
//!
//! It launches nothing. `start_app` hands off a maximized synthetic app window and a
//! deterministic PNG; `execute` records every [`InputAction`] it receives in a shared list (see
//! [`FakeHandle`]) and answers as the real worker does (`fake/input.rs`, held to it by
//! [`crate::conformance`]): the same input events in the same order, points outside the
//! display refused before input, a frame whose pixels change after every action (the fake
//! app redraws once, a wait included; `done` changes nothing), and the settle rule of the
//! given `SettlePolicy` on a virtual clock (reported, not slept).
//!
//! Scripted behaviour, set through a [`FakeHandle`] even after the backend moved into a broker:
//! - fail the nth `execute` before any input ([`FakeFailure::BeforeInput`], nothing recorded) or
//!   after input was sent ([`FakeFailure::OutcomeUnknown`], the input is recorded);
//! - hand off an app window that is not maximized;
//! - report keys or buttons found held after an action (and released);
//! - put a foreign (non-app) window in front, as a save dialog would be;
//! - make the screen never settle (every action gives up at `max_ms`, `still_changing`);
//! - simulate the app saving (`fake/save.rs`): on a `ctrl+s` chord, append a line to the
//!   attempt file (the last element of the launch argv) or to an explicit path, or write a
//!   fixture DXF drawing over the attempt file (`fake_dxf`, used by `deskbroker serve --backend
//!   fake`);
//! - a clipboard (read within the caller's cap, written after the caller's checks), which can
//!   fail its writes or be turned off (`clipboard_unavailable`);
//! - the app's windows (`fake/observe.rs`), off by default: its main window and the dialogs a
//!   test opens;
//! - an accessibility tree (`fake/observe.rs`), off by default like an app without AT-SPI;
//!   semantic steps are refused either way;
//! - Stop: after a `signal_stop` on its control ([`FakeHandle::control`], the
//!   [`crate::RecordedControl`] `control()` hands out) past an `execute_for`'s generation, its
//!   settle wait ends `interrupted` at the first sample (the input is delivered as usual).
//!
//! Not simulated: processes (`process_ids` is empty, `workspace_facts` `None`) and detaching
//! (the fake cannot outlive its process: `detach` shuts it down).
//!
//! Invariant: an action is recorded if and only if the fake pretends its input reached the
//! desktop, so "recorded zero inputs" means "nothing was injected".

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use desk_contract::a11y::{AxLimits, AxTree};
use desk_contract::clipboard::{ClipboardText, ClipboardWritten};
use desk_contract::desktop::{ActionOutcome, AppWindowInfo, DesktopFacts, Frame, Handoff};
use desk_contract::{
    DisplaySize, InputAction, ScreenPoint, SettleOutcome, SettlePolicy, SettleReport,
};

mod frame;
mod handle;
mod input;
mod observe;
mod save;

pub use handle::{FakeFailure, FakeHandle, FakeSave};

use crate::backend::{AppLaunch, DesktopBackend};
use crate::control::{BackendCapabilities, SessionControl};
use crate::error::BackendError;

/// What a fake desktop declares with its script's defaults: a clipboard and Stop; no
/// accessibility and no windows (until a test turns them on, [`FakeHandle::set_accessible`],
/// [`FakeHandle::set_lists_windows`]), no lease deadline of its own, no detaching. (The fake
/// factory's document, `FakeFactory::capabilities`, names the clipboard alone.)
pub const CAPABILITIES: BackendCapabilities = BackendCapabilities {
    clipboard: true,
    accessibility: false,
    windows: false,
    interrupt: true,
    lease_deadline: false,
    detach: false,
};

/// The in-process fake desktop. See the module documentation.
#[derive(Debug)]
pub struct FakeDesktop {
    display: DisplaySize,
    handle: FakeHandle,
    n_executes: u64,
    /// How often the screen changed; the frame's pixels depend on it.
    n_changes: u64,
    n_frames: u64,
    launch: Option<AppLaunch>,
    pointer: ScreenPoint,
    shut_down: bool,
}

const APP_WINDOW_ID: u32 = 0x40_0001;
const FOREIGN_WINDOW_ID: u32 = 0x60_0001;

fn now_ms() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

/// Lowercase hex SHA-256, as frames carry it.
impl FakeDesktop {
    /// A fake desktop of the given size with no app running.
    pub fn new(display: DisplaySize) -> FakeDesktop {
        FakeDesktop {
            display,
            handle: FakeHandle::default(),
            n_executes: 0,
            n_changes: 0,
            n_frames: 0,
            launch: None,
            pointer: ScreenPoint { x: 0, y: 0 },
            shut_down: false,
        }
    }

    /// A fake desktop sharing an existing handle's recorded inputs and script.
    pub fn with_handle(display: DisplaySize, handle: FakeHandle) -> FakeDesktop {
        FakeDesktop {
            handle,
            ..FakeDesktop::new(display)
        }
    }

    /// A handle that stays valid after the backend moved elsewhere.
    pub fn handle(&self) -> FakeHandle {
        self.handle.clone()
    }

    fn ensure_running(&self) -> Result<(), BackendError> {
        if self.shut_down {
            return Err(BackendError::ShutDown);
        }
        if self.launch.is_none() {
            return Err(BackendError::DesktopFailed("no app is running".to_string()));
        }
        Ok(())
    }

    /// `execute`, interrupted when `generation` is older than the last Stop's: the input is
    /// delivered as usual and the settle wait ends at its first sample, `interrupted`.
    fn execute_at(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
        generation: Option<u64>,
    ) -> Result<ActionOutcome, BackendError> {
        self.ensure_running()?;
        input::check_bounds(self.display, action)?;
        self.n_executes += 1;
        let (failure, never_settles, interrupted) = {
            let script = self.handle.lock();
            let failure = script
                .failures
                .iter()
                .find(|(nth, _)| *nth == self.n_executes)
                .map(|(_, how)| *how);
            let stopped = self.handle.control().stop_generation();
            let interrupted = generation.is_some_and(|generation| stopped > generation);
            (failure, script.never_settles, interrupted)
        };
        if failure == Some(FakeFailure::BeforeInput) {
            return Err(BackendError::DesktopFailed(format!(
                "scripted failure of execute {} before input",
                self.n_executes
            )));
        }
        let focus_before = self.focus();
        self.handle.lock().inputs.push(action.clone());
        if failure == Some(FakeFailure::OutcomeUnknown) {
            return Err(BackendError::OutcomeUnknown(format!(
                "scripted failure of execute {} after input",
                self.n_executes
            )));
        }
        let events = input::events_for(action, &mut self.pointer, now_ms());
        self.save_on_chord(action)?;
        // The fake app redraws once after every action (a wait included, as broker tests
        // expect a new frame for each); `done` is not settled and changes nothing.
        let changed = !matches!(action, InputAction::Done);
        if changed {
            self.n_changes += 1;
        }
        let frame = self.render()?;
        let changed_pixels = if changed {
            8 * u64::from(frame.width)
        } else {
            0
        };
        Ok(ActionOutcome {
            events,
            focus_before,
            focus_after: Some(self.focus()),
            released_after: std::mem::take(&mut self.handle.lock().held_after_next),
            settle: input::settle(
                action,
                settle,
                changed,
                never_settles,
                interrupted,
                changed_pixels,
            ),
            frame: Some(frame),
            input_ms: 0,
            observation_failures: Vec::new(),
            opened_windows: Vec::new(),
        })
    }
}

impl DesktopBackend for FakeDesktop {
    fn display_size(&self) -> DisplaySize {
        self.display
    }

    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        if self.shut_down {
            return Err(BackendError::ShutDown);
        }
        self.launch = Some(launch.clone());
        let maximized = !self.handle.lock().unmaximized_handoff;
        let frame = self.render()?;
        Ok(Handoff {
            window: self.app_window(maximized),
            frame: Frame {
                app_maximized: maximized,
                ..frame
            },
            dismissed_overlays: Vec::new(),
            elapsed_ms: 1,
            settle: SettleReport {
                outcome: SettleOutcome::Stable,
                wait_ms: 0,
                changed_pixels: 0,
                n_samples: 1,
                post_action_visual_stable: true,
                rule: desk_contract::settle::SettleRule::QuietTimer,
                validation: None,
            },
        })
    }

    /// The display runs without the app (after `stop_app`): only a shut-down fake refuses.
    fn capture(&mut self) -> Result<Frame, BackendError> {
        if self.shut_down {
            return Err(BackendError::ShutDown);
        }
        self.render()
    }

    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        self.execute_at(action, settle, None)
    }

    fn execute_for(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
        generation: u64,
    ) -> Result<ActionOutcome, BackendError> {
        self.execute_at(action, settle, Some(generation))
    }

    fn facts(&mut self) -> Result<DesktopFacts, BackendError> {
        if self.shut_down {
            return Err(BackendError::ShutDown);
        }
        Ok(DesktopFacts {
            display: self.display,
            focus: self.focus(),
            app_window: self.launch.as_ref().map(|_| self.app_window(true)),
            held: Vec::new(),
        })
    }

    fn release_held(&mut self) -> Result<Vec<String>, BackendError> {
        Ok(Vec::new())
    }

    fn stop_app(&mut self) -> Result<(), BackendError> {
        self.launch = None;
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), BackendError> {
        self.launch = None;
        self.shut_down = true;
        Ok(())
    }

    fn process_ids(&self) -> Vec<u32> {
        Vec::new()
    }

    fn clipboard_read(&mut self, max_output_bytes: u64) -> Result<ClipboardText, BackendError> {
        self.ensure_running()?;
        let mut script = self.handle.lock();
        if script.clipboard_unavailable {
            return Err(no_clipboard());
        }
        script.n_clipboard_ops += 1;
        let text = script.clipboard.clone().unwrap_or_default();
        Ok(desk_contract::clipboard::truncate(&text, max_output_bytes))
    }

    fn clipboard_write(&mut self, text: &str) -> Result<ClipboardWritten, BackendError> {
        self.ensure_running()?;
        desk_contract::clipboard::check_write(text)
            .map_err(|error| BackendError::Rejected(error.to_string()))?;
        let mut script = self.handle.lock();
        if script.clipboard_unavailable {
            return Err(no_clipboard());
        }
        script.n_clipboard_ops += 1;
        if script.clipboard_write_fails {
            return Err(BackendError::OutcomeUnknown(
                "scripted clipboard write failure".to_string(),
            ));
        }
        script.clipboard = Some(text.to_string());
        Ok(ClipboardWritten {
            byte_length: text.len() as u64,
        })
    }

    fn accessibility(&mut self, limits: AxLimits) -> Result<AxTree, BackendError> {
        self.ensure_running()?;
        let mut script = self.handle.lock();
        if !script.accessible {
            return Err(BackendError::AccessibilityUnavailable(
                "the fake app is not accessible (FakeHandle::set_accessible)".to_string(),
            ));
        }
        script.n_snapshots += 1;
        let id = format!("fake-{}", script.n_snapshots);
        Ok(observe::accessibility(
            self.app_window(true).rect,
            limits,
            id,
        ))
    }

    /// [`CAPABILITIES`] as the script now has it: the clipboard unless turned off,
    /// accessibility and windows once turned on.
    fn capabilities(&self) -> BackendCapabilities {
        let script = self.handle.lock();
        BackendCapabilities {
            clipboard: !script.clipboard_unavailable,
            accessibility: script.accessible,
            windows: script.lists_windows,
            ..CAPABILITIES
        }
    }

    fn control(&self) -> Arc<dyn SessionControl> {
        self.handle.control()
    }

    fn windows(&mut self) -> Result<Vec<AppWindowInfo>, BackendError> {
        self.ensure_running()?;
        let (lists, dialogs) = {
            let script = self.handle.lock();
            (script.lists_windows, script.dialogs.clone())
        };
        if !lists {
            return Ok(Vec::new());
        }
        Ok(observe::windows(
            APP_WINDOW_ID,
            self.app_window(true).rect,
            &dialogs,
        ))
    }
}

fn no_clipboard() -> BackendError {
    BackendError::ClipboardUnavailable(
        "the fake desktop's clipboard is off (FakeHandle::set_clipboard_unavailable)".to_string(),
    )
}
