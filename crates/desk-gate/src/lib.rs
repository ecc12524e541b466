//! The screenshot risk gate's core (containment G003): every frame bound for an agent is read
//! (OCR on what changed, the observer's names) and matched against the signed policy's
//! patterns before it may leave the broker. No HTTP, no keys: the broker signs the
//! [`GateRecord`] with its evidence key and decides what the answer carries.
//!
//! - [`GatePolicy`]: the validated settings (patterns compiled, thresholds ordered, bounds).
//! - [`Ocr`], [`Tesseract`]: the OCR engine, a `tesseract` child under time and output bounds.
//! - [`Gate`]: one session's gate; [`Gate::gate`] gives a [`Decision`].
//!
//! See `docs/screenshot-gate.md`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod frame;
mod gate;
mod ocr;
mod policy;

pub use error::GateError;
pub use frame::Rect;
pub use gate::{Decision, Gate, GateRecord, RECORD_SCHEMA, Reason, ReasonSource, Verdict};
pub use ocr::{MAX_OCR_OUTPUT, Ocr, Tesseract, Word};
pub use policy::{GatePolicy, GateSettings, MAX_PATTERN_BYTES, MAX_PATTERNS, compile_pattern};

#[cfg(test)]
mod tests;
