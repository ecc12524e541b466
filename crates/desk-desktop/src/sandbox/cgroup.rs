//! Limits per session: every process of a session's desktop (the sandbox's pid 1, Xvfb, the
//! window manager, the buses, the worker, the app and whatever they fork) runs in the session's
//! own control groups, `deskbroker/<session>-<path digest>` below the broker's own group in
//! the cgroup v1 `memory`, `pids` and `cpu` hierarchies, with a memory limit (the kernel
//! OOM-kills inside the group past it), a process limit (`fork` fails past it) and a CPU quota.
//! A group that still holds processes is never shared: the desktop is refused.
//!
//! Race-free placement without `unsafe` or a wrapper process: cgroup v1 moves single threads
//! (`tasks`), and a child starts in its forking thread's groups. So [`SessionCgroup::spawn_inside`]
//! moves the spawning thread into the session's groups, spawns, and moves the thread back: the
//! child is in the session's groups from its first instruction, before it can fork.
//!
//! The verdict: a group's `memory.oom_control` `oom_kill` count and `pids.events` `max` count
//! say whether the kernel enforced a limit; [`SessionCgroup::verdict`] names it, and the
//! launcher fails the next operation with [`BackendError::ResourceLimit`].
//!
//! Only cgroup v1 is driven here (the hosts this runs on have v1 `memory`, `pids` and `cpu`
//! and a v2 hierarchy without those controllers). Limits are never silently off: where the
//! `memory` or `pids` hierarchy is missing or a group cannot be made in it (a broker that is
//! not root, a cgroup v2-only host), [`SessionCgroup::create`] and [`check_available`] fail
//! with [`BackendError::LimitsUnavailable`] naming the controller, and a sandboxed desktop is
//! refused; only the operator's `--unsafe-no-limits` runs sessions without them, stamped
//! `"limits": "off"` (`desk_contract::desktop::LimitsMode`). The `cpu` quota is best effort.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::BackendError;
use crate::layout::SessionDir;

/// Where the v1 hierarchies are mounted (a launcher's `cgroup_root` may name another place:
/// a test points it where no group can be made).
pub(crate) const CGROUP_ROOT: &str = "/sys/fs/cgroup";

fn default_root() -> PathBuf {
    PathBuf::from(CGROUP_ROOT)
}

/// The parent of every session's group, below the broker's own group.
const PARENT: &str = "deskbroker";

/// What a session may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Memory of all the session's processes together (`memory.limit_in_bytes`).
    pub memory_bytes: u64,
    /// Processes and threads of the session (`pids.max`).
    pub pids: u64,
    /// CPU time, in percent of one core (`cpu.cfs_quota_us` over a 100 ms period).
    pub cpu_percent: u32,
}

impl Default for Limits {
    /// 2 GiB, 512 processes and threads, one core.
    fn default() -> Limits {
        Limits {
            memory_bytes: 2 << 30,
            pids: 512,
            cpu_percent: 100,
        }
    }
}

/// One session's groups, recorded in `<session>/cgroup.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCgroup {
    /// The group in each hierarchy, e.g. `memory` → `/sys/fs/cgroup/memory/.../deskbroker/s_x`.
    pub groups: Vec<(String, PathBuf)>,
    /// The limits written.
    pub limits: Limits,
    /// Where the hierarchies are mounted ([`CGROUP_ROOT`] in a record from before it was kept).
    #[serde(default = "default_root")]
    pub root: PathBuf,
}

/// The controllers used, each with its hierarchy's directory name.
const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// This thread's group in the v1 hierarchy of `controller` mounted below `root`, from
/// `/proc/thread-self/cgroup`.
fn own_group(root: &Path, controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/thread-self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        names
            .split(',')
            .any(|name| name == controller)
            .then(|| root.join(controller).join(path.trim_start_matches('/')))
    })
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

fn io_error(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> BackendError {
    let what = format!("{what} {}", path.display());
    move |source| BackendError::Spawn { what, source }
}

/// The group name of the session at `session_dir`: the session's id and a digest of the
/// directory's full path, so that two brokers (or two tests) on one host whose sessions share
/// an id never share a group.
fn group_name(session_dir: &Path) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let id = session_dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_string());
    // SipHash with fixed keys: the same path gives the same name (it is recorded anyway).
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    session_dir.hash(&mut hasher);
    format!("{id}-{:08x}", hasher.finish() & 0xffff_ffff)
}

