//! The desktop conformance suite: one list of cases ([`CASES`]) covering every
//! [`DesktopBackend`] method, which every backend must pass, so that broker tests run on
//! [`crate::FakeDesktop`] say something about the real desktop.
//!
//! `FakeDesktop` runs it in desk-desktop's own tests on every `cargo test`; `LocalDesktop` runs
//! the same functions on Xvfb with the probe window and the GTK accessible fixture
//! (deskbroker's `tests/it/conformance.rs`, which needs the `deskbroker-worker` binary). What is
//! checked:
//! - the handoff (`observe.rs`): the app's window, maximized, a stable render, a frame of the
//!   display; a capture and the facts; the app's windows; the processes and workspace;
//! - every action type produces exactly the expected [`InputEventKind`]s, in order, and the
//!   desktop really receives input for it (a [`Witness`] counts what arrived);
//! - the settle rule of [`SettlePolicy`]: `post_action_visual_stable` only when `stable`, a
//!   stable by the quiet-time rule not before the quiet time, stable by the idle rule
//!   (`app_idle`, a real desktop's) at any time, a give-up (`max_wait`) not before `max_ms`,
//!   `done` skipped, and the rule consistent with the outcome;
//! - held input is released: nothing held after any action, `release_held` finds nothing;
//! - Stop through the backend's control (`services.rs`): a settle of an older generation ends
//!   `interrupted`; the clipboard round trip and read cap; accessibility (a tree's shape, its
//!   truncation flag, the typed refusal for an app without one);
//! - bounds: an action outside the display is refused before any input (`Rejected`), injects
//!   nothing and leaves the desktop usable;
//! - stopping the app leaves the display running and a new app hands off;
//! - shutdown is idempotent and refuses every later operation without input;
//! - detach: a backend that declares it keeps the desktop for a reattach; one that does not
//!   shuts down.
//!
//! A case the backend's declared [`crate::BackendCapabilities`] rule out is skipped, and the
//! run's [`Report`] lists it with the reason; where the trait says what such a backend does
//! (no clipboard: both directions refused), that is checked instead. The cases run in order on
//! one desktop: a scroll happens at the pointer the previous case left. Failures are reported as
//! [`Failure`] values naming the case, never panics.

mod actions;
mod cases;
mod check;
mod observe;
mod report;
mod services;

pub use actions::{
    check_actions, check_first_case, check_rejections, check_settle, check_shutdown,
};
pub use cases::{Case, action_cases};
pub use check::{Failure, Witness};
pub use observe::{
    check_accessibility, check_accessibility_refused, check_handoff, check_observations,
};
pub use report::{CASES, CaseInfo, HANDOFF, Outcome, Report};
pub use services::{check_clipboard, check_detach, check_stop, check_stop_app};
