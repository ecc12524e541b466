//! Test fixtures for real-desktop tests: an [`Xvfb`] server per test (display number read from
//! `-displayfd`, killed on drop), an [`Openbox`] window manager on it, and the probe window
//! ([`probe`]) whose NDJSON event log tests assert on.
//!
//! Invariants: no fixture uses a fixed display number; every spawned process is killed on drop;
//! a missing Xvfb skips (prints `skipped: Xvfb not found`) unless `DESK_REQUIRE_XVFB=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

pub mod probe;
mod xvfb;

pub use probe::{PROBE_RGB, ProbeEvent, ProbeOptions, read_probe_log, spawn_probe, typed_text};
pub use xvfb::{Openbox, Xvfb};
