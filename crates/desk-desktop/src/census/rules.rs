//! The census's vocabulary: what a session allows ([`CensusRules`], written at reset), the
//! desktop's own helpers, a process as the scanner sees it ([`Seen`]), the snapshot the rules
//! judge ([`Snapshot`]), a [`Violation`] and why a scan could not be taken ([`ScanError`]).
//! Pure data, shared by the rules (`check.rs`), the scanner (`scan.rs`, `members.rs`) and the
//! profiles, naming none of them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::layout::SessionDir;

/// An executable the app may run: a path or a name in the sandbox's `PATH`, resolved inside the
/// sandbox ([`resolve_in`](super::resolve_in)), and how many processes may run it at once.
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

/// The helpers the desktop's own processes run: (parent program, child program, at most
/// this many at once), as written (resolved inside the sandbox before use).
pub(crate) const DESKTOP_CHILDREN: &[(&str, &str, u32)] = &[
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
pub(crate) const HOLDER_ADOPTS: &[&str] = &["/usr/libexec/at-spi2-registryd"];

/// The desktop's own programs (besides the worker, the holder's program): one that a launch
/// wrapper (`nsenter`) on the host starts is the desktop's even while its wrapper is not (or no
/// longer) in `processes.json`, as around a desktop's restart or stop. The app is never among
/// them: it comes only through its recorded wrapper.
pub(crate) const DESKTOP_PROGRAMS: &[&str] = &[
    "Xvfb",
    "openbox",
    "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher",
];

/// Programs a recorded wrapper's child runs for an instant before the program it names.
pub(crate) const LAUNCH_STAGES: &[&str] = &["nsenter", "env"];

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

/// The namespace's processes and what the launcher recorded, as [`check`](super::check) needs them.
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

/// Why a census could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// The session records no sandbox (none yet, or a desktop without one): nothing to count.
    NoSandbox,
    /// The sandbox's holder is gone (the sandbox ended).
    HolderGone,
}
