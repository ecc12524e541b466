//! The `DesktopBackend` trait: synchronous and object-safe; each session's backend runs on its
//! own thread, fed by the broker. What a backend offers beyond the common methods it declares
//! ([`BackendCapabilities`]); what the broker signals without its turn goes through the
//! [`SessionControl`] it hands out (`control.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use desk_contract::clipboard::{ClipboardText, ClipboardWritten};
use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff, WindowRules};
use desk_contract::{DisplaySize, InputAction, SettlePolicy};

use crate::control::{BackendCapabilities, SessionControl};
use crate::error::BackendError;
#[cfg(doc)]
use crate::error::Unsupported;

/// Everything needed to start the target app for one attempt, resolved from a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppLaunch {
    /// Program and arguments, placeholders already substituted.
    pub argv: Vec<String>,
    /// Extra environment (HOME, XDG dirs, app settings); the rest of the environment is cleared
    /// except PATH and the display.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: PathBuf,
    /// How to recognise and prepare the main window.
    pub window: WindowRules,
    /// Settle timing for the handoff render wait.
    pub settle: SettlePolicy,
}

/// A desktop a broker session drives.
///
/// Error contract for [`DesktopBackend::execute`]: an error for which
/// [`BackendError::input_may_have_been_sent`] is false guarantees no input reached the desktop;
/// otherwise the outcome is unknown and must never be replayed.
///
/// Every method is exercised by a case of [`crate::conformance`] (its `CASES` list); a method
/// added without a case fails desk-desktop's tests.
pub trait DesktopBackend: Send {
    /// The display size actions are validated against.
    fn display_size(&self) -> DisplaySize;

    /// Stops any running app, starts the one described by `launch`, and waits for a verified
    /// handoff: main window found, maximized, overlays dismissed, render stable.
    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError>;

    /// Captures the screen.
    fn capture(&mut self) -> Result<Frame, BackendError>;

    /// Injects one validated action exactly once, releases anything left held, waits for the
    /// bounded settle and returns the freshest frame. Once the input was delivered the answer
    /// is `Ok`: a failed capture, encode or focus read leaves the frame or `focus_after` out and
    /// is named in the outcome's `observation_failures`.
    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError>;

    /// [`DesktopBackend::execute`] for the control `generation`: a Stop that advances past it
    /// ([`SessionControl::signal_stop`] on [`DesktopBackend::control`]) ends the settle wait
    /// early with `interrupted`. A backend that cannot be interrupted
    /// ([`BackendCapabilities::interrupt`] false) settles as usual, which is the default: a
    /// real answer for such a backend, not a refusal (the step runs in full).
    fn execute_for(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
        generation: u64,
    ) -> Result<ActionOutcome, BackendError> {
        let _ = generation;
        self.execute(action, settle)
    }

    /// Reads focus, pointer, app window and held keys/buttons.
    fn facts(&mut self) -> Result<DesktopFacts, BackendError>;

    /// Releases every held key and button; returns what was held.
    fn release_held(&mut self) -> Result<Vec<String>, BackendError>;

    /// Stops the app, leaving the display running.
    fn stop_app(&mut self) -> Result<(), BackendError>;

    /// Stops everything: app, worker, window manager, display. Idempotent.
    fn shutdown(&mut self) -> Result<(), BackendError>;

    /// Process ids this backend started and believes alive, for leak checks.
    fn process_ids(&self) -> Vec<u32>;

    /// The workspace as measured at the last handoff; `None` for a backend without processes
    /// of its own (the fake, a remote worker), which is the default: no capability goes with it,
    /// and `None` is the true answer "nothing measured here", not a refusal.
    fn workspace_facts(&self) -> Option<desk_contract::desktop::WorkspaceFacts> {
        None
    }

    /// Reads the display's clipboard as UTF-8 text, at most `max_output_bytes` of it (checked
    /// by the caller, `desk_contract::clipboard`). Sends no input. An error changes nothing.
    /// A backend without a clipboard ([`BackendCapabilities::clipboard`] false) refuses with
    /// [`BackendError::unsupported`]`(`[`Unsupported::Clipboard`]`)`.
    fn clipboard_read(&mut self, max_output_bytes: u64) -> Result<ClipboardText, BackendError>;

    /// Replaces the display's clipboard text (checked by the caller: no NUL, within the
    /// ceiling). Sends no input. An error for which
    /// [`BackendError::input_may_have_been_sent`] is true leaves the clipboard unknown; the
    /// caller never retries it. A backend without a clipboard refuses with
    /// [`BackendError::unsupported`]`(`[`Unsupported::Clipboard`]`)`.
    fn clipboard_write(&mut self, text: &str) -> Result<ClipboardWritten, BackendError>;

    /// Reads the app's accessibility tree within `limits` (a new current observation). A
    /// backend without accessibility ([`BackendCapabilities::accessibility`] false) refuses
    /// with [`BackendError::unsupported`]`(`[`Unsupported::Accessibility`]`)`.
    fn accessibility(
        &mut self,
        limits: desk_contract::a11y::AxLimits,
    ) -> Result<desk_contract::a11y::AxTree, BackendError>;

    /// The app's top-level windows. A backend without windows of its own
    /// ([`BackendCapabilities::windows`] false) has none: an empty list.
    fn windows(&mut self) -> Result<Vec<desk_contract::desktop::AppWindowInfo>, BackendError>;

    /// What this desktop offers beyond the common methods; every backend declares it, and its
    /// answers to the methods above agree with it.
    fn capabilities(&self) -> BackendCapabilities;

    /// The desktop's out-of-band control (Stop's generation, the lease deadline), which the
    /// broker keeps beside the session so that using it never waits for this backend's lock;
    /// it controls this desktop for its whole life. The default signals nothing
    /// ([`crate::UnsignalledControl`]), the true control of a desktop that declares neither
    /// [`BackendCapabilities::interrupt`] nor [`BackendCapabilities::lease_deadline`].
    fn control(&self) -> Arc<dyn SessionControl> {
        Arc::new(crate::control::UnsignalledControl)
    }

    /// Lets go of the desktop without stopping it, so that a later broker can reattach to it
    /// (see the broker's `BackendFactory::reattach`). A backend that cannot outlive this process
    /// shuts down instead, which is the default: the true answer of a backend that declares
    /// [`BackendCapabilities::detach`] false (the desktop is gone either way, never leaked).
    fn detach(&mut self) {
        if let Err(error) = self.shutdown() {
            tracing::warn!(%error, "failed to shut down a desktop that cannot be detached");
        }
    }
}
