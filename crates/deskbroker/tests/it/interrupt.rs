//! `deskbroker bench run` interrupted by SIGTERM mid-rollout exits non-zero and stops its
//! desktop at once, instead of leaving it to the lease's expiry.

use std::process::{Command, Stdio};

use crate::bench::librecad_available;
use crate::support::{deskbroker, xvfb_available};

/// Every live (not zombie) process below `root`, `root` excluded.
fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the `(comm)` field: state, then ppid.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let ppid: u32 = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        if state != "Z" {
            parents.push((pid, ppid));
        }
    }
    let mut out = vec![root];
    let mut idx = 0;
    while idx < out.len() {
        let parent = out[idx];
        out.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        idx += 1;
    }
    out.remove(0);
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

#[test]
fn an_interrupted_run_stops_its_desktops() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let child = Command::new(deskbroker())
        .args(["--log", "warn", "bench", "run", "--corpus-version", "v1"])
        .args(["--task", "task-022", "--out"])
        .arg(&out)
        .env("XDG_CACHE_HOME", root.path().join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the desktop's app, then interrupt the run mid-rollout.
    let started = std::time::Instant::now();
    let desktop = loop {
        let below = descendants(child.id());
        let app = below.iter().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "librecad")
        });
        if app {
            break below;
        }
        assert!(started.elapsed().as_secs() < 120, "no desktop came up");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let desktop: Vec<u32> = desktop.into_iter().filter(|pid| alive(*pid)).collect();
    assert!(!desktop.is_empty());
    // SIGTERM through kill(1): the test process has no signal API of its own.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    // Every desktop process is gone within a few seconds, not at the lease's expiry.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let left: Vec<u32> = desktop.iter().copied().filter(|pid| alive(*pid)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "desktop processes still running: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
