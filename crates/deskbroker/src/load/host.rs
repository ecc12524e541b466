//! What the load benchmark reads from the host: a session's recorded processes and display, their
//! resident memory, and what is left behind after release.
//!
//! A recorded process counts as alive only while `/proc/PID/stat` shows the same start time as
//! recorded (pid reuse cannot fool it) and it is not a zombie.

use std::path::Path;

use desk_desktop::SessionDir;
use desk_desktop::launcher::{RecordedProcess, recorded_display, recorded_processes};

/// A session's footprint on the host, read while it runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Footprint {
    pub(crate) processes: Vec<RecordedProcess>,
    /// The X display number, e.g. 3 for `:3`.
    pub(crate) display_number: Option<u32>,
    /// The session's directory (`None` before a lease).
    pub(crate) session_dir: Option<SessionDir>,
}

impl Footprint {
    /// Reads what the launcher recorded for a running session (its processes and display).
    pub(crate) fn read(session_dir: &SessionDir) -> Footprint {
        Footprint {
            processes: recorded_processes(session_dir),
            display_number: recorded_display(session_dir)
                .and_then(|name| name.trim_start_matches(':').parse().ok()),
            session_dir: Some(session_dir.clone()),
        }
    }

    /// Resident memory of the session's live processes, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        self.processes
            .iter()
            .filter(|process| process.is_alive())
            .filter_map(|process| rss_kib(process.pid))
            .sum()
    }

    /// Everything of this session still on the host: live processes, display files, its
    /// directory.
    pub(crate) fn leftovers(&self) -> Vec<String> {
        let mut found: Vec<String> = self
            .processes
            .iter()
            .filter(|process| process.is_alive())
            .map(|process| format!("process {} ({}) alive", process.pid, process.role))
            .collect();
        // A sandboxed display's files live in the sandbox's private /tmp, which ends with its
        // holder (a recorded process, checked above); the host's /tmp is another server's.
        let sandboxed = self
            .processes
            .iter()
            .any(|process| process.role == "sandbox");
        if let Some(number) = self.display_number.filter(|_| !sandboxed) {
            for path in [
                format!("/tmp/.X11-unix/X{number}"),
                format!("/tmp/.X{number}-lock"),
            ] {
                if Path::new(&path).exists() {
                    found.push(format!("display file {path} left"));
                }
            }
        }
        if let Some(dir) = self.session_dir.as_ref().filter(|dir| dir.path().exists()) {
            found.push(format!("session directory {} left", dir.path().display()));
        }
        found
    }
}

/// `VmRSS` of a process, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// `VmRSS` of this process (the in-process broker and the load clients), in KiB.
pub(crate) fn own_rss_kib() -> u64 {
    rss_kib(std::process::id()).unwrap_or(0)
}
