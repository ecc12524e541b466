//! `FakeDesktop`: an in-process [`DesktopBackend`] for fast tests of broker logic.
//!
//! It launches nothing. `start_app` hands off a maximized synthetic app window and a
//! deterministic PNG; `execute` records every [`InputAction`] it receives in a shared list (see
//! [`FakeHandle`]), answers with synthetic [`InputEvent`]s matching the action and a new frame
//! whose pixels depend on the number of actions executed so far, and always settles `stable`.
//!
//! Scripted behaviour, set through a [`FakeHandle`] even after the backend moved into a broker:
//! - fail the nth `execute` before any input ([`FakeFailure::BeforeInput`], nothing recorded) or
//!   after input was sent ([`FakeFailure::OutcomeUnknown`], the input is recorded);
//! - hand off an app window that is not maximized;
//! - report keys or buttons found held after an action (and released);
//! - put a foreign (non-app) window in front, as a save dialog would be;
//! - simulate the app saving: on a `ctrl+s` chord, append a line to the attempt file (the last
//!   element of the launch argv) or to an explicit path, or write a fixture DXF drawing over
//!   the attempt file (`fake_dxf`, used by `deskbroker serve --backend fake`).
//!
//! Invariant: an action is recorded if and only if the fake pretends its input reached the
//! desktop, so "recorded zero inputs" means "nothing was injected".

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use desk_contract::desktop::{
    ActionOutcome, DesktopFacts, FocusFacts, Frame, Handoff, WindowFacts, WindowRect,
};
use desk_contract::events::{InputEvent, InputEventKind};
use desk_contract::{
    Button, DisplaySize, InputAction, Key, Modifier, ScreenPoint, SettleOutcome, SettlePolicy,
    SettleReport,
};
use sha2::{Digest, Sha256};

use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;

/// How a scripted `execute` failure behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeFailure {
    /// Fails with [`BackendError::DesktopFailed`]; nothing is recorded.
    BeforeInput,
    /// Records the input, then fails with [`BackendError::OutcomeUnknown`].
    OutcomeUnknown,
}

/// Where a simulated save writes when the fake receives `ctrl+s`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FakeSave {
    /// The save chord changes nothing.
    #[default]
    Disabled,
    /// Appends a line to the last element of the launch argv (the attempt file in profiles).
    AttemptFromArgv,
    /// Appends a line to this file.
    Path(PathBuf),
    /// Writes the fixture DXF ([`crate::fake_dxf::fixture_dxf`]) over the last element of the
    /// launch argv: what `deskbroker serve --backend fake` does, so a checkpoint yields a
    /// drawing the scorer parses.
    FixtureDxf,
}

#[derive(Debug, Default)]
struct Script {
    inputs: Vec<InputAction>,
    failures: Vec<(u64, FakeFailure)>,
    save: FakeSave,
    foreign_window_in_front: bool,
    unmaximized_handoff: bool,
    n_saves: u64,
    held_after_next: Vec<String>,
}

/// A cloneable view into a [`FakeDesktop`]'s recorded inputs and script.
#[derive(Debug, Clone, Default)]
pub struct FakeHandle {
    script: Arc<Mutex<Script>>,
}

impl FakeHandle {
    fn lock(&self) -> MutexGuard<'_, Script> {
        // A poisoned lock only means a test thread panicked; the data is still usable.
        self.script
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every input action executed so far, in order.
    pub fn inputs(&self) -> Vec<InputAction> {
        self.lock().inputs.clone()
    }

    /// How many input actions were executed.
    pub fn n_inputs(&self) -> usize {
        self.lock().inputs.len()
    }

    /// Makes the `nth` call to `execute` (1-based, counting every call) fail.
    pub fn fail_execute(&self, nth: u64, failure: FakeFailure) {
        self.lock().failures.push((nth, failure));
    }

    /// Sets what the save chord does.
    pub fn set_save(&self, save: FakeSave) {
        self.lock().save = save;
    }

    /// Puts a foreign window (e.g. a Save As dialog of another process) in front, or removes it.
    pub fn set_foreign_window_in_front(&self, in_front: bool) {
        self.lock().foreign_window_in_front = in_front;
    }

    /// Makes the next handoffs report an app window that is not maximized.
    pub fn set_unmaximized_handoff(&self, unmaximized: bool) {
        self.lock().unmaximized_handoff = unmaximized;
    }

    /// Makes the next `execute` report `names` (e.g. `ctrl`, `mouse_left`) as found held after
    /// its input and released, as the worker does when an app grabbed a release.
    pub fn leave_held_after_next(&self, names: Vec<String>) {
        self.lock().held_after_next = names;
    }

    /// How many simulated saves wrote a file.
    pub fn n_saves(&self) -> u64 {
        self.lock().n_saves
    }
}

