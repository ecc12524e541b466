//! What the control state and its parts (the screenshot history, the accessibility
//! observation) all name: the [`Scope`] work is admitted under, and the control refusal.

use desk_contract::ErrorCode;

use crate::error::BrokerError;

/// The generation and target revision a piece of work was admitted under; it may run only
/// while both are still current and the session is not stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope {
    pub(crate) generation: u64,
    pub(crate) target_revision: u64,
}

/// A control refusal with `code`.
pub(super) fn refusal(code: ErrorCode, message: impl Into<String>) -> BrokerError {
    BrokerError::Control {
        code,
        message: message.into(),
    }
}
