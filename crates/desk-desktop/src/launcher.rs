//! `LocalDesktop`: launches and supervises one session's processes (Xvfb, window manager, app,
//! desktop worker) and implements [`DesktopBackend`] through the worker's pipe.
//!
//! This is the one place that starts a session's processes, so a sandbox can wrap them here
//! without touching the broker. Every process runs in its own process group and is recorded in
//! `<session_dir>/processes.json`, so a restarted broker can reap what a crashed one left behind
//! ([`reap_recorded`]). The broker itself never connects to the X server.
//!
//! Known limit: Xvfb runs without an X authority cookie; any local process of the same host
//! that can reach `/tmp/.X11-unix` can connect to it. Containment (bubblewrap, private /tmp)
//! closes that in a later step.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff};
use desk_contract::validate::InputAction;
use desk_contract::worker::{WORKER_PROTOCOL_VERSION, WorkerOp, WorkerValue};
use desk_contract::{DisplaySize, SettlePolicy};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;
use crate::worker_client::WorkerClient;

/// How to start a local desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDesktopConfig {
    /// Display size; depth is 24.
    pub display: DisplaySize,
    /// The worker program and arguments, e.g. `[<deskbroker>, "worker"]`.
    pub worker_command: Vec<String>,
    /// The window manager program and arguments; `None` runs without one.
    pub window_manager: Option<Vec<String>>,
    /// The X server program.
    pub xvfb_program: String,
    /// The session directory: logs and `processes.json` live here.
    pub session_dir: PathBuf,
}

impl LocalDesktopConfig {
    /// Defaults: Xvfb, openbox, the given worker command.
    pub fn new(display: DisplaySize, worker_command: Vec<String>, session_dir: PathBuf) -> Self {
        LocalDesktopConfig {
            display,
            worker_command,
            window_manager: Some(vec!["openbox".to_string(), "--sm-disable".to_string()]),
            xvfb_program: "Xvfb".to_string(),
            session_dir,
        }
    }
}

/// A process this launcher started, as recorded on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedProcess {
    /// What it is: `xvfb`, `window_manager`, `worker`, `app`.
    pub role: String,
    /// Its pid, which is also its process group id.
    pub pid: u32,
    /// Its start time in clock ticks since boot (field 22 of `/proc/PID/stat`), guarding against
    /// pid reuse.
    pub start_ticks: u64,
}

struct Supervised {
    role: &'static str,
    child: Child,
}

/// A desktop made of local processes.
pub struct LocalDesktop {
    config: LocalDesktopConfig,
    display_name: String,
    display: DisplaySize,
    // Invariant: index 0 is Xvfb when present; the app, when running, is the last entry.
    processes: Vec<Supervised>,
    worker: Option<WorkerClient>,
    app_running: bool,
}

const WORKER_TIMEOUT: Duration = Duration::from_secs(30);
const XVFB_START_TIMEOUT: Duration = Duration::from_secs(10);

fn log_file(dir: &Path, name: &str) -> Result<File, BackendError> {
    File::create(dir.join(name)).map_err(|source| BackendError::Spawn {
        what: format!("log file {name}"),
        source,
    })
}

/// The start time of a live (not zombie) process, in clock ticks since boot.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; fields resume after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace();
    // Field 3, the state: a zombie has exited and only waits for its parent to reap it.
    if fields.next()? == "Z" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

fn kill_group(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let group = Pid::from_raw(raw);
    let _ = killpg(group, Signal::SIGTERM);
}

fn force_kill_group(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
}

/// Kills the process groups recorded in `session_dir/processes.json` that are still the same
/// processes (same start time). Returns how many were found alive.
pub fn reap_recorded(session_dir: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(session_dir.join("processes.json")) else {
        return 0;
    };
    let Ok(recorded) = serde_json::from_str::<Vec<RecordedProcess>>(&text) else {
        return 0;
    };
    let alive: Vec<&RecordedProcess> = recorded
        .iter()
        .filter(|process| start_ticks(process.pid) == Some(process.start_ticks))
        .collect();
    for process in &alive {
        tracing::info!(role = %process.role, pid = process.pid, "reaping leftover process group");
        kill_group(process.pid);
    }
    if !alive.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
        for process in &alive {
            if start_ticks(process.pid) == Some(process.start_ticks) {
                force_kill_group(process.pid);
            }
        }
    }
    alive.len()
}

