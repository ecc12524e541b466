//! The census's view of `/proc`: the processes of a session's sandbox found on the host by
//! their pid namespace (the holder's, from `desktop.json`; which ones: `census/members.rs`,
//! tracked or by the full scan), each with its parent, start time
//! and program, and the launcher's live wrappers from `processes.json` with the program each
//! names. Root reads every process's `exe`; a broker that is not root owns the sandbox's user
//! namespace and reads them too.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::time::{Duration, Instant};

use std::path::Path;

use super::members::{Way, forget, full_scan, keep_resolutions, members, resolutions, stat};
use super::{
    CensusRules, ExeIdentity, Resolved, ScanError, Seen, Snapshot, Violation, Wrapper, below,
    check_with, resolve_kept,
};
use crate::launcher::recorded_processes;
use crate::layout::SessionDir;

/// How long [`confirmed_violation`] waits before it looks again.
const CONFIRM_AFTER: Duration = Duration::from_millis(50);

/// The longest command line a violation records (bytes).
const MAX_CMDLINE: usize = 1024;

/// One census of a session's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Census {
    /// Every process of the namespace, in pid order.
    pub processes: Vec<Seen>,
    /// The processes the rules do not allow, with their command lines.
    pub violations: Vec<Violation>,
    /// How long the scan took.
    pub elapsed: Duration,
}

/// The program of `pid` and how it compares with the file the sandbox (its root reached at
/// `root`) shows at that path; `shown` caches that file's `(device, inode)` per path for one
/// scan.
fn exe(
    pid: u32,
    root: &Path,
    shown: &mut BTreeMap<String, Option<(u64, u64)>>,
) -> Option<(String, ExeIdentity)> {
    let link = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let link = link.to_string_lossy();
    if let Some(path) = link.strip_suffix(" (deleted)") {
        return Some((path.to_string(), ExeIdentity::Deleted));
    }
    let path = link.to_string();
    let theirs = std::fs::metadata(format!("/proc/{pid}/exe"))
        .ok()
        .map(|meta| (meta.dev(), meta.ino()));
    let ours = *shown.entry(path.clone()).or_insert_with(|| {
        std::fs::metadata(below(root, Path::new(&path)))
            .ok()
            .map(|meta| (meta.dev(), meta.ino()))
    });
    let identity = match (theirs, ours) {
        (Some(theirs), Some(ours)) if theirs == ours => ExeIdentity::Host,
        _ => ExeIdentity::Foreign,
    };
    Some((path, identity))
}

