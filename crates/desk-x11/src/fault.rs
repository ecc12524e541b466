//! Test-only observation faults in the worker, for the "no ambiguity after input" tests.
//!
//! `DESKBROKER_WORKER_FAULT` (read once when the [`crate::X11Session`] is created; the launcher
//! passes it through from the broker's environment, and nothing sets it by default):
//! - `capture_after_input`: the settle capture of the first `execute` that follows fails;
//! - `encode_after_input`: the PNG encode of the first `execute`'s settled frame fails;
//! - `focus_after_input`: the diagnostic focus read after the first `execute` fails.
//!
//! Each fires once, after the input was delivered, as a real X failure would; the worker then
//! answers with the observation named in `observation_failures`. An unknown value is ignored
//! with a warning. Never set this in production.

pub use desk_contract::worker::WORKER_FAULT_ENV;

/// Which observation of the next `execute` fails, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum WorkerFault {
    /// Nothing is injected.
    #[default]
    None,
    /// The settle capture fails.
    CaptureAfterInput,
    /// The PNG encode fails.
    EncodeAfterInput,
    /// The focus read fails.
    FocusAfterInput,
}

impl WorkerFault {
    /// Reads [`WORKER_FAULT_ENV`].
    pub(crate) fn from_env() -> WorkerFault {
        match std::env::var(WORKER_FAULT_ENV).as_deref() {
            Err(_) | Ok("") => WorkerFault::None,
            Ok("capture_after_input") => WorkerFault::CaptureAfterInput,
            Ok("encode_after_input") => WorkerFault::EncodeAfterInput,
            Ok("focus_after_input") => WorkerFault::FocusAfterInput,
            Ok(other) => {
                tracing::warn!(value = other, "ignoring unknown {WORKER_FAULT_ENV}");
                WorkerFault::None
            }
        }
    }

    /// Takes the fault for this `execute` (it fires once) and leaves `None` behind.
    pub(crate) fn take(&mut self) -> WorkerFault {
        let fault = *self;
        if fault != WorkerFault::None {
            tracing::warn!(
                ?fault,
                "{WORKER_FAULT_ENV}: failing an observation after input"
            );
        }
        *self = WorkerFault::None;
        fault
    }
}
