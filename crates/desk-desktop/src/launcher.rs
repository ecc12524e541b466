//! `LocalDesktop`: launches and supervises one session's processes (Xvfb, window manager, app,
//! desktop worker) and implements [`DesktopBackend`] through the worker's Unix socket.
//!
//! This is the one place that starts a session's processes, so a sandbox can wrap them here
//! without touching the broker. Every process runs in its own process group and is recorded in
//! `<session_dir>/processes.json` (pid and start time) with the display in `desktop.json`, and
//! the worker listens on `<session_dir>/worker.sock` (0600). The desktop therefore survives its
//! broker: a restarted broker either reattaches to it ([`LocalDesktop::reattach`]: same
//! processes, worker handshake, same display) or reaps it ([`reap_recorded`]). The broker itself
//! never connects to the X server.
//!
//! Every operation first checks that the session's processes are still the ones it started; a
//! dead one fails the operation with [`BackendError::ProcessDied`] naming it, before anything is
//! sent to the desktop.
//!
//! Containment (see [`crate::sandbox`]): with the sandbox on (the default), every process runs
//! inside the session's one bubblewrap sandbox and is recorded by the host pid of its
//! `setpriv`/`nsenter` wrapper (same process group); the sandbox holder is recorded as role
//! `sandbox`. Xvfb always gets a fresh MIT-MAGIC-COOKIE (`-auth`) and `-nolisten tcp`; every
//! process starts from an empty environment plus an allowlist. The worker socket lives in the
//! workspace's `run/` directory and is reached through `/proc/self/fd`, so no socket path
//! depends on the state directory's length.
//!
//! The module's parts: `start.rs` (bringing the processes up), `bus.rs` (the session and
//! accessibility buses), `ops.rs` (the [`DesktopBackend`] operations), `records.rs` (what is
//! recorded on disk, reaping), `stop.rs` (taking them down). This file keeps the type, its
//! configuration and its lifecycle (start, reattach, detach, the liveness check before every
//! operation); that is why it is over 400 lines.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

use desk_contract::DisplaySize;
use desk_contract::desktop::WorkspaceFacts;
use desk_contract::worker::{WorkerOp, WorkerValue};

use crate::error::BackendError;
use crate::layout::SessionDir;
use crate::sandbox::{Sandbox, SandboxPolicy};
use crate::worker_client::WorkerClient;

mod bus;
mod ops;
mod records;
mod start;
mod stop;

pub use records::{RecordedProcess, reap_recorded, recorded_display, recorded_processes};
pub(crate) use records::{
    kill_and_prove, read_desktop_record, remove_display_files, sandbox_holder, start_ticks,
    survivors,
};

/// How to start a local desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDesktopConfig {
    /// Display size; depth is 24.
    pub display: DisplaySize,
    /// The worker program and arguments, e.g. `[<dir>/deskbroker-worker]`. With the sandbox
    /// on, the program (the file alone) is bound read-only inside and also runs as the
    /// sandbox's pid 1 (`<program> hold ...`, see `sandbox/host.rs`).
    pub worker_command: Vec<String>,
    /// The window manager program and arguments; `None` runs without one.
    pub window_manager: Option<Vec<String>>,
    /// The X server program.
    pub xvfb_program: String,
    /// The session directory: logs and `processes.json` live here.
    pub session_dir: SessionDir,
    /// Whether the desktop runs in a sandbox (on by default).
    pub sandbox: SandboxPolicy,
    /// Extra host paths the sandbox shows read-only at the same place (the app profile's
    /// `read_only`); bound when the sandbox starts, so they hold for the session.
    pub read_only: Vec<PathBuf>,
    /// The host filesystem the sandbox shows (the app profile's `[sandbox]` view); chosen when
    /// the sandbox starts, so it holds for the session.
    pub view: crate::sandbox::FsView,
    /// The workspace directories the sandbox may write (the policy's `writable_directories`);
    /// bound when the sandbox starts, so they hold for the session.
    pub writable: crate::sandbox::WritableDirs,
    /// Host paths the app must not see beyond the state directory, `/root` and `/home` (the
    /// benchmark's gold); checked at every handoff.
    pub private_paths: Vec<PathBuf>,
    /// The session's memory, process and CPU limits (its own cgroups, `sandbox::cgroup`).
    pub limits: crate::sandbox::cgroup::Limits,
    /// Whether the limits are applied: `Enforced` (the default) refuses a sandboxed desktop
    /// whose limits cannot be applied ([`BackendError::LimitsUnavailable`]) and tries them
    /// without a sandbox; `Off` (`--unsafe-no-limits`) makes no cgroup.
    pub limits_mode: desk_contract::desktop::LimitsMode,
    /// Where the cgroup v1 hierarchies are mounted (`sandbox::cgroup::CGROUP_ROOT`).
    pub cgroup_root: PathBuf,
}

