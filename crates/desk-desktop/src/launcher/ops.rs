//! [`DesktopBackend`] for [`LocalDesktop`]: every operation is one worker call (after the
//! liveness check in `call`), except `start_app`, which starts the app's process (inside the
//! sandbox when on) and then asks the worker for the verified handoff.
//!
//! Just over 400 lines: one trait impl with one method per backend operation.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use desk_contract::clipboard::{ClipboardText, ClipboardWritten};
use desk_contract::desktop::{
    ActionOutcome, DesktopFacts, Frame, Handoff, LimitsMode, SandboxMode, WorkspaceFacts,
};
use desk_contract::validate::InputAction;
use desk_contract::worker::{WorkerOp, WorkerValue};
use desk_contract::{DisplaySize, SettlePolicy};

use super::{CLIPBOARD_WORKER_TIMEOUT, LocalDesktop, WORKER_TIMEOUT, log_file};
use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;
use crate::sandbox::cgroup::SessionCgroup;
use crate::sandbox::{Role, SandboxPolicy};
use crate::worker_client::{ExpectedPeer, check_peer};

fn expect_value<T>(
    value: WorkerValue,
    pick: impl FnOnce(WorkerValue) -> Option<T>,
    what: &str,
) -> Result<T, BackendError> {
    pick(value)
        .ok_or_else(|| BackendError::Worker(format!("worker answered {what} with something else")))
}

