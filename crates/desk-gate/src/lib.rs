//! The screenshot risk gate's core (containment G003): every frame bound for an agent is read
//! (OCR on what changed, the observer's names) and matched against the signed policy's
//! patterns, then scored by the policy's optional classifier, before it may leave the broker.
//! No keys: the broker records the [`Decision`] in the session's signed journal and decides
//! what the answer carries.
//!
//! - [`GatePolicy`]: the validated settings (patterns compiled, thresholds ordered, bounds).
//! - [`Ocr`], [`Tesseract`]: the OCR engine, a `tesseract` child under time and output bounds.
//! - [`OcrServer`], [`default_ocr`]: the long-lived `desk-ocr` engine processes (CLI fallback).
//! - [`Classifier`], [`HttpClassifier`]: the optional classifier over a loopback HTTP endpoint.
//! - [`ReferenceClassifier`]: the deterministic local classifier for tests
//!   (`desk-classifier-ref`).
//! - [`Gate`]: one session's gate; [`Gate::gate`] gives a [`Decision`].
//!
//! See `docs/screenshot-gate.md`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod classifier;
mod error;
mod frame;
mod gate;
mod ocr;
mod ocr_server;
mod policy;
mod reference;
#[cfg(any(test, feature = "test-text"))]
pub mod test_text;

pub use classifier::{
    Classifier, ClassifierRequest, ClassifierResponse, HttpClassifier, MAX_RESPONSE_BYTES,
    REQUEST_SCHEMA, RESPONSE_SCHEMA, parse_endpoint,
};
pub use error::GateError;
pub use frame::Rect;
pub use gate::{Decision, Gate, Reason, ReasonSource, Verdict};
pub use ocr::{MAX_OCR_OUTPUT, Ocr, Tesseract, Word};
pub use ocr_server::{MAX_OCR_REQUEST, OcrServer, default_ocr};
pub use policy::{
    ClassifierSettings, GatePolicy, GateSettings, MAX_CLASSIFIER_TIMEOUT_MS, MAX_PATTERN_BYTES,
    MAX_PATTERNS, check_classifier, compile_pattern,
};

pub use reference::{ReferenceClassifier, ScoredPhrase};

#[cfg(test)]
mod tests;