impl LocalDesktopConfig {
    /// Defaults: Xvfb, openbox, the given worker command.
    pub fn new(
        display: DisplaySize,
        worker_command: Vec<String>,
        session_dir: impl Into<SessionDir>,
    ) -> Self {
        LocalDesktopConfig {
            display,
            worker_command,
            window_manager: Some(vec!["openbox".to_string(), "--sm-disable".to_string()]),
            xvfb_program: "Xvfb".to_string(),
            session_dir: session_dir.into(),
            sandbox: SandboxPolicy::default_for_this_process(),
            read_only: Vec::new(),
            view: crate::sandbox::FsView::Broad,
            writable: crate::sandbox::WritableDirs::attempt_only(),
            private_paths: Vec::new(),
            limits: crate::sandbox::cgroup::Limits::default(),
            limits_mode: desk_contract::desktop::LimitsMode::Enforced,
            cgroup_root: PathBuf::from(crate::sandbox::cgroup::CGROUP_ROOT),
        }
    }
}

pub use desk_contract::worker::{WORKER_SOCKET_ENV, WORKER_WAIT_WM_ENV};

/// How long the worker waits for the window manager to take the display (less than
/// [`WORKER_TIMEOUT`], so the worker's own reason reaches the error).
const WM_TIMEOUT: Duration = Duration::from_secs(20);

/// The worker's socket inside the run directory.
pub(crate) const WORKER_SOCKET_FILE: &str = "worker.sock";

/// The X authority file inside the run directory.
const XAUTHORITY_FILE: &str = "xauthority";

/// Environment variables passed from the broker to the worker when set (nothing secret; the
/// worker's test-only fault hook is off unless a test sets it in the broker's environment).
const WORKER_ENV_ALLOWLIST: &[&str] = &[
    "RUST_LOG",
    "RUST_BACKTRACE",
    desk_contract::worker::WORKER_FAULT_ENV,
];

/// Connects to the socket `name` in `dir` through `/proc/self/fd`, so the path handed to the
/// kernel is short whatever the length of `dir`.
fn connect_in(dir: &Path, name: &str) -> std::io::Result<UnixStream> {
    use std::os::fd::AsRawFd;
    let handle = File::open(dir)?;
    UnixStream::connect(format!("/proc/self/fd/{}/{name}", handle.as_raw_fd()))
}

/// The pinned openbox configuration, shipped with the project (see `wm/openbox.xml`): one
/// desktop, no key bindings, no menu, move, resize or close bindings; a press inside a window
/// only focuses and raises it (and is replayed to it).
pub const OPENBOX_CONFIG: &str = include_str!("../wm/openbox.xml");

/// What a local desktop offers: everything its worker does (clipboard, accessibility on its
/// private bus, the app's windows, Stop through `stop-generation`, detaching) and, when
/// `sandboxed`, the lease deadline its sandbox's first process enforces.
pub(crate) fn capabilities(sandboxed: bool) -> crate::BackendCapabilities {
    crate::BackendCapabilities {
        clipboard: true,
        accessibility: true,
        windows: true,
        interrupt: true,
        lease_deadline: sandboxed,
        detach: true,
    }
}

