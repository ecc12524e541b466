//! Test fixtures for real-desktop tests: an [`Xvfb`] server per test (display number read from
//! `-displayfd`, killed on drop), an [`Openbox`] window manager on it, and the probe window
//! ([`probe`]) whose NDJSON event log tests assert on.
//!
//! Invariants: no fixture uses a fixed display number; every spawned process is killed on drop;
//! a missing Xvfb skips (prints `skipped: Xvfb not found`) unless `DESK_REQUIRE_XVFB=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod certs;
pub mod probe;
mod xvfb;

/// The one "required tools" gate of real-desktop tests: whether every program in `programs` is
/// on the PATH. A missing one prints `skipped: <what> not found` and the test should return
/// (pass), unless `DESK_REQUIRE_XVFB=1` (CI), where it panics instead.
pub fn tools_available(what: &str, programs: &[&str]) -> bool {
    let found = programs.iter().all(|program| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    if !found {
        skip_unless_required(what);
    }
    found
}

pub use certs::write_worker_certs;
pub use probe::{PROBE_RGB, ProbeEvent, ProbeOptions, read_probe_log, spawn_probe, typed_text};
pub use xvfb::{Openbox, Xvfb, skip_unless_required};
