//! What the load benchmark reads from the host: a session's recorded processes and display, their
//! resident memory (the probe mode's RSS; `--desktops`' PSS of every recorded process and its
//! descendants, read as `bench run`'s sampler does), the host's memory and load average, and
//! what is left behind after release.
//!
//! A recorded process counts as alive only while `/proc/PID/stat` shows the same start time as
//! recorded (pid reuse cannot fool it) and it is not a zombie.

use std::collections::{HashMap, HashSet};
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

    /// `(Pss, Rss)` in KiB of the session's recorded processes and all their descendants (the
    /// sandbox's Xvfb, window manager, buses, app and worker), given the host's parent → children
    /// map (`bench::memory::child_map`, read once for all sessions).
    pub(crate) fn memory_kib(&self, children: &HashMap<u32, Vec<u32>>) -> (u64, u64) {
        let mut pids: HashSet<u32> = HashSet::new();
        let mut stack: Vec<u32> = self
            .processes
            .iter()
            .filter(|process| process.is_alive())
            .map(|process| process.pid)
            .collect();
        while let Some(pid) = stack.pop() {
            if pids.insert(pid)
                && let Some(kids) = children.get(&pid)
            {
                stack.extend(kids);
            }
        }
        pids.into_iter()
            .filter_map(crate::bench::memory::memory_kib)
            .fold((0, 0), |(pss, rss), (p, r)| (pss + p, rss + r))
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

/// `(MemTotal, MemAvailable)` of the host in MiB, from `/proc/meminfo`.
pub(crate) fn host_memory_mib() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|line| line.strip_prefix(name))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()
            .map(|kib| kib / 1024)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` writes them.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
