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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::layout::SessionDir;

mod check;
mod members;
mod scan;

pub use check::check;
pub use scan::{Census, ScanError, confirmed_violation, scan, scan_full};

/// An executable the app may run: a path or a name in the sandbox's `PATH`, resolved inside the
/// sandbox ([`resolve_in`]), and how many processes may run it at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedExecutable {
    /// The program, an absolute path or a name looked up in the sandbox's `PATH`.
    pub path: String,
    /// At most this many processes at once (1 by default).
    #[serde(default = "one")]
    pub max: u32,
}

fn one() -> u32 {
    1
}

/// What the census of one session allows beyond the desktop's own processes, written by the
/// broker at reset (`<session>/census.json`) and read by the watchdog.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CensusRules {
    /// The executables of the app's process tree (its entry included), as the profile names them.
    pub app: Vec<AllowedExecutable>,
}

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

    /// Writes the rules to `<session>/census.json` (through a rename).
    pub fn write(&self, session_dir: &SessionDir) -> std::io::Result<()> {
        let path = session_dir.census_file();
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &path)
    }

    /// The rules recorded for the session, `None` when there are none (no reset yet, or a
    /// desktop without a census).
    pub fn read(session_dir: &SessionDir) -> Option<CensusRules> {
        let text = std::fs::read_to_string(session_dir.census_file()).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// The `PATH` a program name is looked up in (the sandbox's, [`crate::sandbox::SAFE_PATH`]).
fn search_path() -> impl Iterator<Item = &'static str> {
    crate::sandbox::SAFE_PATH.split(':')
}

/// `program` as a canonical host path: an absolute path with its links followed, or a name
/// found in the sandbox's `PATH` (the sandbox shows the host's `/usr` at the same place).
pub fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return std::fs::canonicalize(program).ok();
    }
    search_path()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
        .and_then(|path| std::fs::canonicalize(path).ok())
}

/// How many symbolic links one resolution follows at most.
const MAX_LINKS: usize = 40;

/// `program` as the sandbox whose root the host reaches at `root` shows it: an absolute path
/// or a name found in the sandbox's `PATH`, its links followed inside that root (an absolute
/// link starts again at the sandbox's root), as a path inside (`/usr/bin/…`). `None` for
/// `root`: the host's own view ([`resolve_program`]).
pub fn resolve_in(root: Option<&Path>, program: &str) -> Option<String> {
    let Some(root) = root else {
        return resolve_program(program).map(|path| path.display().to_string());
    };
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        search_path()
            .map(|dir| Path::new(dir).join(program))
            .collect()
    };
    candidates
        .iter()
        .filter_map(|candidate| walk_inside(root, candidate))
        .find(|inside| std::fs::metadata(below(root, inside)).is_ok_and(|meta| meta.is_file()))
        .map(|inside| inside.display().to_string())
}

/// `inside` (a path inside the sandbox) as the host reaches it below `root`.
pub(crate) fn below(root: &Path, inside: &Path) -> PathBuf {
    root.join(inside.strip_prefix("/").unwrap_or(inside))
}

/// `path` with its links followed inside `root`; `None` past [`MAX_LINKS`] links or when a
/// component is missing.
fn walk_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let push_all = |pending: &mut Vec<std::ffi::OsString>, path: &Path| {
        for part in path.components().rev() {
            match part {
                Component::Normal(name) => pending.push(name.to_os_string()),
                Component::ParentDir => pending.push("..".into()),
                _ => {}
            }
        }
    };
    push_all(&mut pending, path);
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&name);
        let meta = std::fs::symlink_metadata(below(root, &next)).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let target = std::fs::read_link(below(root, &next)).ok()?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            push_all(&mut pending, &target);
        } else {
            current = next;
        }
    }
    Some(current)
}

