//! What a desktop leaves on disk for the next broker: its processes (`processes.json`: pid and
//! start time, against pid reuse) and its display (`desktop.json`), read to reattach and to reap
//! a desktop whose broker is gone ([`reap_recorded`]), and the dead display's files removed.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::layout::SessionDir;
use crate::sandbox::Sandbox;

/// A process this launcher started, as recorded on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedProcess {
    /// What it is: `xvfb`, `window_manager`, `worker`, `app`.
    pub role: String,
    /// Its pid, which is also its process group id.
    pub pid: u32,
    /// Its start time in clock ticks since boot (field 22 of `/proc/PID/stat`), guarding against
    /// pid reuse.
    pub start_ticks: u64,
}

/// The display facts a restarted broker needs, recorded in `<session_dir>/desktop.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DesktopRecord {
    /// The X display name, e.g. `:3`.
    pub(crate) display_name: String,
    /// The display size requested at launch.
    pub(crate) width: u32,
    /// The display size requested at launch.
    pub(crate) height: u32,
    /// The sandbox the desktop runs in, when on.
    #[serde(default)]
    pub(crate) sandbox: Option<Sandbox>,
    /// The host directory holding `worker.sock` and the X authority file.
    #[serde(default)]
    pub(crate) run_dir: Option<PathBuf>,
}

/// The start time of a live (not zombie) process, in clock ticks since boot.
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace();
    // Field 3, the state: a zombie has exited and only waits for its parent to reap it.
    if fields.next()? == "Z" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

pub(crate) fn kill_group(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let group = Pid::from_raw(raw);
    let _ = killpg(group, Signal::SIGTERM);
}

pub(crate) fn force_kill_group(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
}

/// Kills the process groups recorded in `session_dir/processes.json` that are still the same
/// processes (same start time). Returns how many were found alive.
pub fn reap_recorded(session_dir: impl AsRef<Path>) -> usize {
    let session_dir = &SessionDir::at(session_dir.as_ref());
    let Ok(text) = std::fs::read_to_string(session_dir.processes_file()) else {
        return 0;
    };
    let Ok(recorded) = serde_json::from_str::<Vec<RecordedProcess>>(&text) else {
        return 0;
    };
    let alive: Vec<&RecordedProcess> = recorded
        .iter()
        .filter(|process| start_ticks(process.pid) == Some(process.start_ticks))
        .collect();
    for process in &alive {
        tracing::info!(role = %process.role, pid = process.pid, "reaping leftover process group");
        kill_group(process.pid);
    }
    if !alive.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
        for process in &alive {
            if start_ticks(process.pid) == Some(process.start_ticks) {
                force_kill_group(process.pid);
            }
        }
    }
    if let (Some(record), Some(xvfb)) = (
        read_desktop_record(session_dir).filter(|record| record.sandbox.is_none()),
        recorded.iter().find(|process| process.role == "xvfb"),
    ) {
        wait_gone(xvfb.pid, xvfb.start_ticks, Duration::from_secs(2));
        remove_display_files(&record.display_name, xvfb.pid);
    }
    crate::sandbox::remove_workspace(session_dir);
    alive.len()
}

/// Writes `text` to `path` through a temporary file and a rename, so a broker killed meanwhile
/// leaves either the old or the new content for its successor.
pub(crate) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

impl RecordedProcess {
    /// Whether this very process (same pid, same start time) is still running.
    pub fn is_alive(&self) -> bool {
        start_ticks(self.pid) == Some(self.start_ticks)
    }
}

/// The processes recorded in `session_dir/processes.json` (empty when there is none).
pub fn recorded_processes(session_dir: impl AsRef<Path>) -> Vec<RecordedProcess> {
    std::fs::read_to_string(SessionDir::at(session_dir.as_ref()).processes_file())
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The X display name recorded for the desktop in `session_dir`, e.g. `:3`.
pub fn recorded_display(session_dir: impl AsRef<Path>) -> Option<String> {
    read_desktop_record(&SessionDir::at(session_dir.as_ref())).map(|record| record.display_name)
}

pub(crate) fn read_desktop_record(session_dir: &SessionDir) -> Option<DesktopRecord> {
    let text = std::fs::read_to_string(session_dir.desktop_file()).ok()?;
    serde_json::from_str(&text).ok()
}

/// Waits until the process `pid` started at `ticks` is gone.
pub(crate) fn wait_gone(pid: u32, ticks: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while start_ticks(pid) == Some(ticks) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Removes what a killed X server `xvfb_pid` (now gone) left of display `display_name`: its lock
/// file when it still names that pid, and its socket when nothing accepts connections on it any
/// more (a live server that reused the display number keeps its socket).
pub(crate) fn remove_display_files(display_name: &str, xvfb_pid: u32) {
    let Some(number) = display_name
        .strip_prefix(':')
        .and_then(|rest| rest.parse::<u32>().ok())
    else {
        return;
    };
    let lock = PathBuf::from(format!("/tmp/.X{number}-lock"));
    let owner = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok());
    if owner == Some(xvfb_pid) {
        remove_display_file(&lock);
    }
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{number}"));
    if let Err(error) = UnixStream::connect(&socket)
        && error.kind() == std::io::ErrorKind::ConnectionRefused
    {
        remove_display_file(&socket);
    }
}

fn remove_display_file(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => tracing::info!(path = %path.display(), "removed a dead display's file"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "failed to remove a dead display's file")
        }
    }
}

/// Removes a socket file a previous desktop of the session left at `path` (`what` names it in
/// the error); a missing one is fine.
pub(crate) fn remove_stale_socket(path: &Path, what: &str) -> Result<(), crate::BackendError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(crate::BackendError::Spawn {
            what: format!("stale {what} {}", path.display()),
            source,
        }),
    }
}
