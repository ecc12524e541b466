//! The suite's vocabulary: a [`Failure`] naming the case, and the [`Witness`] of what the
//! desktop really received.

use std::fmt;

/// A check that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The check or case.
    pub check: String,
    /// What was seen instead.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.detail)
    }
}

/// A failure of `check`.
pub(super) fn fail<T>(check: &str, detail: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        check: check.to_string(),
        detail: detail.into(),
    })
}

/// What the desktop really received, independent of what the backend reports.
pub trait Witness {
    /// How many inputs the desktop has received so far (in the witness's own unit: recorded
    /// actions for the fake, X events for the probe window). Waits for delivery to finish.
    fn delivered(&mut self) -> Result<usize, String>;
}

/// Any closure counting deliveries is a witness.
impl<F: FnMut() -> Result<usize, String>> Witness for F {
    fn delivered(&mut self) -> Result<usize, String> {
        self()
    }
}

/// The witness's count, its error as a failure of `check`.
pub(super) fn delivered(witness: &mut dyn Witness, check: &str) -> Result<usize, Failure> {
    witness.delivered().or_else(|error| fail(check, error))
}
