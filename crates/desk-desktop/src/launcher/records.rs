//! What a desktop leaves on disk for the next broker: its processes (`processes.json`: pid and
//! start time, against pid reuse) and its display (`desktop.json`), read to reattach and to reap
//! a desktop whose broker is gone ([`reap_recorded`]), and the dead display's files removed.
//!
//! Just over 400 lines: the records, the reap and its proof share the pid and start-time rules.

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

/// Kills everything of the desktop recorded in `session_dir` and proves it gone: the sandbox's
/// pid 1 with SIGKILL first (the kernel then kills every process of its pid namespace: the
/// app, Xvfb, the worker, whatever they forked), every recorded process group that still has a
/// member SIGTERM, then after a grace SIGKILL whether or not its leader lives, and a wait until
/// no recorded process, member of a recorded group, or sandbox pid 1 is left ([`survivors`]).
/// Returns how many recorded processes were found alive; survivors are logged as errors.
pub fn reap_recorded(session_dir: impl AsRef<Path>) -> usize {
    let session_dir = &SessionDir::at(session_dir.as_ref());
    let Ok(text) = std::fs::read_to_string(session_dir.processes_file()) else {
        return 0;
    };
    let Ok(recorded) = serde_json::from_str::<Vec<RecordedProcess>>(&text) else {
        return 0;
    };
    let record = read_desktop_record(session_dir);
    let holder = record
        .as_ref()
        .and_then(|record| sandbox_holder(record, &recorded));
    let alive = recorded.iter().filter(|process| process.is_alive()).count();
    for process in recorded.iter().filter(|process| process.is_alive()) {
        tracing::info!(role = %process.role, pid = process.pid, "reaping leftover process group");
    }
    let left = kill_and_prove(
        &recorded,
        holder.as_ref(),
        Duration::from_millis(300),
        REAP_PROOF,
    );
    if !left.is_empty() {
        tracing::error!(?left, "processes of a reaped desktop are still running");
    }
    crate::sandbox::cgroup::remove_recorded(session_dir);
    if let (Some(record), Some(xvfb)) = (
        record.filter(|record| record.sandbox.is_none()),
        recorded.iter().find(|process| process.role == "xvfb"),
    ) {
        wait_gone(xvfb.pid, xvfb.start_ticks, Duration::from_secs(2));
        remove_display_files(&record.display_name, xvfb.pid);
    }
    crate::sandbox::remove_workspace(session_dir);
    alive
}

/// How long reaping waits for the kernel to finish off what it killed.
const REAP_PROOF: Duration = Duration::from_secs(3);

/// The sandbox's pid 1 (the holder, `desktop.json`) when it is still the process the recorded
/// bwrap started: pid 1 of a pid namespace of its own, started no earlier than the recorded
/// `sandbox` process and within a minute of it (against pid reuse). Recorded with role
/// `sandbox_init`.
pub(crate) fn sandbox_holder(
    record: &DesktopRecord,
    recorded: &[RecordedProcess],
) -> Option<RecordedProcess> {
    let pid = record.sandbox.as_ref()?.holder_pid;
    let bwrap = recorded.iter().find(|process| process.role == "sandbox")?;
    let ticks = start_ticks(pid)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let ns_pids: Vec<&str> = status
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))?
        .split_whitespace()
        .collect();
    let innermost_is_one = ns_pids.len() > 1 && ns_pids.last() == Some(&"1");
    // Clock ticks are 100 a second on Linux: a minute is generous for bwrap's fork.
    let started_with_bwrap =
        ticks >= bwrap.start_ticks && ticks <= bwrap.start_ticks.saturating_add(6_000);
    (innermost_is_one && started_with_bwrap).then(|| RecordedProcess {
        role: "sandbox_init".to_string(),
        pid,
        start_ticks: ticks,
    })
}

/// Every live (not zombie) process as (pid, process group, start time): one pass over `/proc`.
fn scan_processes() -> Vec<(u32, u32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| group_and_ticks(pid).map(|(group, ticks)| (pid, group, ticks)))
        .collect()
}

/// The live members of `leader`'s process group in `scan`: every process whose group is the
/// leader's pid and which started no earlier than the leader (a group's members are born
/// after it; a pid reused later is never taken for one), the leader included.
fn members_in(scan: &[(u32, u32, u64)], leader: &RecordedProcess) -> Vec<u32> {
    // A pid number is free for reuse only once no process, group or session holds it: a live
    // process at the leader's pid that is not the leader means the group is gone.
    let reused = scan
        .iter()
        .any(|(pid, _, ticks)| *pid == leader.pid && *ticks != leader.start_ticks);
    if reused {
        return Vec::new();
    }
    scan.iter()
        .filter(|(_, group, ticks)| *group == leader.pid && *ticks >= leader.start_ticks)
        .map(|(pid, _, _)| *pid)
        .collect()
}