impl LocalDesktop {
    /// Starts Xvfb, the window manager and the worker, and checks the worker's hello.
    pub fn start(config: LocalDesktopConfig) -> Result<LocalDesktop, BackendError> {
        std::fs::create_dir_all(&config.session_dir).map_err(|source| BackendError::Spawn {
            what: format!("session directory {}", config.session_dir.display()),
            source,
        })?;
        let mut desktop = LocalDesktop {
            display_name: String::new(),
            display: config.display,
            config,
            processes: Vec::new(),
            worker: None,
            app_running: false,
        };
        match desktop.start_processes() {
            Ok(()) => Ok(desktop),
            Err(error) => {
                desktop.stop_all();
                Err(error)
            }
        }
    }

    /// The X display name, e.g. `:3`.
    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    fn start_processes(&mut self) -> Result<(), BackendError> {
        self.start_xvfb()?;
        if let Some(argv) = self.config.window_manager.clone() {
            let log = log_file(&self.config.session_dir, "window-manager.log")?;
            let mut command = Command::new(&argv[0]);
            command
                .args(&argv[1..])
                .env("DISPLAY", &self.display_name)
                .env("HOME", &self.config.session_dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .process_group(0);
            self.spawn("window_manager", command)?;
        }
        self.start_worker()
    }

    fn start_xvfb(&mut self) -> Result<(), BackendError> {
        let size = self.config.display;
        let log = log_file(&self.config.session_dir, "xvfb.log")?;
        let mut command = Command::new(&self.config.xvfb_program);
        command
            .args(["-displayfd", "1", "-screen", "0"])
            .arg(format!("{}x{}x24", size.width, size.height))
            .args([
                "-nolisten",
                "tcp",
                "-noreset",
                "+extension",
                "XTEST",
                "-dpi",
                "96",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0);
        let child = self.spawn("xvfb", command)?;
        let stdout = child.stdout.take().ok_or_else(|| {
            BackendError::DesktopFailed("Xvfb stdout was not captured".to_string())
        })?;
        let (sender, receiver) = channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let result = BufReader::new(stdout).read_line(&mut line).map(|_| line);
            let _ = sender.send(result);
        });
        let line = match receiver.recv_timeout(XVFB_START_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(error)) => {
                return Err(BackendError::DesktopFailed(format!(
                    "failed to read Xvfb display: {error}"
                )));
            }
            Err(_) => {
                return Err(BackendError::DesktopFailed(format!(
                    "Xvfb did not report a display within {} s (see xvfb.log)",
                    XVFB_START_TIMEOUT.as_secs()
                )));
            }
        };
        let number: u32 = line.trim().parse().map_err(|_| {
            BackendError::DesktopFailed(format!("Xvfb reported an unreadable display {line:?}"))
        })?;
        self.display_name = format!(":{number}");
        Ok(())
    }

    fn start_worker(&mut self) -> Result<(), BackendError> {
        let argv = self.config.worker_command.clone();
        if argv.is_empty() {
            return Err(BackendError::DesktopFailed(
                "empty worker command".to_string(),
            ));
        }
        let log = log_file(&self.config.session_dir, "worker.log")?;
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env("DISPLAY", &self.display_name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0);
        let child = self.spawn("worker", command)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(BackendError::DesktopFailed(
                "worker pipes were not captured".to_string(),
            ));
        };
        let mut client = WorkerClient::new(stdin, stdout);
        let hello = client.call(WorkerOp::Hello, WORKER_TIMEOUT)?;
        let WorkerValue::Hello(info) = hello else {
            return Err(BackendError::Worker(
                "worker answered hello with something else".into(),
            ));
        };
        if info.protocol_version != WORKER_PROTOCOL_VERSION {
            return Err(BackendError::Worker(format!(
                "worker speaks protocol {}, broker speaks {WORKER_PROTOCOL_VERSION}",
                info.protocol_version
            )));
        }
        if info.display != self.config.display {
            return Err(BackendError::DesktopFailed(format!(
                "display is {} but {} was requested",
                info.display, self.config.display
            )));
        }
        self.display = info.display;
        tracing::info!(display = %self.display_name, capture = %info.capture_path, "desktop worker ready");
        self.worker = Some(client);
        Ok(())
    }

    fn spawn(
        &mut self,
        role: &'static str,
        mut command: Command,
    ) -> Result<&mut Child, BackendError> {
        let child = command.spawn().map_err(|source| BackendError::Spawn {
            what: format!("{role} ({:?})", command.get_program()),
            source,
        })?;
        self.processes.push(Supervised { role, child });
        self.record_processes();
        let last = self.processes.len() - 1;
        Ok(&mut self.processes[last].child)
    }

    fn record_processes(&self) {
        let recorded: Vec<RecordedProcess> = self
            .processes
            .iter()
            .map(|process| RecordedProcess {
                role: process.role.to_string(),
                pid: process.child.id(),
                start_ticks: start_ticks(process.child.id()).unwrap_or(0),
            })
            .collect();
        let path = self.config.session_dir.join("processes.json");
        if let Ok(text) = serde_json::to_string_pretty(&recorded)
            && let Err(error) = std::fs::write(&path, text)
        {
            tracing::warn!(%error, path = %path.display(), "failed to record processes");
        }
    }

    fn worker(&mut self) -> Result<&mut WorkerClient, BackendError> {
        self.worker.as_mut().ok_or(BackendError::ShutDown)
    }

    fn stop_role(&mut self, role: &str) {
        let mut kept = Vec::new();
        for mut process in std::mem::take(&mut self.processes) {
            if process.role == role {
                terminate(&mut process.child);
            } else {
                kept.push(process);
            }
        }
        self.processes = kept;
        self.record_processes();
    }

    fn stop_all(&mut self) {
        if let Some(mut worker) = self.worker.take() {
            let _ = worker.call(WorkerOp::Shutdown, Duration::from_secs(2));
        }
        // Stop in reverse start order: app, worker, window manager, display.
        while let Some(mut process) = self.processes.pop() {
            terminate(&mut process.child);
        }
        self.app_running = false;
        self.record_processes();
    }
}

