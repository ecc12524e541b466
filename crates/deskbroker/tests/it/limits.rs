//! Limits per session, by behaviour on a real sandbox: every process of the desktop is in the
//! session's own cgroups from its start, an app that forks and allocates without end is
//! stopped by the kernel (fork refused at `pids.max`, OOM kill at the memory limit), the next
//! operation fails with `ResourceLimit` naming the limit, and stopping the desktop removes the
//! groups with nothing left in them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use desk_desktop::launcher::recorded_processes;
use desk_desktop::sandbox::cgroup::{Limits, SessionCgroup};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, LocalDesktop};

use crate::support::{bare_desktop_config, xvfb_available};

/// Forks shells that each double a string forever.
const HOG: &str = r#"
name = "hog"
command = ["/bin/sh", "-c", "while :; do /bin/sh -c 'x=0123456789abcdef; while :; do x=$x$x; done' & done"]
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
timeout_ms = 3000
"#;

fn in_group(pid: u32, group: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .is_ok_and(|text| text.lines().any(|line| line.ends_with(group)))
}

#[test]
fn a_forking_allocating_app_is_stopped_and_named_a_resource_limit() {
    if !xvfb_available() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("s_limits");
    let mut config = bare_desktop_config(&session_dir);
    config.limits = Limits {
        memory_bytes: 256 << 20,
        pids: 160,
        cpu_percent: 100,
    };
    std::fs::create_dir_all(session_dir.path()).unwrap();
    let mut desktop = LocalDesktop::start(config.clone()).unwrap();
    let Some(cgroup) = SessionCgroup::load(&session_dir) else {
        println!("skipped: no cgroup v1 hierarchy (limits off)");
        return;
    };
    let groups: Vec<PathBuf> = cgroup
        .groups
        .iter()
        .map(|(_, group)| group.clone())
        .collect();
    assert!(
        cgroup.groups.iter().any(|(name, _)| name == "memory")
            && cgroup.groups.iter().any(|(name, _)| name == "pids"),
        "{cgroup:?}"
    );
    // Every recorded process (and so everything it forked) is in the session's groups.
    let name = groups[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("s_limits-"),
        "{name}: the session id and a path digest"
    );
    let suffix = format!("/deskbroker/{name}");
    for process in recorded_processes(session_dir.path()) {
        assert!(
            in_group(process.pid, &suffix),
            "{process:?} outside the session's cgroup"
        );
    }
    assert!(cgroup.verdict().is_none());

    let profile = AppProfile::from_toml("hog", HOG).unwrap();
    let prepared = profile
        .prepare(&session_dir, config.sandbox, &Default::default())
        .unwrap();
    let started = Instant::now();
    let _ = desktop.start_app(&prepared.launch);
    let deadline = Instant::now() + Duration::from_secs(20);
    let verdict = loop {
        if let Some(verdict) = cgroup.verdict() {
            break verdict;
        }
        assert!(Instant::now() < deadline, "no limit enforced");
        std::thread::sleep(Duration::from_millis(50));
    };
    println!(
        "limit enforced after {} ms: {verdict}",
        started.elapsed().as_millis()
    );
    // The group never held more than its limits.
    let peak: u64 = std::fs::read_to_string(groups[0].join("memory.max_usage_in_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(peak <= 256 << 20, "peak {peak}");
    match desktop.facts() {
        Err(BackendError::ResourceLimit(reason)) => {
            assert!(reason.contains("limit"), "{reason}")
        }
        other => panic!("expected a resource limit, got {other:?}"),
    }
    drop(desktop);
    for group in &groups {
        assert!(!group.exists(), "{} left", group.display());
    }
}