/// The group of `controller` named `name` below this thread's own group (under `root`), made
/// if missing; [`BackendError::LimitsUnavailable`] when the hierarchy is missing or the group
/// cannot be made.
fn make_group(root: &Path, controller: &str, name: &str) -> Result<PathBuf, BackendError> {
    let own = own_group(root, controller)
        .filter(|own| own.join("tasks").exists())
        .ok_or_else(|| {
            BackendError::LimitsUnavailable(format!(
                "no cgroup v1 {controller} hierarchy (cgroup v2 is not driven)"
            ))
        })?;
    let group = own.join(PARENT).join(name);
    std::fs::create_dir_all(&group).map_err(|error| {
        BackendError::LimitsUnavailable(format!(
            "cannot create a cgroup v1 {controller} group: {error}"
        ))
    })?;
    Ok(group)
}

/// Whether this host can give a session its limits: a group can be made (and removed) in the
/// v1 `memory` and `pids` hierarchies below `root`. Asked before each new lease by a factory
/// that requires limits; [`BackendError::LimitsUnavailable`] names the controller and why.
pub fn check_available(root: &Path) -> Result<(), BackendError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "probe-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    );
    for controller in ["memory", "pids"] {
        let group = make_group(root, controller, &name)?;
        if let Err(error) = std::fs::remove_dir(&group) {
            tracing::warn!(%error, group = %group.display(), "failed to remove a probe cgroup");
        }
    }
    Ok(())
}

impl SessionCgroup {
    /// Creates the session's groups (named by [`group_name`]) below the hierarchies mounted at
    /// `root` with `limits`, records them in the session directory and returns them;
    /// [`BackendError::LimitsUnavailable`] when this host offers no writable v1 `memory` and
    /// `pids` hierarchies (the `cpu` quota is left out where it cannot be set).
    pub fn create(
        session_dir: &SessionDir,
        limits: Limits,
        root: &Path,
    ) -> Result<SessionCgroup, BackendError> {
        let name = group_name(session_dir.path());
        let mut groups = Vec::new();
        for controller in CONTROLLERS {
            let group = match make_group(root, controller, &name) {
                Ok(group) => group,
                Err(error) if controller == "cpu" => {
                    tracing::warn!(%error, "no CPU quota for the session");
                    continue;
                }
                Err(error) => {
                    // Nothing half made is left behind.
                    for (_, made) in &groups {
                        let _ = std::fs::remove_dir(made);
                    }
                    return Err(error);
                }
            };
            // A group left by an earlier desktop of this session is reused only when empty:
            // never share limits (or a removal) with processes that still run in it.
            let procs = std::fs::read_to_string(group.join("cgroup.procs")).unwrap_or_default();
            if !procs.trim().is_empty() {
                return Err(BackendError::DesktopFailed(format!(
                    "the cgroup {} already holds processes",
                    group.display()
                )));
            }
            groups.push((controller.to_string(), group));
        }
        let cgroup = SessionCgroup {
            groups,
            limits,
            root: root.to_path_buf(),
        };
        for (controller, group) in &cgroup.groups {
            let (file, value) = match controller.as_str() {
                "memory" => ("memory.limit_in_bytes", limits.memory_bytes.to_string()),
                "pids" => ("pids.max", limits.pids.to_string()),
                _ => (
                    "cpu.cfs_quota_us",
                    (u64::from(limits.cpu_percent) * 1_000).to_string(),
                ),
            };
            if controller == "cpu" {
                let _ = write(&group.join("cpu.cfs_period_us"), "100000");
            }
            let path = group.join(file);
            write(&path, &value).map_err(io_error("the limit", &path))?;
        }
        let path = session_dir.cgroup_file();
        let text = serde_json::to_string_pretty(&cgroup).map_err(|error| {
            BackendError::DesktopFailed(format!("failed to encode {}: {error}", path.display()))
        })?;
        std::fs::write(&path, text).map_err(io_error("the cgroup record", &path))?;
        Ok(cgroup)
    }

