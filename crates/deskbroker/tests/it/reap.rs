//! Reaping kills whole sandboxes: a desktop whose recorded group leaders died (bwrap, the
//! worker's wrapper) while their members and the sandbox's pid 1 live on, plus a process that
//! left every recorded group, is gone entirely after `reap_recorded`: the pid namespace dies
//! with its pid 1 and every recorded group gets SIGKILL whether or not its leader lives.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use desk_desktop::LocalDesktop;
use desk_desktop::launcher::{reap_recorded, recorded_processes};

use crate::support::{bare_desktop_config, xvfb_available};

/// Pids of live (not zombie) processes whose pid namespace is `ns` (a `pid:[...]` link).
fn in_namespace(ns: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let link = std::fs::read_link(format!("/proc/{pid}/ns/pid"));
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .and_then(|end| stat.get(end + 2..end + 3))
                .is_some_and(|state| state == "Z");
            !zombie && link.is_ok_and(|link| link.to_string_lossy() == ns)
        })
        .collect()
}

fn sigkill(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[test]
fn reaping_a_sandbox_whose_leaders_died_leaves_nothing() {
    if !xvfb_available() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("reap");
    let config = bare_desktop_config(&session_dir);
    let mut desktop = LocalDesktop::start(config).unwrap();
    // As a broker that died would: the desktop runs on, nobody waits for its processes.
    desktop.detach();
    drop(desktop);

    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(session_dir.desktop_file()).unwrap())
            .unwrap();
    let holder = record["sandbox"]["holder_pid"].as_u64().unwrap() as u32;
    let ns = std::fs::read_link(format!("/proc/{holder}/ns/pid"))
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // A process inside that left every recorded group (its own session).
    let mut escaped = Command::new("nsenter");
    escaped
        .args(["--target", &holder.to_string(), "--pid", "--mount", "--"])
        .args(["setsid", "sleep", "600"])
        .stdin(Stdio::null())
        .process_group(0);
    let mut escaped = escaped.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));

    let recorded = recorded_processes(session_dir.path());
    let before = in_namespace(&ns);
    // pid 1, Xvfb, the worker, the bus(es) and the escaped sleep.
    assert!(before.len() >= 4, "{before:?}");
    // The leaders die: bwrap (the sandbox's group) and the worker's nsenter wrapper; pid 1 and
    // the worker itself live on.
    for role in ["sandbox", "worker"] {
        let leader = recorded
            .iter()
            .find(|process| process.role == role)
            .unwrap();
        sigkill(leader.pid);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(in_namespace(&ns).contains(&holder), "pid 1 lives on");
    assert!(in_namespace(&ns).len() >= 3);

    let alive = reap_recorded(session_dir.path());
    assert!(alive >= 1, "some recorded leaders were still alive");
    let _ = escaped.wait();
    let left = in_namespace(&ns);
    assert!(
        left.is_empty(),
        "left in the sandbox's pid namespace: {left:?}"
    );
    let recorded_left: Vec<_> = recorded
        .iter()
        .filter(|process| process.is_alive())
        .collect();
    assert!(recorded_left.is_empty(), "{recorded_left:?}");
}