/// The command line of `pid`, arguments joined by spaces, control characters replaced, at
/// most [`MAX_CMDLINE`] bytes.
pub(crate) fn cmdline(pid: u32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text: String = String::from_utf8_lossy(&bytes)
        .trim_end_matches('\0')
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut end = text.len().min(MAX_CMDLINE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The program a launcher wrapper (`nsenter … -- env -C DIR -- PROGRAM …`) names, resolved
/// inside the sandbox (from `resolved` when that name was resolved before).
fn wrapper_program(pid: u32, root: &Path, resolved: &mut Resolved) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = bytes.split(|byte| *byte == 0).collect();
    let env = args.iter().position(|arg| *arg == b"env")?;
    let rest = args.get(env + 1..)?;
    let program = match rest {
        [flag, _dir, dashes, program, ..] if *flag == b"-C" && *dashes == b"--" => program,
        [dashes, program, ..] if *dashes == b"--" => program,
        _ => return None,
    };
    let program = std::str::from_utf8(program).ok()?;
    resolve_kept(Some(root), program, resolved)
}

/// The sandbox holder's host pid recorded in `desktop.json`.
fn holder_pid(session_dir: &SessionDir) -> Option<u32> {
    #[derive(serde::Deserialize)]
    struct Record {
        sandbox: Option<crate::sandbox::Sandbox>,
    }
    let text = std::fs::read_to_string(session_dir.desktop_file()).ok()?;
    let record: Record = serde_json::from_str(&text).ok()?;
    record.sandbox.map(|sandbox| sandbox.holder_pid)
}

/// Takes one census of the sandbox of `session_dir` against `rules`, its members found the
/// tracked way when it can (`census/members.rs`), else by the full scan.
pub fn scan(session_dir: &SessionDir, rules: &CensusRules) -> Result<Census, ScanError> {
    scan_with(session_dir, rules, true)
}

/// Takes one census as [`scan`] does, its members always found by the full scan of the host's
/// `/proc` (the authority the tracked way is checked against).
pub fn scan_full(session_dir: &SessionDir, rules: &CensusRules) -> Result<Census, ScanError> {
    scan_with(session_dir, rules, false)
}

fn scan_with(
    session_dir: &SessionDir,
    rules: &CensusRules,
    tracked: bool,
) -> Result<Census, ScanError> {
    let started = Instant::now();
    let holder = holder_pid(session_dir).ok_or(ScanError::NoSandbox)?;
    let Ok(namespace) = std::fs::read_link(format!("/proc/{holder}/ns/pid")) else {
        forget(holder);
        return Err(ScanError::HolderGone);
    };
    let root = std::path::PathBuf::from(format!("/proc/{holder}/root"));
    let (members, way) = if tracked {
        members(holder, &namespace)?
    } else {
        (full_scan(&namespace)?, Way::Full)
    };
    let mut shown = BTreeMap::new();
    let mut processes = Vec::new();
    for pid in members {
        let Some((state, ppid, start_ticks)) = stat(pid) else {
            continue;
        };
        let (exe, identity) = match exe(pid, &root, &mut shown) {
            Some((path, identity)) if state != 'Z' => (Some(path), identity),
            _ => (None, ExeIdentity::Host),
        };
        processes.push(Seen {
            pid,
            ppid,
            start_ticks,
            exe,
            identity,
        });
    }
    processes.sort_by_key(|seen| seen.pid);
    let inside: std::collections::BTreeSet<u32> = processes.iter().map(|seen| seen.pid).collect();
    let launch_parents = processes
        .iter()
        .map(|seen| seen.ppid)
        .filter(|ppid| !inside.contains(ppid))
        .filter(|ppid| {
            std::fs::read_link(format!("/proc/{ppid}/exe"))
                .is_ok_and(|exe| exe.file_name().is_some_and(|name| name == "nsenter"))
        })
        .collect();
    if !processes.iter().any(|seen| seen.pid == holder) {
        forget(holder);
        return Err(ScanError::HolderGone);
    }
    // Read after the listing: a wrapper whose child was listed was recorded before (or is
    // caught by the confirmation a moment later).
    let recorded: Vec<_> = recorded_processes(session_dir.path())
        .into_iter()
        .filter(|process| process.pid != holder)
        .collect();
    let wrapper_died = recorded.iter().any(|process| !process.is_alive());
    // Names resolved by the earlier scans of this tracking (`members::resolutions`); a full
    // scan resolves every name again.
    let mut resolved = match way {
        Way::Tracked => resolutions(holder),
        Way::Full => Resolved::new(),
    };
    let wrappers = recorded
        .into_iter()
        .filter(|process| process.is_alive())
        .map(|process| {
            let wrapper = Wrapper {
                role: process.role.clone(),
                program: wrapper_program(process.pid, &root, &mut resolved),
            };
            (process.pid, wrapper)
        })
        .collect();
    let snapshot = Snapshot {
        holder,
        root: Some(root),
        wrappers,
        launch_parents,
        wrapper_died,
        processes,
    };
    let (mut violations, resolved) = check_with(&snapshot, rules, resolved);
    keep_resolutions(holder, resolved);
    for violation in &mut violations {
        violation.cmdline = cmdline(violation.pid);
    }
    let elapsed = started.elapsed();
    tracing::debug!(
        holder,
        way = ?way,
        n_processes = snapshot.processes.len(),
        elapsed_us = elapsed.as_micros() as u64,
        "census taken"
    );
    Ok(Census {
        processes: snapshot.processes,
        violations,
        elapsed,
    })
}

/// A violation seen in two censuses [`CONFIRM_AFTER`] apart (the same process, by pid and
/// start time), else `None` (no sandbox, or nothing prohibited lasted).
pub fn confirmed_violation(session_dir: &SessionDir, rules: &CensusRules) -> Option<Violation> {
    let first = scan(session_dir, rules).ok()?;
    if first.violations.is_empty() {
        return None;
    }
    std::thread::sleep(CONFIRM_AFTER);
    let second = scan(session_dir, rules).ok()?;
    second.violations.into_iter().find(|later| {
        first
            .violations
            .iter()
            .any(|earlier| earlier.pid == later.pid && earlier.start_ticks == later.start_ticks)
    })
}