    /// The groups recorded for the session in `session_dir`, if any.
    pub fn load(session_dir: &SessionDir) -> Option<SessionCgroup> {
        let text = std::fs::read_to_string(session_dir.cgroup_file()).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Runs `spawn` with this thread in the session's groups, so that the process it starts
    /// (and everything that process forks) is in them from its start; the thread then returns
    /// to its own groups.
    pub fn spawn_inside<T>(&self, spawn: impl FnOnce() -> T) -> Result<T, BackendError> {
        let tid = nix::unistd::gettid().as_raw().to_string();
        let mut moved = Vec::new();
        let mut failure = None;
        for (controller, group) in &self.groups {
            let Some(own) = own_group(&self.root, controller) else {
                continue;
            };
            let tasks = group.join("tasks");
            match write(&tasks, &tid) {
                Ok(()) => moved.push(own),
                Err(source) => {
                    failure = Some(BackendError::Spawn {
                        what: format!("a desktop process in {}", group.display()),
                        source,
                    });
                    break;
                }
            }
        }
        let result = failure.is_none().then(spawn);
        for own in moved {
            if let Err(error) = write(&own.join("tasks"), &tid) {
                tracing::error!(%error, group = %own.display(), "failed to move a broker thread back");
            }
        }
        match (result, failure) {
            (Some(result), _) => Ok(result),
            (None, Some(failure)) => Err(failure),
            (None, None) => Err(BackendError::DesktopFailed(
                "the session's cgroup refused the process".to_string(),
            )),
        }
    }

    /// The limit the kernel enforced, if any: the memory group's OOM kills or the pids group's
    /// refused forks.
    pub fn verdict(&self) -> Option<String> {
        let mut reasons = Vec::new();
        for (controller, group) in &self.groups {
            match controller.as_str() {
                "memory" => {
                    let kills = counter(&group.join("memory.oom_control"), "oom_kill");
                    if kills > 0 {
                        reasons.push(format!(
                            "the session's memory limit ({} MiB) was reached: the kernel killed \
                             {kills} process(es)",
                            self.limits.memory_bytes >> 20
                        ));
                    }
                }
                "pids" => {
                    let refused = counter(&group.join("pids.events"), "max");
                    if refused > 0 {
                        reasons.push(format!(
                            "the session's process limit ({}) was reached: {refused} fork(s) \
                             refused",
                            self.limits.pids
                        ));
                    }
                }
                _ => {}
            }
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// The pids still in the session's groups.
    pub fn members(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self
            .groups
            .iter()
            .filter_map(|(_, group)| std::fs::read_to_string(group.join("cgroup.procs")).ok())
            .flat_map(|text| {
                text.lines()
                    .filter_map(|line| line.trim().parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Kills whatever is left in the groups (SIGKILL) and removes them; `false` when a group
    /// could not be removed (a process survived).
    pub fn remove(&self) -> bool {
        for pid in self.members() {
            if let Ok(raw) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(raw),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut removed = true;
        for (_, group) in &self.groups {
            loop {
                match std::fs::remove_dir(group) {
                    Ok(()) => break,
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => break,
                    Err(error) => {
                        if std::time::Instant::now() >= deadline {
                            tracing::warn!(%error, group = %group.display(), "failed to remove a session cgroup");
                            removed = false;
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                }
            }
        }
        removed
    }
}

/// The value of `key` in a `key value` lines file (0 when absent or unreadable).
fn counter(path: &Path, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (name, value) = line.split_once(' ')?;
                (name == key).then(|| value.trim().parse().ok())?
            })
        })
        .unwrap_or(0)
}

/// Removes the groups recorded for the session in `session_dir` (after its processes were
/// killed); nothing when none were.
pub(crate) fn remove_recorded(session_dir: &SessionDir) -> bool {
    SessionCgroup::load(session_dir).is_none_or(|cgroup| cgroup.remove())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_by_name() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = dir.path().join("memory.oom_control");
        std::fs::write(&path, "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(counter(&path, "oom_kill"), 3);
        assert_eq!(counter(&path, "under_oom"), 0);
        assert_eq!(counter(&dir.path().join("absent"), "max"), 0);
    }
}
