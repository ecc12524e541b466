//! The census of what runs in a session's sandbox, taken from outside it (the watchdog every
//! round, the broker before every action's input): every process of the sandbox's pid
//! namespace is checked against what the desktop starts and what the app's profile allows.
//!
//! The rules ([`check`], pure) place each process by where it came from:
//! - the sandbox's first process (the holder) by identity: its host pid recorded in
//!   `desktop.json`, whatever its program; it starts nothing, so its only children are the
//!   orphans it may adopt ([`HOLDER_ADOPTS`]);
//! - an entry: a process whose parent is one of the launcher's recorded wrappers
//!   (`processes.json`: `setpriv … nsenter … -- env -C DIR -- PROGRAM …`) runs `nsenter` or `env`
//!   for an instant, then the very program that wrapper names (the app's entry: a program of the
//!   profile's allowed executables);
//! - a descendant of the app: one of the profile's allowed executables
//!   ([`CensusRules::app`]), each at most its `max` instances at once (the app's own entry
//!   counts, so a second app instance is refused);
//! - a descendant of a desktop process: only the helper pairs in [`DESKTOP_CHILDREN`] (Xvfb's
//!   keymap compiler, the AT-SPI bus and its registry).
//!
//! Anything else (a shell, an interpreter, a process started from outside by no recorded
//! wrapper, an orphan adopted by the holder, a program whose file is not the host's file at
//! that path) is a [`Violation`]. The scanner (`census/scan.rs`) finds the namespace's
//! processes on the host (`census/members.rs`: by their `/proc/<pid>/ns/pid`, the authority,
//! or, while nothing new runs, from the sandbox's own `/proc` listing checked against the
//! last full scan), reads `exe`, `stat` and, for a violation, `cmdline`; [`confirmed_violation`] scans twice 50 ms apart so that a process
//! caught between two `exec`s of a launch is not mistaken.

mod check;
mod members;
mod resolve;
mod rules;
mod scan;

pub use check::check;
pub(crate) use check::check_with;
pub use resolve::resolve_program;
pub(crate) use resolve::{Resolved, below, resolve_in, resolve_kept};
pub use rules::{
    AllowedExecutable, CensusRules, ExeIdentity, ScanError, Seen, Snapshot, Violation, Wrapper,
};
pub(crate) use rules::{DESKTOP_CHILDREN, DESKTOP_PROGRAMS, HOLDER_ADOPTS, LAUNCH_STAGES};
pub use scan::{Census, confirmed_violation, scan, scan_full};

// Here rather than in `census/rules.rs`: a profile names the census's types, so they name no
// profile.
impl CensusRules {
    /// The rules of `profile`: its `allowed_executables`, or its command's program alone
    /// (one instance) when it lists none.
    pub fn for_profile(profile: &crate::profile::AppProfile) -> CensusRules {
        if profile.allowed_executables.is_empty() {
            let program = profile.command.first().cloned().unwrap_or_default();
            return CensusRules {
                app: vec![AllowedExecutable {
                    path: program,
                    max: 1,
                }],
            };
        }
        CensusRules {
            app: profile.allowed_executables.clone(),
        }
    }
}

#[cfg(test)]
#[path = "census_tests.rs"]
mod tests;