/// The in-process fake desktop. See the module documentation.
#[derive(Debug)]
pub struct FakeDesktop {
    display: DisplaySize,
    handle: FakeHandle,
    n_executes: u64,
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

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl FakeDesktop {
    /// A fake desktop of the given size with no app running.
    pub fn new(display: DisplaySize) -> FakeDesktop {
        FakeDesktop {
            display,
            handle: FakeHandle::default(),
            n_executes: 0,
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
    /// on the number of actions executed.
    fn render(&mut self) -> Result<Frame, BackendError> {
        self.n_frames += 1;
        let (width, height) = (self.display.width, self.display.height);
        let step = self.n_executes;
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

    fn events_for(&mut self, action: &InputAction) -> Vec<InputEvent> {
        let mut events = Vec::new();
        let mut push = |kind: InputEventKind| {
            events.push(InputEvent {
                timestamp_ms: now_ms(),
                kind,
            });
        };
        let modifier = |modifier: &Modifier, pressed: bool| InputEventKind::ModifierChange {
            modifier: modifier.as_str().to_string(),
            pressed,
        };
        let click = |at: ScreenPoint, button: Button, pressed: bool| InputEventKind::Click {
            x: at.x,
            y: at.y,
            button,
            pressed,
        };
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
                modifiers.iter().for_each(|held| push(modifier(held, true)));
                push(InputEventKind::MouseMove { x: at.x, y: at.y });
                for _ in 0..n_clicks {
                    push(click(*at, *button, true));
                    push(click(*at, *button, false));
                }
                modifiers
                    .iter()
                    .rev()
                    .for_each(|held| push(modifier(held, false)));
                self.pointer = *at;
            }
            InputAction::Drag {
                path,
                button,
                modifiers,
                ..
            } => {
                modifiers.iter().for_each(|held| push(modifier(held, true)));
                if let (Some(first), Some(last)) = (path.first(), path.last()) {
                    push(InputEventKind::MouseMove {
                        x: first.x,
                        y: first.y,
                    });
                    push(click(*first, *button, true));
                    for point in &path[1..] {
                        push(InputEventKind::Drag {
                            x: point.x,
                            y: point.y,
                            button: *button,
                        });
                    }
                    push(click(*last, *button, false));
                    self.pointer = *last;
                }
                modifiers
                    .iter()
                    .rev()
                    .for_each(|held| push(modifier(held, false)));
            }
            InputAction::Move { to, .. } => {
                push(InputEventKind::MouseMove { x: to.x, y: to.y });
                self.pointer = *to;
            }
            InputAction::Scroll { dx, dy, modifiers } => {
                modifiers.iter().for_each(|held| push(modifier(held, true)));
                push(InputEventKind::Scroll {
                    x: self.pointer.x,
                    y: self.pointer.y,
                    dx: *dx,
                    dy: *dy,
                });
                modifiers
                    .iter()
                    .rev()
                    .for_each(|held| push(modifier(held, false)));
            }
            InputAction::Key { keys } => {
                for key in keys {
                    push(match key {
                        Key::Modifier(held) => modifier(held, true),
                        other => InputEventKind::Key {
                            key: other.canonical_name(),
                            pressed: true,
                        },
                    });
                }
                for key in keys.iter().rev() {
                    push(match key {
                        Key::Modifier(held) => modifier(held, false),
                        other => InputEventKind::Key {
                            key: other.canonical_name(),
                            pressed: false,
                        },
                    });
                }
            }
            InputAction::Type { text } => {
                for character in text.chars() {
                    let key = character.to_string();
                    push(InputEventKind::Key {
                        key: key.clone(),
                        pressed: true,
                    });
                    push(InputEventKind::Key {
                        key,
                        pressed: false,
                    });
                }
            }
            InputAction::Wait { .. } | InputAction::Done => {}
        }
        events
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
        _settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        self.ensure_running()?;
        self.n_executes += 1;
        let failure = {
            let script = self.handle.lock();
            script
                .failures
                .iter()
                .find(|(nth, _)| *nth == self.n_executes)
                .map(|(_, how)| *how)
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
        let events = self.events_for(action);
        if is_save_chord(action) {
            self.simulate_save()?;
        }
        let frame = self.render()?;
        Ok(ActionOutcome {
            events,
            focus_before,
            focus_after: Some(self.focus()),
            released_after: std::mem::take(&mut self.handle.lock().held_after_next),
            settle: SettleReport {
                outcome: SettleOutcome::Stable,
                wait_ms: 0,
                changed_pixels: if action.injects_input() {
                    8 * u64::from(frame.width)
                } else {
                    0
                },
                n_samples: 1,
                post_action_visual_stable: true,
            },
            frame: Some(frame),
            input_ms: 0,
            observation_failures: Vec::new(),
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
}
