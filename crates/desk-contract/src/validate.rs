//! Validation of agent actions into the normalized [`InputAction`] a desktop executes.
//!
//! Invariant: a [`ValidatedAction`] can only be built here, so every input that reaches a desktop
//! passed these checks against the live display size. The `intent` is kept beside the input for
//! logs and stripped from what is injected.
//!
//! The raw action types' checks are in `validate/checks.rs`, the semantic steps' in
//! `validate/semantic.rs`.

mod checks;
mod semantic;

pub use checks::*;
pub use semantic::validate_semantic;
