//! Stopping a desktop: each recorded role's process group gets SIGTERM, then SIGKILL after a
//! grace period; the app first, Xvfb last; then the sandbox's pid 1 (and with it its pid
//! namespace) and any member left of a recorded group get SIGKILL and are proven gone; on drop
//! too, unless the desktop was detached for a restarted broker to reattach.

use std::time::{Duration, Instant};

use desk_contract::worker::WorkerOp;

use super::records::{
    force_kill_group, kill_and_prove, kill_group, read_desktop_record, remove_display_files,
    sandbox_holder, start_ticks, wait_gone,
};
use super::{LocalDesktop, Supervised};

impl LocalDesktop {
    pub(super) fn stop_role(&mut self, role: &str) {
        let mut kept = Vec::new();
        for mut process in std::mem::take(&mut self.processes) {
            if process.role == role {
                terminate(&mut process);
            } else {
                kept.push(process);
            }
        }
        self.processes = kept;
        self.record_processes();
    }

    pub(super) fn stop_all(&mut self) {
        // Read before anything stops: what must be proven gone afterwards.
        let recorded = self.recorded();
        let holder = read_desktop_record(&self.config.session_dir)
            .and_then(|record| sandbox_holder(&record, &recorded));
        if let Some(mut worker) = self.worker.take() {
            let _ = worker.call(WorkerOp::Shutdown, Duration::from_secs(2));
        }
        // Stop in reverse start order: app, worker, window manager, display.
        while let Some(mut process) = self.processes.pop() {
            terminate(&mut process);
            if process.role == "xvfb" && self.sandbox.is_none() {
                remove_display_files(&self.display_name, process.pid);
            }
        }
        // Members that outlived their group's leader and the sandbox's pid 1 with its
        // namespace: killed, and proven gone.
        let left = kill_and_prove(&recorded, holder.as_ref(), Duration::ZERO, STOP_PROOF);
        if !left.is_empty() {
            tracing::error!(?left, "processes of a stopped desktop are still running");
        }
        crate::sandbox::cgroup::remove_recorded(&self.config.session_dir);
        self.app_running = false;
        self.record_processes();
        if self.sandbox.is_some() {
            crate::sandbox::remove_workspace(&self.config.session_dir);
        }
    }
}

/// How long stopping waits for the last survivors to be gone.
const STOP_PROOF: Duration = Duration::from_secs(2);

/// SIGTERM the process's group, wait up to 2 s, then SIGKILL; reaps it when it is our child.
fn terminate(process: &mut Supervised) {
    let Some(child) = process.child.as_mut() else {
        // Adopted: not our child, watched through /proc.
        if start_ticks(process.pid) == Some(process.start_ticks) {
            kill_group(process.pid);
            if !wait_gone(process.pid, process.start_ticks, Duration::from_secs(2)) {
                force_kill_group(process.pid);
                wait_gone(process.pid, process.start_ticks, Duration::from_secs(1));
            }
        }
        // Members of its group may outlive the leader.
        force_kill_group(process.pid);
        return;
    };
    let pid = child.id();
    if matches!(child.try_wait(), Ok(Some(_))) {
        // The leader exited; members of its group may still be alive.
        force_kill_group(pid);
        return;
    }
    kill_group(pid);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            force_kill_group(pid);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    force_kill_group(pid);
    let _ = child.wait();
}

impl Drop for LocalDesktop {
    fn drop(&mut self) {
        if !self.detached {
            self.stop_all();
        }
    }
}