/// Its file name in the directory it is written to (the sandbox's read-only `host/`, or the
/// session directory without a sandbox).
const OPENBOX_CONFIG_FILE: &str = "openbox.xml";

struct Supervised {
    role: &'static str,
    pid: u32,
    start_ticks: u64,
    /// `None` when adopted from an earlier broker run (not our child: watched through /proc).
    child: Option<Child>,
}

impl Supervised {
    /// How it ended, when it is no longer running.
    fn ended(&mut self) -> Option<String> {
        match &mut self.child {
            Some(child) => match child.try_wait() {
                Ok(Some(status)) => Some(describe_exit(status)),
                Ok(None) => None,
                Err(error) => Some(format!("cannot be waited for ({error})")),
            },
            None => (start_ticks(self.pid) != Some(self.start_ticks)).then(|| "exited".to_string()),
        }
    }
}

fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "exited".to_string(),
    }
}

/// A role as people call it.
fn role_label(role: &str) -> &str {
    match role {
        "xvfb" => "the X server (Xvfb)",
        "window_manager" => "the window manager",
        "worker" => "the desktop worker",
        "app" => "the app",
        "sandbox" => "the sandbox (bwrap)",
        "session_bus" => "the session bus (dbus-daemon)",
        "a11y_bus" => "the accessibility bus launcher",
        other => other,
    }
}

fn static_role(role: &str) -> &'static str {
    match role {
        "xvfb" => "xvfb",
        "window_manager" => "window_manager",
        "worker" => "worker",
        "app" => "app",
        "sandbox" => "sandbox",
        "session_bus" => "session_bus",
        "a11y_bus" => "a11y_bus",
        _ => "other",
    }
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
    /// Set by `detach`: dropping leaves the processes running for a later broker.
    detached: bool,
    /// The sandbox every process runs in, when on.
    sandbox: Option<Sandbox>,
    /// The host directory holding the worker socket and the X authority file.
    run_dir: PathBuf,
    /// The workspace as measured at the last handoff.
    workspace: Option<WorkspaceFacts>,
}

const WORKER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a clipboard operation may take in the worker: its own deadline
/// (`desk_contract::clipboard::DEADLINE_MS`) and a margin for a 16 MiB line both ways.
const CLIPBOARD_WORKER_TIMEOUT: Duration =
    Duration::from_millis(desk_contract::clipboard::DEADLINE_MS + 5_000);