impl LocalDesktop {
    /// Creates the session's cgroups with the configured limits (`sandbox::cgroup`). Limits
    /// are never silently off: a sandboxed desktop whose groups cannot be made is refused
    /// ([`BackendError::LimitsUnavailable`]); only `LimitsMode::Off` (the operator's
    /// `--unsafe-no-limits`) makes none. Without a sandbox they are tried (logged when absent;
    /// the handoff's facts then say `"limits": "off"`).
    pub(super) fn create_cgroup(&mut self) -> Result<(), BackendError> {
        let path = self.config.session_dir.cgroup_file();
        if let Some(old) = SessionCgroup::load(&self.config.session_dir) {
            old.remove();
        }
        let _ = std::fs::remove_file(&path);
        if !self.config.limits_mode.is_enforced() {
            tracing::warn!(
                session = %self.config.session_dir.path().display(),
                "--unsafe-no-limits: the session runs without limits"
            );
            return Ok(());
        }
        match SessionCgroup::create(
            &self.config.session_dir,
            self.config.limits,
            &self.config.cgroup_root,
        ) {
            Ok(_) => Ok(()),
            Err(error @ BackendError::LimitsUnavailable(_))
                if !matches!(self.config.sandbox, SandboxPolicy::On { .. }) =>
            {
                tracing::warn!(%error, "no sandbox, and no limits");
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Whether the session's limits are applied: its groups are recorded.
    fn limits_mode(&self) -> LimitsMode {
        match SessionCgroup::load(&self.config.session_dir) {
            Some(_) => LimitsMode::Enforced,
            None => LimitsMode::Off,
        }
    }

    /// Fails with [`BackendError::ResourceLimit`] once the kernel enforced one of the
    /// session's limits (an OOM kill in its memory group, a fork its pids group refused).
    pub(super) fn check_limits(&self) -> Result<(), BackendError> {
        match SessionCgroup::load(&self.config.session_dir).and_then(|cgroup| cgroup.verdict()) {
            Some(reason) => Err(BackendError::ResourceLimit(reason)),
            None => Ok(()),
        }
    }

    /// Refuses a fresh worker connection (at start and at every reattach) unless the kernel
    /// names the recorded worker as the listener: the sandbox uid (the broker's own without a
    /// sandbox) and the recorded worker's host pid (its wrapper's child when sandboxed).
    pub(super) fn check_worker_peer(
        &self,
        stream: &std::os::unix::net::UnixStream,
    ) -> Result<(), BackendError> {
        let worker = self
            .processes
            .iter()
            .find(|process| process.role == "worker")
            .ok_or_else(|| {
                BackendError::WorkerPeerRefused("no worker process is recorded".to_string())
            })?;
        let expected = ExpectedPeer {
            uid: match &self.sandbox {
                Some(sandbox) => sandbox.uid,
                None => nix::unistd::geteuid().as_raw(),
            },
            recorded_pid: worker.pid,
            recorded_ticks: worker.start_ticks,
            wrapped: self.sandbox.is_some(),
        };
        check_peer(stream, &expected)
    }

    /// Sends one `execute`, interruptible by a Stop past `generation` when given.
    fn execute_op(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
        generation: Option<u64>,
    ) -> Result<ActionOutcome, BackendError> {
        let op = WorkerOp::Execute {
            action: action.clone(),
            settle,
            generation,
        };
        // Refused before anything is sent when a process of the desktop died.
        let value = self.call(op)?;
        expect_value(
            value,
            |v| {
                if let WorkerValue::Outcome(o) = v {
                    Some(*o)
                } else {
                    None
                }
            },
            "execute",
        )
        // A wrong answer after a request that may have injected input is an unknown outcome.
        .map_err(|error| BackendError::OutcomeUnknown(error.to_string()))
    }
}

impl DesktopBackend for LocalDesktop {
    fn display_size(&self) -> DisplaySize {
        self.display
    }

    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        self.stop_app()?;
        self.check_alive(None)?;
        if launch.argv.is_empty() {
            return Err(BackendError::Rejected("app command is empty".to_string()));
        }
        let log = log_file(&self.config.session_dir.log_file("app"))?;
        let log_err = log.try_clone().map_err(|source| BackendError::Spawn {
            what: "app log".to_string(),
            source,
        })?;
        if let Some(sandbox) = &self.sandbox {
            if !sandbox.can_run(&launch.argv[0]) {
                // Fail now with the cause, not after the window timeout with exit status 127.
                return Err(BackendError::DesktopFailed(format!(
                    "the app program {} is not an executable file inside the desktop's \
                     sandbox, which shows the host's /usr, /bin, /lib and /etc, the worker's \
                     own directory and the profile's `read_only` paths (name it by a path \
                     without `..` inside these, or add its directory to `read_only`)",
                    launch.argv[0]
                )));
            }
            // The attempt directory and the home seed were prepared by the broker; hand them
            // over, then fill the app's in-memory home from the seed.
            sandbox.hand_over(&launch.cwd)?;
            if let Some((_, home)) = launch.env.iter().find(|(key, _)| key == "HOME") {
                sandbox.hand_over(Path::new(home))?;
                crate::sandbox::workspace::seed_home(sandbox, Path::new(home))?;
            }
        }
        let mut env = self.app_env();
        for (key, value) in &launch.env {
            env.retain(|(existing, _)| existing != key);
            env.push((key.clone(), value.clone()));
        }
        let mut command = match &self.sandbox {
            // Confined to the programs the census allows (the profile's, else its command's).
            Some(sandbox) => {
                let allowed: Vec<String> =
                    crate::census::CensusRules::read(&self.config.session_dir)
                        .map(|rules| rules.app.into_iter().map(|allowed| allowed.path).collect())
                        .unwrap_or_default();
                sandbox.app_command(&launch.argv, &launch.cwd, &env, &allowed)?
            }
            None => self.command_as(Role::App, &launch.argv, Some(&launch.cwd), &env)?,
        };
        command
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        let wrapper = self.spawn("app", command)?.id();
        // The window carries the app's pid as the sandbox sees it.
        let (host_pid, pid) = match &self.sandbox {
            Some(sandbox) => sandbox.program_pids(wrapper)?,
            None => (wrapper, wrapper),
        };
        self.app_running = true;
        let timeout = Duration::from_millis(u64::from(launch.window.timeout_ms)) + WORKER_TIMEOUT;
        let op = WorkerOp::AwaitApp {
            pid,
            rules: launch.window.clone(),
            settle: launch.settle,
        };
        let value = match self.worker()?.call(op, timeout) {
            Ok(value) => value,
            Err(error) => return Err(self.explain(error)),
        };
        let handoff = expect_value(
            value,
            |v| {
                if let WorkerValue::Handoff(h) = v {
                    Some(*h)
                } else {
                    None
                }
            },
            "await_app",
        )?;
        // Measured from outside once the app is up: a sandboxed handoff whose workspace fails
        // a rule is refused and the app stopped.
        let mode = match self.sandbox {
            Some(_) => SandboxMode::On,
            None => SandboxMode::Off,
        };
        let workspace = self.run_dir.parent().unwrap_or(&self.run_dir);
        let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.into());
        let writable = self
            .sandbox
            .as_ref()
            .map(|sandbox| sandbox.writable.clone())
            .unwrap_or_default();
        let mut facts = crate::sandbox::facts::measure(
            host_pid,
            mode,
            &self.forbidden_paths(),
            &workspace,
            &writable,
            self.sandbox
                .as_ref()
                .filter(|sandbox| sandbox.app.is_some())
                .map(|sandbox| sandbox.uid),
        );
        facts.limits = self.limits_mode();
        if !facts.failures.is_empty() {
            tracing::error!(failures = ?facts.failures, "workspace unverified at handoff");
            let failures = facts.failures.clone();
            self.workspace = Some(facts);
            self.stop_app()?;
            return Err(BackendError::WorkspaceUnverified(failures));
        }
        self.workspace = Some(facts);
        Ok(handoff)
    }

    fn capture(&mut self) -> Result<Frame, BackendError> {
        let value = self.call(WorkerOp::Capture)?;
        expect_value(
            value,
            |v| {
                if let WorkerValue::Frame(f) = v {
                    Some(f)
                } else {
                    None
                }
            },
            "capture",
        )
    }

    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        self.execute_op(action, settle, None)
    }

