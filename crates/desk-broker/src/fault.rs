//! Test-only crash injection for exactly-once tests, and the broker's stance on storage faults.
//!
//! `DESKBROKER_FAULT`, read once when a [`crate::BrokerConfig`] is built:
//! - `kill_before_input`: the broker SIGKILLs itself right after an action's `pending` journal
//!   row is committed, before the backend sees the action;
//! - `kill_after_input`: the broker SIGKILLs itself right after the backend's `execute` returned,
//!   before the outcome is journaled;
//! - `kill_after_tombstone`: a kill (`kill.rs`: the watchdog, `deskbroker kill`, the kill
//!   route) SIGKILLs its own process right after the tombstone is durable, before the
//!   workspace is destroyed and the receipt spooled: whoever finishes interrupted kills (the
//!   broker's reconciler, the watchdog) must complete it, receipt written exactly once.
//!
//! The first two leave a `pending` row that the next start turns into `unknown`. Never set this in
//! production; an unknown value is ignored with a warning.
//!
//! Storage faults are real, not injected: a journal on a full disk or past the process's file
//! size limit fails its write, the action is refused with `journal_unavailable` and nothing is
//! sent. For the file size limit to surface as an error rather than death by `SIGXFSZ`, the
//! broker catches that signal ([`survive_file_size_limit`]).

use nix::sys::signal::{Signal, kill};
use nix::unistd::getpid;

/// Makes writes past `RLIMIT_FSIZE` fail with `EFBIG` instead of killing the process with
/// `SIGXFSZ`, so that the journal reports them. Installs tokio's handler, which stays for the
/// life of the process; without a tokio runtime it does nothing.
pub(crate) fn survive_file_size_limit() {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let _entered = runtime.enter();
    let kind = tokio::signal::unix::SignalKind::from_raw(Signal::SIGXFSZ as i32);
    if let Err(error) = tokio::signal::unix::signal(kind) {
        tracing::warn!(%error, "failed to catch SIGXFSZ; a file size limit would kill the broker");
    }
}

/// Where to crash, if anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FaultHook {
    /// Never crash.
    #[default]
    None,
    /// Crash after the pending journal commit, before input.
    KillBeforeInput,
    /// Crash after input, before the outcome is journaled.
    KillAfterInput,
    /// Crash a killer after its tombstone, before destruction and receipt.
    KillAfterTombstone,
}

/// The environment variable read by [`FaultHook::from_env`].
pub const FAULT_ENV: &str = "DESKBROKER_FAULT";

impl FaultHook {
    /// Reads [`FAULT_ENV`].
    pub fn from_env() -> FaultHook {
        match std::env::var(FAULT_ENV).as_deref() {
            Err(_) | Ok("") => FaultHook::None,
            Ok("kill_before_input") => FaultHook::KillBeforeInput,
            Ok("kill_after_input") => FaultHook::KillAfterInput,
            Ok("kill_after_tombstone") => FaultHook::KillAfterTombstone,
            Ok(other) => {
                tracing::warn!(value = other, "ignoring unknown {FAULT_ENV}");
                FaultHook::None
            }
        }
    }

    /// Kills the process when `point` is the configured crash point.
    pub(crate) fn fire(self, point: FaultHook) {
        if self != FaultHook::None && self == point {
            tracing::warn!(fault = ?point, "{FAULT_ENV}: killing the broker");
            let _ = kill(getpid(), Signal::SIGKILL);
        }
    }
}
