//! `FakeDesktop`: an in-process [`DesktopBackend`] for fast tests of broker logic.
//!
//! It launches nothing. `start_app` hands off a maximized synthetic app window and a
//! deterministic PNG; `execute` records every [`InputAction`] it receives in a shared list (see
//! [`FakeHandle`]) and answers as the real worker does (`fake/input.rs`, held to it by
//! [`crate::conformance`]): the same input events in the same order, points outside the
//! display refused before input, a frame whose pixels change after every action (the fake
//! app redraws once, a wait included; `done` changes nothing), and the settle rule of the given `SettlePolicy` on a virtual clock (reported, not
//! slept).
//!
//! Scripted behaviour, set through a [`FakeHandle`] even after the backend moved into a broker:
//! - fail the nth `execute` before any input ([`FakeFailure::BeforeInput`], nothing recorded) or
//!   after input was sent ([`FakeFailure::OutcomeUnknown`], the input is recorded);
//! - hand off an app window that is not maximized;
//! - report keys or buttons found held after an action (and released);
//! - put a foreign (non-app) window in front, as a save dialog would be;
//! - make the screen never settle (every action gives up at `max_ms`, `still_changing`);
//! - simulate the app saving: on a `ctrl+s` chord, append a line to the attempt file (the last
//!   element of the launch argv) or to an explicit path, or write a fixture DXF drawing over
//!   the attempt file (`fake_dxf`, used by `deskbroker serve --backend fake`).
//!
//! Invariant: an action is recorded if and only if the fake pretends its input reached the
//! desktop, so "recorded zero inputs" means "nothing was injected".

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use desk_contract::clipboard::{ClipboardText, ClipboardWritten};
use desk_contract::desktop::{
    ActionOutcome, DesktopFacts, FocusFacts, Frame, Handoff, WindowFacts, WindowRect,
};
use desk_contract::sha256_hex;
use desk_contract::{
    DisplaySize, InputAction, Key, Modifier, ScreenPoint, SettleOutcome, SettlePolicy, SettleReport,
};

mod handle;
mod input;

pub use handle::{FakeFailure, FakeHandle, FakeSave};

use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;

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

    fn app_window(&self, maximized: bool) -> WindowFacts {
        WindowFacts {
            window_id: APP_WINDOW_ID,
            pid: Some(4242),
            title: "fake app".to_string(),
            class: "fakeapp".to_string(),
            maximized,
            rect: WindowRect {
                x: 0,
                y: 0,
                width: self.display.width,
                height: self.display.height,
            },
            is_app: true,
        }
    }

    fn foreign_window(&self) -> WindowFacts {
        WindowFacts {
            window_id: FOREIGN_WINDOW_ID,
            pid: Some(4343),
            title: "Save As".to_string(),
            class: "dialog".to_string(),
            maximized: false,
            rect: WindowRect {
                x: 100,
                y: 100,
                width: 400,
                height: 300,
            },
            is_app: false,
        }
    }

    fn focus(&self) -> FocusFacts {
        let active = if self.handle.lock().foreign_window_in_front {
            self.foreign_window()
        } else {
            self.app_window(true)
        };
        FocusFacts {
            focused: Some(active.window_id),
            active: Some(active),
            pointer: self.pointer,
        }
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

    /// Renders a deterministic frame: a background and a band whose colour and position depend
    /// on the number of screen changes (one per executed action other than `done`).
    fn render(&mut self) -> Result<Frame, BackendError> {
        self.n_frames += 1;
        let (width, height) = (self.display.width, self.display.height);
        let step = self.n_changes;
        let shade = |offset: u64| u8::try_from((step * 37 + offset) % 256).unwrap_or(0);
        let band = [shade(0), shade(85), shade(170)];
        let band_top = u32::try_from(step % u64::from(height.max(1))).unwrap_or(0);
        let width_px = usize::try_from(width).unwrap_or(0);
        let mut pixels = Vec::with_capacity(width_px * usize::try_from(height).unwrap_or(0) * 3);
        for row in 0..height {
            let color = if row >= band_top && row < band_top.saturating_add(8) {
                band
            } else {
                [0xe0, 0xe4, 0xe8]
            };
            for _ in 0..width {
                pixels.extend_from_slice(&color);
            }
        }
        let mut png_bytes = Vec::new();
        let fail = |error: png::EncodingError| {
            BackendError::DesktopFailed(format!("failed to encode fake frame: {error}"))
        };
        {
            let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::Fast);
            let mut writer = encoder.write_header().map_err(fail)?;
            writer.write_image_data(&pixels).map_err(fail)?;
            writer.finish().map_err(fail)?;
        }
        Ok(Frame {
            sha256: sha256_hex(&png_bytes),
            png: png_bytes,
            width,
            height,
            captured_at_ms: now_ms(),
            app_maximized: true,
        })
    }

    fn simulate_save(&mut self) -> Result<(), BackendError> {
        let save = self.handle.lock().save.clone();
        let save_fixture = save == FakeSave::FixtureDxf;
        let target = match save {
            FakeSave::Disabled => return Ok(()),
            FakeSave::Path(path) => path,
            FakeSave::AttemptFromArgv | FakeSave::FixtureDxf => {
                match self.launch.as_ref().and_then(|launch| launch.argv.last()) {
                    Some(last) => PathBuf::from(last),
                    None => return Ok(()),
                }
            }
        };
        let n_saves = {
            let mut script = self.handle.lock();
            script.n_saves += 1;
            script.n_saves
        };
        let contents = if save_fixture {
            crate::fake_dxf::fixture_dxf(self.handle.n_inputs()).into_bytes()
        } else {
            let mut contents = std::fs::read(&target).unwrap_or_default();
            contents.extend_from_slice(format!("saved by fake desktop {n_saves}\n").as_bytes());
            contents
        };
        std::fs::write(&target, contents).map_err(|error| {
            BackendError::OutcomeUnknown(format!(
                "fake save to {} failed: {error}",
                target.display()
            ))
        })
    }
}

fn is_save_chord(action: &InputAction) -> bool {
    matches!(action, InputAction::Key { keys }
        if keys.as_slice() == [Key::Modifier(Modifier::Ctrl), Key::Char('s')])
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

    fn capture(&mut self) -> Result<Frame, BackendError> {
        self.ensure_running()?;
        self.render()
    }

    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        self.ensure_running()?;
        input::check_bounds(self.display, action)?;
        self.n_executes += 1;
        let (failure, never_settles) = {
            let script = self.handle.lock();
            let failure = script
                .failures
                .iter()
                .find(|(nth, _)| *nth == self.n_executes)
                .map(|(_, how)| *how);
            (failure, script.never_settles)
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
        if is_save_chord(action) {
            self.simulate_save()?;
        }
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
            settle: input::settle(action, settle, changed, never_settles, changed_pixels),
            frame: Some(frame),
            input_ms: 0,
            observation_failures: Vec::new(),
            opened_windows: Vec::new(),
        })
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
        script.n_clipboard_ops += 1;
        let text = script.clipboard.clone().unwrap_or_default();
        Ok(desk_contract::clipboard::truncate(&text, max_output_bytes))
    }

    fn clipboard_write(&mut self, text: &str) -> Result<ClipboardWritten, BackendError> {
        self.ensure_running()?;
        desk_contract::clipboard::check_write(text)
            .map_err(|error| BackendError::Rejected(error.to_string()))?;
        let mut script = self.handle.lock();
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
}
