//! How many rollouts `bench run` plays at once: `--jobs N` as given, else
//! `desk_harness::plan::default_jobs` over what this machine measures: its cores (the CPUs this
//! process may use), its available memory (`MemAvailable`, lowered by the memory left under any
//! cgroup limit this process runs in, e.g. a pod's), and one desktop's memory: the session
//! memory limit of the largest profile the tasks play in (`Limits::for_profile`, the one home
//! of those numbers), capped by the sessions the in-process broker admits.

use std::path::{Path, PathBuf};

use std::io::Write as _;

use anyhow::Result;
use desk_cad::Task;
use desk_desktop::sandbox::cgroup::Limits;
use desk_harness::RunPlan;
use desk_harness::plan::{JobsBasis, default_jobs};

use super::multi::SpreadArgs;

/// The chosen number of rollouts at once and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChosenJobs {
    pub(crate) jobs: u32,
    pub(crate) reason: String,
}

/// The plan of a `bench run` of `tasks`, its jobs chosen ([`choose`]) and announced on stderr
/// (`bench run: 7 rollouts, 2 at once (default: min(...) = 2)`).
pub(crate) fn plan(
    spread: &SpreadArgs,
    tasks: &[Task],
    default_profile: &str,
) -> Result<(RunPlan, ChosenJobs)> {
    let external = spread.broker_socket.is_some();
    let jobs = choose(spread.jobs, tasks, default_profile, external)?;
    let _ = writeln!(
        std::io::stderr(),
        "bench run: {} rollout{}, {} at once ({})",
        tasks.len(),
        if tasks.len() == 1 { "" } else { "s" },
        jobs.jobs,
        jobs.reason
    );
    Ok((spread.plan(jobs.jobs, &jobs.reason), jobs))
}

/// `--jobs` when given, else the default for `tasks` on this machine. `external`: the desktops
/// are the broker's at `--broker-socket`, whose session cap this run cannot see.
pub(crate) fn choose(
    explicit: Option<u32>,
    tasks: &[Task],
    default_profile: &str,
    external: bool,
) -> Result<ChosenJobs> {
    if let Some(jobs) = explicit {
        return Ok(ChosenJobs {
            jobs,
            reason: "--jobs".to_owned(),
        });
    }
    let (desktop_profile, desktop_memory_bytes) = tasks
        .iter()
        .map(|task| task.profile.as_deref().unwrap_or(default_profile))
        .map(|profile| (profile, Limits::for_profile(profile).memory_bytes))
        .max_by_key(|(_, bytes)| *bytes)
        .unwrap_or((
            default_profile,
            Limits::for_profile(default_profile).memory_bytes,
        ));
    let broker_sessions = if external {
        None
    } else {
        let config =
            desk_broker::BrokerConfig::new(PathBuf::new(), desk_desktop::ProfileSet::builtin()?);
        u32::try_from(config.max_sessions).ok()
    };
    let basis = JobsBasis {
        cores: std::thread::available_parallelism()
            .map(|cores| u32::try_from(cores.get()).unwrap_or(u32::MAX))
            .unwrap_or(1),
        available_memory_bytes: available_memory_bytes(),
        desktop_memory_bytes,
        desktop_profile: desktop_profile.to_owned(),
        n_tasks: tasks.len(),
        broker_sessions,
    };
    let chosen = default_jobs(&basis);
    let mut reason = format!("default: {}", chosen.reason);
    if external {
        reason.push_str(", measured on this machine, not the broker's");
    }
    Ok(ChosenJobs {
        jobs: chosen.jobs,
        reason,
    })
}

/// `MemAvailable`, lowered to the headroom under the tightest memory limit of this process's
/// cgroup and its ancestors; `None` when `/proc/meminfo` cannot be read.
fn available_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let available = mem_available(&meminfo)?;
    let headroom = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| cgroup_headroom(&text));
    Some(headroom.map_or(available, |headroom| headroom.min(available)))
}

/// The `MemAvailable:` line of `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// A limit above this is no limit (cgroup v1 writes 2^63 rounded down to a page).
const NO_LIMIT: u64 = 1 << 60;

/// The least memory left under a limit of this process's memory cgroup or an ancestor (v2
/// `memory.max` less `memory.current`, v1 `memory.limit_in_bytes` less
/// `memory.usage_in_bytes`); `None` when no limit is set or readable.
fn cgroup_headroom(proc_self_cgroup: &str) -> Option<u64> {
    let read =
        |path: PathBuf| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let mut tightest: Option<u64> = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (root, limit_file, usage_file) = if controllers.is_empty() {
            (
                Path::new("/sys/fs/cgroup").to_owned(),
                "memory.max",
                "memory.current",
            )
        } else if controllers.split(',').any(|name| name == "memory") {
            (
                Path::new("/sys/fs/cgroup/memory").to_owned(),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        let mut group = root.join(path.trim_start_matches('/'));
        while group.starts_with(&root) {
            if let (Some(limit), Some(usage)) =
                (read(group.join(limit_file)), read(group.join(usage_file)))
                && limit < NO_LIMIT
            {
                let headroom = limit.saturating_sub(usage);
                tightest = Some(tightest.map_or(headroom, |value| value.min(headroom)));
            }
            if !group.pop() {
                break;
            }
        }
    }
    tightest
}

#[cfg(test)]
mod tests;