    fn execute_for(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
        generation: u64,
    ) -> Result<ActionOutcome, BackendError> {
        self.execute_op(action, settle, Some(generation))
    }

    fn facts(&mut self) -> Result<DesktopFacts, BackendError> {
        let value = self.call(WorkerOp::Facts)?;
        expect_value(
            value,
            |v| {
                if let WorkerValue::Facts(f) = v {
                    Some(f)
                } else {
                    None
                }
            },
            "facts",
        )
    }

    fn release_held(&mut self) -> Result<Vec<String>, BackendError> {
        let value = self.call(WorkerOp::ReleaseHeld)?;
        expect_value(
            value,
            |v| {
                if let WorkerValue::Released { released } = v {
                    Some(released)
                } else {
                    None
                }
            },
            "release_held",
        )
    }

    fn stop_app(&mut self) -> Result<(), BackendError> {
        if self.app_running {
            self.stop_role("app");
            self.app_running = false;
        }
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), BackendError> {
        self.stop_all();
        Ok(())
    }

    fn workspace_facts(&self) -> Option<WorkspaceFacts> {
        self.workspace.clone()
    }

    fn process_ids(&self) -> Vec<u32> {
        self.processes.iter().map(|process| process.pid).collect()
    }

    fn detach(&mut self) {
        LocalDesktop::detach(self);
    }

    fn capabilities(&self) -> crate::BackendCapabilities {
        super::capabilities(self.sandbox.is_some())
    }

    fn control(&self) -> std::sync::Arc<dyn crate::SessionControl> {
        std::sync::Arc::new(crate::WorkspaceControl::new(
            self.config.session_dir.clone(),
        ))
    }

    fn clipboard_read(&mut self, max_output_bytes: u64) -> Result<ClipboardText, BackendError> {
        let value = self.call_within(
            WorkerOp::ClipboardRead { max_output_bytes },
            CLIPBOARD_WORKER_TIMEOUT,
        )?;
        expect_value(
            value,
            |v| match v {
                WorkerValue::Clipboard(text) => Some(text),
                _ => None,
            },
            "clipboard_read",
        )
    }

    fn clipboard_write(&mut self, text: &str) -> Result<ClipboardWritten, BackendError> {
        let op = WorkerOp::ClipboardWrite {
            text: text.to_string(),
        };
        let value = self.call_within(op, CLIPBOARD_WORKER_TIMEOUT)?;
        expect_value(
            value,
            |v| match v {
                WorkerValue::ClipboardWritten(written) => Some(written),
                _ => None,
            },
            "clipboard_write",
        )
        // A wrong answer to a write the worker may have carried out leaves the clipboard unknown.
        .map_err(|error| BackendError::OutcomeUnknown(error.to_string()))
    }
    fn accessibility(
        &mut self,
        limits: desk_contract::a11y::AxLimits,
    ) -> Result<desk_contract::a11y::AxTree, BackendError> {
        let value = self.call(WorkerOp::Accessibility { limits })?;
        expect_value(
            value,
            |v| match v {
                WorkerValue::Accessibility(tree) => Some(*tree),
                _ => None,
            },
            "accessibility",
        )
    }

    fn windows(&mut self) -> Result<Vec<desk_contract::desktop::AppWindowInfo>, BackendError> {
        let value = self.call(WorkerOp::Windows)?;
        expect_value(
            value,
            |v| match v {
                WorkerValue::Windows { windows } => Some(windows),
                _ => None,
            },
            "windows",
        )
    }
}