const XVFB_START_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes the pinned configuration into `dir` and points openbox at it (other window
/// managers are left alone). The path is absolute: openbox silently falls back to the system
/// rc.xml when its `--config-file` cannot be loaded (a relative path is one way).
fn pin_openbox_config(mut argv: Vec<String>, dir: &Path) -> Result<Vec<String>, BackendError> {
    if argv.first().is_none_or(|program| program != "openbox") {
        return Ok(argv);
    }
    let spawn_error = |path: &Path| {
        let what = format!("window manager configuration {}", path.display());
        move |source| BackendError::Spawn { what, source }
    };
    let path = dir.join(OPENBOX_CONFIG_FILE);
    let path = std::path::absolute(&path).map_err(spawn_error(&path))?;
    std::fs::write(&path, OPENBOX_CONFIG).map_err(spawn_error(&path))?;
    // Readable by the sandbox uid whatever the broker's umask: openbox silently falls back to
    // the system configuration when it cannot read this file.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
        .map_err(spawn_error(&path))?;
    argv.extend(["--config-file".to_string(), path.display().to_string()]);
    Ok(argv)
}

fn log_file(path: &Path) -> Result<File, BackendError> {
    File::create(path).map_err(|source| BackendError::Spawn {
        what: format!("log file {}", path.display()),
        source,
    })
}

impl LocalDesktop {
    /// Starts Xvfb, the window manager and the worker, and checks the worker's hello.
    pub fn start(config: LocalDesktopConfig) -> Result<LocalDesktop, BackendError> {
        std::fs::create_dir_all(config.session_dir.path()).map_err(|source| {
            BackendError::Spawn {
                what: format!("session directory {}", config.session_dir.path().display()),
                source,
            }
        })?;
        let workspace = crate::sandbox::ensure_workspace(&config.session_dir, config.sandbox)?;
        let mut desktop = LocalDesktop {
            display_name: String::new(),
            display: config.display,
            config,
            processes: Vec::new(),
            worker: None,
            app_running: false,
            detached: false,
            sandbox: None,
            workspace: None,
            run_dir: workspace.join("run"),
        };
        match desktop.start_processes() {
            Ok(()) => Ok(desktop),
            Err(error) => {
                desktop.stop_all();
                Err(error)
            }
        }
    }

    /// Adopts the desktop an earlier broker run started in `config.session_dir`: every process
    /// in `processes.json` must still be the same process (pid and start time), the worker must
    /// answer `hello` on its socket with this protocol version and `config.display`.
    /// `Ok(None)` when no desktop was ever recorded there. On error nothing is killed; the
    /// caller decides (usually [`reap_recorded`]).
    pub fn reattach(config: LocalDesktopConfig) -> Result<Option<LocalDesktop>, BackendError> {
        let path = config.session_dir.processes_file();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(BackendError::DesktopFailed(format!(
                    "failed to read {}: {error}",
                    path.display()
                )));
            }
        };
        let recorded: Vec<RecordedProcess> = serde_json::from_str(&text).map_err(|error| {
            BackendError::DesktopFailed(format!("unreadable {}: {error}", path.display()))
        })?;
        if recorded.is_empty() {
            return Ok(None);
        }
        let record = read_desktop_record(&config.session_dir).ok_or_else(|| {
            BackendError::DesktopFailed("the desktop's display was not recorded".to_string())
        })?;
        let mut processes = Vec::new();
        for process in &recorded {
            if start_ticks(process.pid) != Some(process.start_ticks) {
                return Err(BackendError::ProcessDied(format!(
                    "{} (pid {}) is no longer running",
                    role_label(&process.role),
                    process.pid
                )));
            }
            processes.push(Supervised {
                role: static_role(&process.role),
                pid: process.pid,
                start_ticks: process.start_ticks,
                child: None,
            });
        }
        for role in ["xvfb", "worker"] {
            if !processes.iter().any(|process| process.role == role) {
                return Err(BackendError::DesktopFailed(format!(
                    "{} was not recorded",
                    role_label(role)
                )));
            }
        }
        let app_running = processes.iter().any(|process| process.role == "app");
        let run_dir = record.run_dir.clone().ok_or_else(|| {
            BackendError::DesktopFailed("the desktop's run directory was not recorded".to_string())
        })?;
        let stream = connect_in(&run_dir, WORKER_SOCKET_FILE).map_err(|error| {
            BackendError::DesktopFailed(format!(
                "failed to connect to the desktop worker in {}: {error}",
                run_dir.display()
            ))
        })?;
        let mut desktop = LocalDesktop {
            display_name: record.display_name,
            display: config.display,
            config,
            processes,
            worker: None,
            app_running,
            // Until the handshake succeeds, dropping must not stop what the caller may reap.
            detached: true,
            sandbox: record.sandbox,
            workspace: None,
            run_dir,
        };
        desktop.handshake(stream)?;
        desktop.detached = false;
        tracing::info!(display = %desktop.display_name, "reattached to a running desktop");
        Ok(Some(desktop))
    }

    /// Lets go of the desktop without stopping it: the worker connection is closed (the worker
    /// releases held input and waits for the next broker) and dropping no longer kills anything.
    pub fn detach(&mut self) {
        self.worker = None;
        self.detached = true;
    }

    /// Fails with [`BackendError::ProcessDied`] naming the first of the session's processes
    /// (other than `except`) that is no longer running.
    fn check_alive(&mut self, except: Option<&str>) -> Result<(), BackendError> {
        // A limit the kernel enforced explains a death, or ends the session by itself (`ops.rs`).
        self.check_limits()?;
        for process in &mut self.processes {
            if Some(process.role) == except {
                continue;
            }
            if let Some(how) = process.ended() {
                return Err(BackendError::ProcessDied(format!(
                    "{} (pid {}) {how}",
                    role_label(process.role),
                    process.pid
                )));
            }
        }
        Ok(())
    }

    /// Explains a failed operation by a dead process when there is one. `input_sent` keeps an
    /// unknown outcome unknown (an `execute` error that may have delivered input).
    fn explain(&mut self, error: BackendError) -> BackendError {
        match self.check_alive(None) {
            Ok(()) => error,
            Err(BackendError::ProcessDied(reason) | BackendError::ResourceLimit(reason))
                if error.input_may_have_been_sent() =>
            {
                BackendError::OutcomeUnknown(format!("{error}; {reason}"))
            }
            Err(died) => died,
        }
    }

    /// The X display name, e.g. `:3`.
    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    /// The display's Unix socket and X authority file as the host reaches them (through the
    /// sandbox holder's root when sandboxed), for host tools such as `deskbroker perf`.
    pub fn host_x_access(&self) -> (PathBuf, PathBuf) {
        let number = self.display_name.trim_start_matches(':');
        let socket = format!("tmp/.X11-unix/X{number}");
        let socket = match &self.sandbox {
            Some(sandbox) => sandbox.root_from_host().join(socket),
            None => Path::new("/").join(socket),
        };
        (socket, self.run_dir.join(XAUTHORITY_FILE))
    }

    fn worker(&mut self) -> Result<&mut WorkerClient, BackendError> {
        self.worker.as_mut().ok_or(BackendError::ShutDown)
    }

    /// One worker request, refused before sending when a process died, and its failure
    /// explained by a dead process when there is one.
    fn call(&mut self, op: WorkerOp) -> Result<WorkerValue, BackendError> {
        self.call_within(op, WORKER_TIMEOUT)
    }

    /// [`LocalDesktop::call`] with its own answer deadline.
    fn call_within(
        &mut self,
        op: WorkerOp,
        timeout: Duration,
    ) -> Result<WorkerValue, BackendError> {
        self.check_alive(None)?;
        match self.worker()?.call(op, timeout) {
            Ok(value) => Ok(value),
            Err(error) => Err(self.explain(error)),
        }
    }
}

/// The last lines of a log file, joined with " | " (empty when unreadable or empty).
fn log_tail(path: &Path) -> String {
    const LINES: usize = 5;
    const MAX_CHARS: usize = 600;
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(LINES)..].join(" | ");
    let skip = tail.chars().count().saturating_sub(MAX_CHARS);
    tail.chars().skip(skip).collect()
}

/// `"; last lines of NAME: ..."` for an error message, or `" (see NAME)"` when empty.
fn tail_suffix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    match log_tail(path).as_str() {
        "" => format!(" (see {name})"),
        tail => format!("; last lines of {name}: {tail}"),
    }
}

impl LocalDesktop {
    /// Adds the last lines of the log of the session's process `role` to a start failure.
    fn with_log_tail(&self, error: BackendError, role: &str) -> BackendError {
        let suffix = tail_suffix(&self.config.session_dir.log_file(role));
        match error {
            BackendError::ProcessDied(message) => {
                BackendError::ProcessDied(format!("{message}{suffix}"))
            }
            BackendError::DesktopFailed(message) => {
                BackendError::DesktopFailed(format!("{message}{suffix}"))
            }
            other => other,
        }
    }
}