/// SIGTERM the child's group, wait up to 2 s, then SIGKILL; always reaps the child.
fn terminate(child: &mut Child) {
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

fn expect_value<T>(
    value: WorkerValue,
    pick: impl FnOnce(WorkerValue) -> Option<T>,
    what: &str,
) -> Result<T, BackendError> {
    pick(value)
        .ok_or_else(|| BackendError::Worker(format!("worker answered {what} with something else")))
}

impl DesktopBackend for LocalDesktop {
    fn display_size(&self) -> DisplaySize {
        self.display
    }

    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        self.stop_app()?;
        let Some(program) = launch.argv.first() else {
            return Err(BackendError::Rejected("app command is empty".to_string()));
        };
        let log = log_file(&self.config.session_dir, "app.log")?;
        let log_err = log.try_clone().map_err(|source| BackendError::Spawn {
            what: "app log".to_string(),
            source,
        })?;
        let mut command = Command::new(program);
        command
            .args(&launch.argv[1..])
            .env_clear()
            .env(
                "PATH",
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_string()),
            )
            .env("DISPLAY", &self.display_name)
            .envs(launch.env.iter().map(|(key, value)| (key, value)))
            .current_dir(&launch.cwd)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        let pid = self.spawn("app", command)?.id();
        self.app_running = true;
        let timeout = Duration::from_millis(u64::from(launch.window.timeout_ms)) + WORKER_TIMEOUT;
        let op = WorkerOp::AwaitApp {
            pid,
            rules: launch.window.clone(),
            settle: launch.settle,
        };
        let value = self.worker()?.call(op, timeout)?;
        expect_value(
            value,
            |v| {
                if let WorkerValue::Handoff(h) = v {
                    Some(*h)
                } else {
                    None
                }
            },
            "await_app",
        )
    }

    fn capture(&mut self) -> Result<Frame, BackendError> {
        let value = self.worker()?.call(WorkerOp::Capture, WORKER_TIMEOUT)?;
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
        let op = WorkerOp::Execute {
            action: action.clone(),
            settle,
        };
        let value = self.worker()?.call(op, WORKER_TIMEOUT)?;
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

    fn facts(&mut self) -> Result<DesktopFacts, BackendError> {
        let value = self.worker()?.call(WorkerOp::Facts, WORKER_TIMEOUT)?;
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
        let value = self.worker()?.call(WorkerOp::ReleaseHeld, WORKER_TIMEOUT)?;
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

    fn process_ids(&self) -> Vec<u32> {
        self.processes
            .iter()
            .map(|process| process.child.id())
            .collect()
    }
}

impl Drop for LocalDesktop {
    fn drop(&mut self) {
        self.stop_all();
    }
}
