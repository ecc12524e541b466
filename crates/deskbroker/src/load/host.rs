//! What the load benchmark reads from the host: a session's recorded processes and display, their
//! resident memory, and what is left behind after release.
//!
//! A recorded process counts as alive only while `/proc/PID/stat` shows the same start time as
//! recorded (pid reuse cannot fool it) and it is not a zombie.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One process a session's launcher recorded in `processes.json`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Recorded {
    pub(crate) role: String,
    pub(crate) pid: u32,
    pub(crate) start_ticks: u64,
}

#[derive(Deserialize)]
struct DesktopRecord {
    display_name: String,
}

/// A session's footprint on the host, read while it runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Footprint {
    pub(crate) processes: Vec<Recorded>,
    /// The X display number, e.g. 3 for `:3`.
    pub(crate) display_number: Option<u32>,
    pub(crate) session_dir: PathBuf,
}

impl Footprint {
    /// Reads `processes.json` and `desktop.json` of a running session.
    pub(crate) fn read(session_dir: &Path) -> Footprint {
        let processes = std::fs::read_to_string(session_dir.join("processes.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let display_number = std::fs::read_to_string(session_dir.join("desktop.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<DesktopRecord>(&text).ok())
            .and_then(|record| record.display_name.trim_start_matches(':').parse().ok());
        Footprint {
            processes,
            display_number,
            session_dir: session_dir.to_path_buf(),
        }
    }

    /// Resident memory of the session's live processes, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        self.processes
            .iter()
            .filter(|process| alive(process))
            .filter_map(|process| rss_kib(process.pid))
            .sum()
    }

    /// Everything of this session still on the host: live processes, display files, its
    /// directory.
    pub(crate) fn leftovers(&self) -> Vec<String> {
        let mut found: Vec<String> = self
            .processes
            .iter()
            .filter(|process| alive(process))
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
        if self.session_dir.exists() {
            found.push(format!(
                "session directory {} left",
                self.session_dir.display()
            ));
        }
        found
    }
}

/// Field 22 of `/proc/PID/stat` when the process exists and is not a zombie.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace();
    if fields.next()? == "Z" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

fn alive(process: &Recorded) -> bool {
    start_ticks(process.pid) == Some(process.start_ticks)
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
