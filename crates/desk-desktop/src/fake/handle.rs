//! The fake's script and its [`FakeHandle`]: what a test tells a [`super::FakeDesktop`] to do,
//! and what the fake recorded, shared even after the backend moved into a broker.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::control::RecordedControl;

use desk_contract::InputAction;

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
pub(super) struct Script {
    pub(super) inputs: Vec<InputAction>,
    pub(super) failures: Vec<(u64, FakeFailure)>,
    pub(super) save: FakeSave,
    pub(super) foreign_window_in_front: bool,
    pub(super) unmaximized_handoff: bool,
    pub(super) n_saves: u64,
    pub(super) held_after_next: Vec<String>,
    pub(super) never_settles: bool,
    pub(super) clipboard: Option<String>,
    pub(super) n_clipboard_ops: u64,
    pub(super) clipboard_write_fails: bool,
    pub(super) clipboard_unavailable: bool,
    pub(super) accessible: bool,
    pub(super) lists_windows: bool,
    pub(super) n_snapshots: u64,
    pub(super) dialogs: Vec<(u32, String)>,
}

/// A cloneable view into a [`super::FakeDesktop`]'s recorded inputs and script.
#[derive(Debug, Clone, Default)]
pub struct FakeHandle {
    script: Arc<Mutex<Script>>,
    /// The fake's [`crate::SessionControl`]: what the broker (or a test) signalled.
    control: Arc<RecordedControl>,
}

impl FakeHandle {
    pub(super) fn lock(&self) -> MutexGuard<'_, Script> {
        // A poisoned lock only means a test thread panicked; the data is still usable.
        self.script
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The fake clipboard's text (`None`: nothing was ever written).
    pub fn clipboard(&self) -> Option<String> {
        self.lock().clipboard.clone()
    }

    /// Puts `text` on the fake clipboard, as an app's copy would.
    pub fn set_clipboard(&self, text: &str) {
        self.lock().clipboard = Some(text.to_string());
    }

    /// How many clipboard reads and writes reached the fake.
    pub fn n_clipboard_ops(&self) -> u64 {
        self.lock().n_clipboard_ops
    }

    /// Makes every later clipboard write fail after it reached the desktop (outcome unknown).
    pub fn fail_clipboard_writes(&self) {
        self.lock().clipboard_write_fails = true;
    }

    /// Makes the fake a desktop without a clipboard (`true`): reads and writes are refused
    /// with [`crate::BackendError::ClipboardUnavailable`] and change nothing.
    pub fn set_clipboard_unavailable(&self, unavailable: bool) {
        self.lock().clipboard_unavailable = unavailable;
    }

    /// Gives the fake app an accessibility tree (`true`; see `fake/observe.rs`) or takes it
    /// away (the default, as for an app without AT-SPI: snapshots are refused with
    /// [`crate::BackendError::AccessibilityUnavailable`]). Semantic steps stay refused either way.
    pub fn set_accessible(&self, accessible: bool) {
        self.lock().accessible = accessible;
    }

    /// How many accessibility snapshots the fake answered.
    pub fn n_snapshots(&self) -> u64 {
        self.lock().n_snapshots
    }

    /// Makes `windows` list the fake app's windows (`true`: its main window and the dialogs
    /// opened) or none (the default, as `serve --backend fake` documents: a fake desktop has
    /// no app windows to show).
    pub fn set_lists_windows(&self, lists: bool) {
        self.lock().lists_windows = lists;
    }

    /// Opens a dialog of the app titled `title` (listed by `windows` after the main window,
    /// once [`FakeHandle::set_lists_windows`] is on); returns its window id.
    pub fn open_dialog(&self, title: &str) -> u32 {
        let mut script = self.lock();
        let id = 0x40_0100 + u32::try_from(script.dialogs.len()).unwrap_or(0);
        script.dialogs.push((id, title.to_string()));
        id
    }

    /// Closes every dialog [`FakeHandle::open_dialog`] opened.
    pub fn close_dialogs(&self) {
        self.lock().dialogs.clear();
    }

    /// The fake's out-of-band control, the one `DesktopBackend::control` hands the broker: a
    /// Stop signalled on it (`signal_stop`) past an `execute_for`'s generation ends that
    /// settle `interrupted`, as the worker's does; the generation never goes back.
    pub fn control(&self) -> Arc<RecordedControl> {
        Arc::clone(&self.control)
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

    /// Makes the screen change at every settle sample from now on (an animation, a blinking
    /// progress bar): every `execute` gives up at the policy's `max_ms` with `still_changing`.
    pub fn set_never_settles(&self, never_settles: bool) {
        self.lock().never_settles = never_settles;
    }

    /// How many simulated saves wrote a file.
    pub fn n_saves(&self) -> u64 {
        self.lock().n_saves
    }
}
