//! Whether this machine can build a session sandbox at all, asked before a lease is granted: a
//! kernel or container that refuses user namespaces (or a missing `bwrap`) then fails the lease
//! with `sandbox_unavailable`, instead of the first reset after the client already holds a
//! session.
//!
//! The check runs bubblewrap exactly as a session does (the same `setpriv` uid drop, the same
//! namespaces, the same read-only base) around `true`, which takes a few milliseconds. A success
//! is remembered for the process; a failure is not, so a fixed machine needs no broker restart.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::bwrap::{base_root_args, bwrap_namespace_args, setpriv_command};
use super::policy::{SAFE_PATH, SandboxPolicy};
use crate::BackendError;

/// The `bwrap` program: found once on the broker's own `PATH` (so an operator, or a test, can
/// choose which bubblewrap runs), else in [`SAFE_PATH`].
pub(crate) fn bwrap_program() -> Result<PathBuf, BackendError> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path)
                .chain(std::env::split_paths(SAFE_PATH))
                .filter(|dir| dir.is_absolute())
                .map(|dir| dir.join("bwrap"))
                .find(|candidate| candidate.is_file())
        })
        .clone()
        .ok_or_else(|| {
            BackendError::SandboxUnavailable(
                "bubblewrap (bwrap) is not installed; scripts/setup.sh installs it".to_string(),
            )
        })
}

/// Builds a throwaway sandbox with `policy` around `true`; `Ok` when it ran, else
/// [`BackendError::SandboxUnavailable`] quoting bubblewrap. `Off` needs no check.
pub fn check(policy: SandboxPolicy) -> Result<(), BackendError> {
    static PASSED: AtomicBool = AtomicBool::new(false);
    let SandboxPolicy::On { uid, gid } = policy else {
        return Ok(());
    };
    if PASSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    // The shape a session gets: a root broker builds it without a user namespace (split
    // identities), any other broker as its own uid in one.
    let split = nix::unistd::geteuid().is_root();
    let mut command: Command = setpriv_command((!split).then_some((uid, gid)));
    command.arg(bwrap_program()?);
    bwrap_namespace_args(&mut command, split);
    base_root_args(&mut command);
    command
        .args(["--proc", "/proc", "--", "true"])
        .env_clear()
        .env("PATH", SAFE_PATH)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let output = command.output().map_err(|error| {
        BackendError::SandboxUnavailable(format!("cannot run setpriv/bwrap: {error}"))
    })?;
    if output.status.success() {
        PASSED.store(true, Ordering::Relaxed);
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said = said.trim();
    Err(BackendError::SandboxUnavailable(format!(
        "bubblewrap cannot build a session sandbox here ({}): {}",
        output.status,
        if said.is_empty() { "no message" } else { said }
    )))
}
