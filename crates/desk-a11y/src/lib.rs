//! The accessibility side of the desktop worker: reads the session app's AT-SPI tree from the
//! session's private bus (`atspi` on `zbus`), keeps the native identities of the last
//! observation, and performs semantic actions on them (`ax_press`: the default action, once;
//! `ax_set_text`: EditableText) after checking that the observation is current and that the
//! element's top-level window is the app's bound window or one of its popups. Never falls back
//! to a coordinate. See `docs/accessibility.md`.
//!
//! The API is synchronous (the worker's loop is): each call runs on this crate's own
//! current-thread tokio runtime, bounded by a deadline.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod access;
mod error;
mod guard;
mod observe;
mod outside;
mod semantic;

pub use access::{Accessibility, BoundWindow};
pub use desk_contract::a11y::TextMode;
pub use error::A11yError;
pub use guard::{GuardView, InputTarget, ProhibitedHit};
pub use outside::snapshot_outside;

#[cfg(test)]
mod tests;