/// The process group and start time of a live (not zombie) process.
fn group_and_ticks(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if *fields.first()? == "Z" {
        return None;
    }
    Some((fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// What is still running of `recorded` and `holder`: each recorded process and the holder by
/// pid and start time, and every live member of a recorded process group, as `role (pid N)`.
pub(crate) fn survivors(
    recorded: &[RecordedProcess],
    holder: Option<&RecordedProcess>,
) -> Vec<String> {
    let scan = scan_processes();
    let alive = |process: &RecordedProcess| {
        scan.iter()
            .any(|(pid, _, ticks)| *pid == process.pid && *ticks == process.start_ticks)
    };
    let mut left = Vec::new();
    for process in holder.into_iter().chain(recorded) {
        if alive(process) {
            left.push(format!("{} (pid {})", process.role, process.pid));
        }
    }
    for process in recorded {
        for member in members_in(&scan, process) {
            if member != process.pid {
                left.push(format!("{} group member (pid {member})", process.role));
            }
        }
    }
    left
}

/// Kills `holder` (SIGKILL) and every recorded group with a live member: SIGTERM, `grace`,
/// SIGKILL (leader alive or not), then waits up to `proof` until [`survivors`] is empty and
/// returns what is left. A zero `grace` sends SIGKILL at once, `worker` role first; with a
/// live `holder`, the worker itself, then the holder, whose pid namespace is waited out
/// (up to [`HOLDER_FIRST`]) before the groups' leaders, the `nsenter`s, are killed.
pub(crate) fn kill_and_prove(
    recorded: &[RecordedProcess],
    holder: Option<&RecordedProcess>,
    grace: Duration,
    proof: Duration,
) -> Vec<String> {
    let mut ordered: Vec<&RecordedProcess> = recorded.iter().collect();
    ordered.sort_by_key(|process| process.role != "worker");
    // Groups with a live member, from one pass over /proc.
    let with_members = || -> Vec<&RecordedProcess> {
        let scan = scan_processes();
        ordered
            .iter()
            .copied()
            .filter(|process| !members_in(&scan, process).is_empty())
            .collect()
    };
    let mut groups = with_members();
    let live_holder = holder.filter(|holder| holder.is_alive());
    if grace.is_zero() {
        // Destruction: the worker (the only process that sends input) before anything else.
        // In a sandbox, only the worker itself: its group's leader is the `nsenter` outside
        // the pid namespace that is its parent, left to reap it (below).
        let scan = scan_processes();
        for process in groups.iter().filter(|process| process.role == "worker") {
            let members = members_in(&scan, process);
            let inside: Vec<u32> = members
                .iter()
                .copied()
                .filter(|member| *member != process.pid)
                .collect();
            if live_holder.is_some() && !inside.is_empty() {
                for member in inside {
                    kill_pid(member);
                }
            } else {
                force_kill_group(process.pid);
            }
        }
    }
    if let Some(holder) = live_holder {
        tracing::info!(
            pid = holder.pid,
            "killing the sandbox's pid 1 and its pid namespace"
        );
        kill_pid(holder.pid);
        if grace.is_zero() {
            // The sandbox's processes are children of `nsenter`s outside its pid namespace,
            // recorded as the leaders of their groups. Killed together with their children,
            // they would leave them to the host's init, and the sandbox's pid 1 stays in its
            // exit until that init reaps them (a lazy init: seconds). Alive, they reap their
            // children at once; so the namespace goes first, the groups after.
            let deadline = Instant::now() + proof.min(HOLDER_FIRST);
            while holder.is_alive() && Instant::now() < deadline {
                std::thread::sleep(HOLDER_POLL);
            }
            groups = with_members();
        }
    }
    if !grace.is_zero() && !groups.is_empty() {
        for process in &groups {
            kill_group(process.pid);
        }
        std::thread::sleep(grace);
        groups = with_members();
    }
    for process in &groups {
        force_kill_group(process.pid);
    }
    let deadline = Instant::now() + proof;
    loop {
        let left = survivors(recorded, holder);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        // A member forked between the scan and the signal: signal the groups again.
        for process in with_members() {
            force_kill_group(process.pid);
        }
        std::thread::sleep(PROOF_POLL);
    }
}

/// How often killing looks again whether what it killed is gone (one pass over `/proc`).
const PROOF_POLL: Duration = Duration::from_millis(10);

/// How often destruction looks whether the sandbox's pid 1 is gone (one `/proc` file).
const HOLDER_POLL: Duration = Duration::from_millis(2);

/// How long destruction waits for the sandbox's pid namespace to be gone before it kills the
/// `nsenter` parents of its processes anyway (they reap their children within milliseconds).
const HOLDER_FIRST: Duration = Duration::from_millis(500);

fn kill_pid(pid: u32) {
    if let Ok(raw) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(Pid::from_raw(raw), Signal::SIGKILL);
    }
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