/// The helpers the desktop's own processes run: (parent program, child program, at most
/// this many at once), as written (resolved inside the sandbox before use).
pub const DESKTOP_CHILDREN: &[(&str, &str, u32)] = &[
    // Xvfb compiles its keymap with `sh -c "xkbcomp …"` at start.
    ("Xvfb", "sh", 1),
    ("Xvfb", "xkbcomp", 1),
    ("sh", "xkbcomp", 1),
    // at-spi-bus-launcher starts the AT-SPI bus, which activates the registry.
    ("/usr/libexec/at-spi-bus-launcher", "dbus-daemon", 1),
    // Each forks before it execs its child: under load the fork is seen, still running its
    // parent's program, in both of a confirmation's scans (seen in CI).
    (
        "/usr/libexec/at-spi-bus-launcher",
        "/usr/libexec/at-spi-bus-launcher",
        1,
    ),
    ("dbus-daemon", "dbus-daemon", 2),
    ("dbus-daemon", "/usr/libexec/at-spi2-registryd", 1),
    (
        "/usr/libexec/at-spi-bus-launcher",
        "/usr/libexec/at-spi2-registryd",
        1,
    ),
];

/// The desktop's helpers the holder adopts as orphans: the AT-SPI registry, which the
/// accessibility bus activates as a daemon (its parent exits; measured with LibreCAD). Their
/// `max` is [`DESKTOP_CHILDREN`]'s.
pub const HOLDER_ADOPTS: &[&str] = &["/usr/libexec/at-spi2-registryd"];

/// The desktop's own programs (besides the worker, the holder's program): one that a launch
/// wrapper (`nsenter`) on the host starts is the desktop's even while its wrapper is not (or no
/// longer) in `processes.json`, as around a desktop's restart or stop. The app is never among
/// them: it comes only through its recorded wrapper.
pub const DESKTOP_PROGRAMS: &[&str] = &[
    "Xvfb",
    "openbox",
    "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher",
];

/// Programs a recorded wrapper's child runs for an instant before the program it names.
pub const LAUNCH_STAGES: &[&str] = &["nsenter", "env"];

/// How a process's program compares with the host's file at the same path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExeIdentity {
    /// The same file (device and inode) as the one the sandbox shows at that path.
    Host,
    /// The file was deleted or replaced on the host after the process started it
    /// (`… (deleted)`).
    Deleted,
    /// Another file than the one the sandbox shows at that path (or it shows none there): a
    /// program mounted over it in a nested namespace, say.
    Foreign,
}

/// One process of the namespace as the scanner saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// Host pid.
    pub pid: u32,
    /// Host pid of its parent.
    pub ppid: u32,
    /// Start time in clock ticks since boot.
    pub start_ticks: u64,
    /// Its program (`/proc/<pid>/exe`, without ` (deleted)`), `None` for a zombie or a process
    /// gone while read.
    pub exe: Option<String>,
    /// How `exe` compares with the host's file.
    pub identity: ExeIdentity,
}

/// A recorded wrapper of the launcher and the program it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// Its role (`xvfb`, `worker`, `app`, …).
    pub role: String,
    /// The program it names, resolved inside the sandbox (`None`: unreadable).
    pub program: Option<String>,
}

/// The namespace's processes and what the launcher recorded, as [`check`] needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The holder's host pid.
    pub holder: u32,
    /// The sandbox's root as the host reaches it (`/proc/<holder>/root`), where program names
    /// are resolved; `None`: the host's own view.
    pub root: Option<PathBuf>,
    /// The launcher's live wrappers by host pid.
    pub wrappers: BTreeMap<u32, Wrapper>,
    /// Parents outside the namespace that are launch wrappers on the host (`nsenter`), whether
    /// `processes.json` lists them yet or not.
    pub launch_parents: std::collections::BTreeSet<u32>,
    /// Whether a recorded wrapper (other than the holder) has died: its program, still dying
    /// or left behind, is then parented outside the sandbox (by the host's init). The desktop
    /// has failed, and the liveness check before the next operation names the dead process
    /// (`desktop_failed`); the census does not call such an orphan prohibited.
    pub wrapper_died: bool,
    /// Every process of the namespace (the holder included).
    pub processes: Vec<Seen>,
}

/// A process the census does not allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Host pid.
    pub pid: u32,
    /// Its start time (with `pid`, its identity).
    pub start_ticks: u64,
    /// Its program.
    pub exe: String,
    /// Its command line (arguments joined by spaces; filled by the scanner).
    pub cmdline: String,
    /// Its parent's host pid.
    pub parent_pid: u32,
    /// Its parent's program (`None`: outside the namespace or unreadable).
    pub parent_exe: Option<String>,
    /// Why it is not allowed.
    pub why: String,
}

#[cfg(test)]
#[path = "census_tests.rs"]
mod tests;
