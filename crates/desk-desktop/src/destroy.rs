//! Destroying a session's workspace at once, and proving it is gone: the kill path of the
//! watchdog and the kill switch, and the reconciler's retry (desk-broker `kill.rs`).
//!
//! Unlike release (`LocalDesktop::shutdown`, [`crate::launcher::reap_recorded`]: SIGTERM, a
//! grace, then SIGKILL), destruction does not ask: the worker's process group is killed first
//! (from then on nothing can inject input: the worker is the only process that talks XTEST),
//! and the sandbox's pid 1 (its PID namespace dies with it), then every other recorded group
//! that still has a member, whether or not its leader lives, all with SIGKILL. What must be
//! proven gone is read once, before anything is removed, as [`Remains`]: the recorded processes
//! and the sandbox's pid 1 (pid and start time, so a reused pid is never taken for a
//! survivor), the display socket of an unsandboxed X server, the out-of-tree workspace of a
//! root broker, and the session directory. [`check`] compares those with reality, members of
//! the recorded process groups included; [`Removal::proven`] is true only when none is left.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::launcher::{
    RecordedProcess, kill_and_prove, read_desktop_record, recorded_processes, remove_display_files,
    sandbox_holder, start_ticks, survivors,
};
use crate::layout::SessionDir;

/// What a session's workspace consists of on this host, read before it is destroyed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Remains {
    /// The recorded processes (each its own process group).
    pub processes: Vec<RecordedProcess>,
    /// The sandbox's pid 1 (role `sandbox_init`), when it was running.
    #[serde(default)]
    pub holder: Option<RecordedProcess>,
    /// The display socket of an unsandboxed X server (a sandboxed one lives in the sandbox).
    pub x_socket: Option<PathBuf>,
    /// The workspace directory outside the session directory (a root broker's), if any.
    pub workspace: Option<PathBuf>,
    /// The session directory.
    pub session_dir: PathBuf,
}

/// What was found left of a workspace; empty everywhere means removal is proven.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Removal {
    /// Recorded processes, the sandbox's pid 1 and members of recorded process groups still
    /// running, as `role (pid N)`.
    pub processes_left: Vec<String>,
    /// The session directory still exists.
    pub directory_left: bool,
    /// The unsandboxed X server's socket still exists.
    pub x_socket_left: bool,
    /// The out-of-tree workspace still exists.
    pub workspace_left: bool,
}

impl Removal {
    /// Whether nothing is left: no process, no directory, no X socket, no sandbox.
    pub fn proven(&self) -> bool {
        self.processes_left.is_empty()
            && !self.directory_left
            && !self.x_socket_left
            && !self.workspace_left
    }
}

/// Reads what `session_dir` holds of a desktop (nothing when it was never launched).
pub fn remains(session_dir: &SessionDir) -> Remains {
    let record = read_desktop_record(session_dir);
    let processes = recorded_processes(session_dir);
    let holder = record
        .as_ref()
        .and_then(|record| sandbox_holder(record, &processes));
    let x_socket = record
        .filter(|record| record.sandbox.is_none())
        .and_then(|record| display_socket(&record.display_name));
    let workspace = std::fs::read_link(session_dir.workspace())
        .ok()
        .filter(|target| target.is_absolute());
    Remains {
        processes,
        holder,
        x_socket,
        workspace,
        session_dir: session_dir.path().to_path_buf(),
    }
}

/// The start time of a live (not zombie) process `pid`, in clock ticks since boot: with the pid,
/// the identity of a process that pid reuse cannot fake.
pub fn start_time(pid: u32) -> Option<u64> {
    start_ticks(pid)
}

fn display_socket(display_name: &str) -> Option<PathBuf> {
    let number: u32 = display_name.strip_prefix(':')?.parse().ok()?;
    Some(PathBuf::from(format!("/tmp/.X11-unix/X{number}")))
}

/// Kills every process of `remains` (the worker first), waits up to `timeout` for them to be
/// gone, then removes the display files, the workspace and the session directory, and returns
/// what is left ([`check`]).
pub fn destroy(remains: &Remains, timeout: Duration) -> Removal {
    kill_and_prove(
        &remains.processes,
        remains.holder.as_ref(),
        Duration::ZERO,
        timeout,
    );
    crate::sandbox::cgroup::remove_recorded(&SessionDir::at(&remains.session_dir));
    if let (Some(socket), Some(xvfb)) = (
        &remains.x_socket,
        remains
            .processes
            .iter()
            .find(|process| process.role == "xvfb"),
    ) && !xvfb.is_alive()
        && let Some(number) = socket
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_prefix('X'))
    {
        remove_display_files(&format!(":{number}"), xvfb.pid);
    }
    if let Some(workspace) = &remains.workspace {
        remove_tree(workspace);
    }
    remove_tree(&remains.session_dir);
    check(remains)
}

fn remove_tree(path: &Path) {
    match std::fs::remove_dir_all(path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "failed to remove a killed workspace")
        }
    }
}

/// What is left of `remains` now.
pub fn check(remains: &Remains) -> Removal {
    Removal {
        processes_left: survivors(&remains.processes, remains.holder.as_ref()),
        directory_left: std::fs::symlink_metadata(&remains.session_dir).is_ok(),
        x_socket_left: remains
            .x_socket
            .as_ref()
            .is_some_and(|socket| std::fs::symlink_metadata(socket).is_ok()),
        workspace_left: remains
            .workspace
            .as_ref()
            .is_some_and(|workspace| std::fs::symlink_metadata(workspace).is_ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destroy_kills_recorded_groups_and_removes_the_directory() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = SessionDir::at(root.path().join("s_1"));
        std::fs::create_dir_all(dir.path()).expect("mkdir");
        let mut command = std::process::Command::new("sleep");
        command.arg("30");
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().expect("spawn sleep");
        let pid = child.id();
        let recorded = vec![RecordedProcess {
            role: "worker".to_string(),
            pid,
            start_ticks: start_ticks(pid).expect("start ticks"),
        }];
        std::fs::write(
            dir.processes_file(),
            serde_json::to_string(&recorded).expect("json"),
        )
        .expect("write processes.json");
        let remains = remains(&dir);
        assert_eq!(remains.processes, recorded);
        assert!(!check(&remains).proven());
        // The child is ours: reap it as soon as it dies so it is not left a zombie.
        let waiter = std::thread::spawn(move || child.wait());
        let removal = destroy(&remains, Duration::from_secs(2));
        assert!(removal.proven(), "{removal:?}");
        assert!(!dir.path().exists());
        let _ = waiter.join();
    }

    #[test]
    fn a_reused_pid_is_not_a_survivor() {
        let remains = Remains {
            processes: vec![RecordedProcess {
                role: "app".to_string(),
                pid: std::process::id(),
                start_ticks: 1,
            }],
            session_dir: PathBuf::from("/nonexistent/deskbroker/s_x"),
            ..Remains::default()
        };
        assert!(check(&remains).proven());
    }
}
