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

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use desk_contract::clipboard::{ClipboardText, ClipboardWritten};
use desk_contract::desktop::{
    ActionOutcome, DesktopFacts, Frame, Handoff, SandboxMode, WorkspaceFacts,
};
use desk_contract::validate::InputAction;
use desk_contract::worker::{WORKER_PROTOCOL_VERSION, WorkerOp, WorkerValue};
use desk_contract::{DisplaySize, SettlePolicy};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;
use crate::layout::SessionDir;
use crate::sandbox::{INSIDE_RUN_DIR, SAFE_PATH, Sandbox, SandboxPolicy, SandboxStart};
use crate::worker_client::WorkerClient;

mod bus;

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
    pub session_dir: SessionDir,
    /// Whether the desktop runs in a sandbox (on by default).
    pub sandbox: SandboxPolicy,
    /// Extra host paths the sandbox shows read-only at the same place (the app profile's
    /// `read_only`); bound when the sandbox starts, so they hold for the session.
    pub read_only: Vec<PathBuf>,
    /// The workspace directories the sandbox may write (the policy's `writable_directories`);
    /// bound when the sandbox starts, so they hold for the session.
    pub writable: crate::sandbox::WritableDirs,
    /// Host paths the app must not see beyond the state directory, `/root` and `/home` (the
    /// benchmark's gold); checked at every handoff.
    pub private_paths: Vec<PathBuf>,
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
            writable: crate::sandbox::WritableDirs::attempt_only(),
            private_paths: Vec::new(),
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

/// The display facts a restarted broker needs, recorded in `<session_dir>/desktop.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DesktopRecord {
    /// The X display name, e.g. `:3`.
    pub(crate) display_name: String,
    /// The display size requested at launch.
    width: u32,
    /// The display size requested at launch.
    height: u32,
    /// The sandbox the desktop runs in, when on.
    #[serde(default)]
    pub(crate) sandbox: Option<Sandbox>,
    /// The host directory holding `worker.sock` and the X authority file.
    #[serde(default)]
    run_dir: Option<PathBuf>,
}

pub use desk_contract::worker::{WORKER_SOCKET_ENV, WORKER_WAIT_WM_ENV};

/// How long the worker waits for the window manager to take the display (less than
/// [`WORKER_TIMEOUT`], so the worker's own reason reaches the error).
const WM_TIMEOUT: Duration = Duration::from_secs(20);

/// The worker's socket inside the run directory.
pub const WORKER_SOCKET_FILE: &str = "worker.sock";

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

/// The start time of a live (not zombie) process, in clock ticks since boot.
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
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
pub fn reap_recorded(session_dir: impl AsRef<Path>) -> usize {
    let session_dir = &SessionDir::at(session_dir.as_ref());
    let Ok(text) = std::fs::read_to_string(session_dir.processes_file()) else {
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
    if let (Some(record), Some(xvfb)) = (
        read_desktop_record(session_dir).filter(|record| record.sandbox.is_none()),
        recorded.iter().find(|process| process.role == "xvfb"),
    ) {
        wait_gone(xvfb.pid, xvfb.start_ticks, Duration::from_secs(2));
        remove_display_files(&record.display_name, xvfb.pid);
    }
    crate::sandbox::remove_workspace(session_dir);
    alive.len()
}

/// Writes `text` to `path` through a temporary file and a rename, so a broker killed meanwhile
/// leaves either the old or the new content for its successor.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

impl RecordedProcess {
    /// Whether this very process (same pid, same start time) is still running.
    pub fn is_alive(&self) -> bool {
        start_ticks(self.pid) == Some(self.start_ticks)
    }
}

/// The processes recorded in `session_dir/processes.json` (empty when there is none).
pub fn recorded_processes(session_dir: impl AsRef<Path>) -> Vec<RecordedProcess> {
    std::fs::read_to_string(SessionDir::at(session_dir.as_ref()).processes_file())
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The X display name recorded for the desktop in `session_dir`, e.g. `:3`.
pub fn recorded_display(session_dir: impl AsRef<Path>) -> Option<String> {
    read_desktop_record(&SessionDir::at(session_dir.as_ref())).map(|record| record.display_name)
}

pub(crate) fn read_desktop_record(session_dir: &SessionDir) -> Option<DesktopRecord> {
    let text = std::fs::read_to_string(session_dir.desktop_file()).ok()?;
    serde_json::from_str(&text).ok()
}

/// Waits until the process `pid` started at `ticks` is gone.
fn wait_gone(pid: u32, ticks: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while start_ticks(pid) == Some(ticks) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Removes what a killed X server `xvfb_pid` (now gone) left of display `display_name`: its lock
/// file when it still names that pid, and its socket when nothing accepts connections on it any
/// more (a live server that reused the display number keeps its socket).
pub(crate) fn remove_display_files(display_name: &str, xvfb_pid: u32) {
    let Some(number) = display_name
        .strip_prefix(':')
        .and_then(|rest| rest.parse::<u32>().ok())
    else {
        return;
    };
    let lock = PathBuf::from(format!("/tmp/.X{number}-lock"));
    let owner = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok());
    if owner == Some(xvfb_pid) {
        remove_display_file(&lock);
    }
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{number}"));
    if let Err(error) = UnixStream::connect(&socket)
        && error.kind() == std::io::ErrorKind::ConnectionRefused
    {
        remove_display_file(&socket);
    }
}

fn remove_display_file(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => tracing::info!(path = %path.display(), "removed a dead display's file"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "failed to remove a dead display's file")
        }
    }
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
            Err(BackendError::ProcessDied(reason)) if error.input_may_have_been_sent() => {
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

    /// A command running `argv` as a desktop process: inside the sandbox when on, with
    /// exactly `env` as its environment, in `cwd` (`/` when `None`).
    fn desktop_command(
        &self,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> Result<Command, BackendError> {
        let Some(program) = argv.first() else {
            return Err(BackendError::Rejected("empty command".to_string()));
        };
        let cwd = cwd.unwrap_or(Path::new("/"));
        if let Some(sandbox) = &self.sandbox {
            return Ok(sandbox.command(argv, cwd, env));
        }
        let mut command = Command::new(program);
        command
            .args(&argv[1..])
            .env_clear()
            .envs(env.iter().map(|(key, value)| (key, value)))
            .current_dir(cwd);
        Ok(command)
    }

    /// Host paths the app must not see: the broker's state directory and home directories.
    fn forbidden_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![PathBuf::from("/root"), PathBuf::from("/home")];
        if let Some(state) = self.config.session_dir.state_dir() {
            paths.push(state.to_path_buf());
        }
        paths.extend(self.config.private_paths.iter().cloned());
        paths
            .into_iter()
            .map(|path| std::fs::canonicalize(&path).unwrap_or(path))
            .collect()
    }

    /// The X authority file as the desktop's processes see it.
    fn xauthority(&self) -> String {
        match &self.sandbox {
            Some(_) => format!("{INSIDE_RUN_DIR}/{XAUTHORITY_FILE}"),
            None => self.run_dir.join(XAUTHORITY_FILE).display().to_string(),
        }
    }

    /// The environment every X client of the desktop starts from.
    fn x_client_env(&self) -> Vec<(String, String)> {
        let home = match &self.sandbox {
            Some(_) => "/tmp".to_string(),
            None => self.run_dir.display().to_string(),
        };
        let mut env = vec![
            ("PATH".to_string(), SAFE_PATH.to_string()),
            ("HOME".to_string(), home),
            ("DISPLAY".to_string(), self.display_name.clone()),
            ("XAUTHORITY".to_string(), self.xauthority()),
        ];
        if let Some(address) = self.session_bus_address() {
            env.push(("DBUS_SESSION_BUS_ADDRESS".to_string(), address));
        }
        env
    }

    fn start_sandbox(&mut self) -> Result<(), BackendError> {
        let workspace = self
            .run_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        // The worker's directory, read-only: the worker binary and its sibling tools; then the
        // profile's read-only paths.
        let read_only: Vec<PathBuf> = self
            .config
            .worker_command
            .first()
            .and_then(|program| std::fs::canonicalize(program).ok())
            .and_then(|program| program.parent().map(Path::to_path_buf))
            .into_iter()
            .chain(self.config.read_only.iter().cloned())
            .collect();
        let (mut command, start) = SandboxStart::new(
            self.config.sandbox,
            &workspace,
            &self.config.writable,
            &read_only,
        )?;
        let log = log_file(&self.config.session_dir.log_file("sandbox"))?;
        command.stderr(log).process_group(0);
        let child = self.spawn("sandbox", command)?;
        let stdout = child.stdout.take().ok_or_else(|| {
            BackendError::DesktopFailed("bwrap stdout was not captured".to_string())
        })?;
        let sandbox = start.finish(stdout);
        let sandbox = match sandbox {
            Ok(sandbox) => sandbox,
            Err(error) => {
                let detail = log_tail(&self.config.session_dir.log_file("sandbox"));
                return Err(match error {
                    BackendError::SandboxUnavailable(message) if !detail.is_empty() => {
                        BackendError::SandboxUnavailable(format!("{message}: {detail}"))
                    }
                    other => other,
                });
            }
        };
        self.sandbox = Some(sandbox);
        Ok(())
    }

    fn start_processes(&mut self) -> Result<(), BackendError> {
        if let SandboxPolicy::On { .. } = self.config.sandbox {
            self.start_sandbox()?;
        }
        let owner = self
            .sandbox
            .as_ref()
            .filter(|s| s.drop_root)
            .map(|s| (s.uid, s.gid));
        crate::sandbox::write_xauthority(&self.run_dir.join(XAUTHORITY_FILE), owner)?;
        self.start_xvfb()?;
        if let Some(argv) = self.config.window_manager.clone() {
            // Inside the sandbox the session directory is out of reach: the configuration goes
            // to the workspace's read-only `host/` directory, bound at the same path.
            let dir = match &self.sandbox {
                Some(sandbox) => sandbox.host_dir(),
                None => self.config.session_dir.path().to_path_buf(),
            };
            let argv = pin_openbox_config(argv, &dir)?;
            let log = log_file(&self.config.session_dir.log_file("window-manager"))?;
            let env = self.x_client_env();
            let mut command = self.desktop_command(&argv, None, &env)?;
            command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .process_group(0);
            self.spawn("window_manager", command)?;
        }
        self.start_a11y_bus()?;
        self.start_worker()
    }

    fn start_xvfb(&mut self) -> Result<(), BackendError> {
        let size = self.config.display;
        let log = log_file(&self.config.session_dir.log_file("xvfb"))?;
        let argv: Vec<String> = [
            self.config.xvfb_program.as_str(),
            "-displayfd",
            "1",
            "-screen",
            "0",
            &format!("{}x{}x24", size.width, size.height),
            "-auth",
            &self.xauthority(),
            "-nolisten",
            "tcp",
            "-noreset",
            "+extension",
            "XTEST",
            "-dpi",
            "96",
        ]
        .iter()
        .map(|part| part.to_string())
        .collect();
        let env = vec![("PATH".to_string(), SAFE_PATH.to_string())];
        let mut command = self.desktop_command(&argv, None, &env)?;
        command
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
        let record = DesktopRecord {
            display_name: self.display_name.clone(),
            width: size.width,
            height: size.height,
            sandbox: self.sandbox.clone(),
            run_dir: Some(self.run_dir.clone()),
        };
        let path = self.config.session_dir.desktop_file();
        let text = serde_json::to_string_pretty(&record).map_err(|error| {
            BackendError::DesktopFailed(format!("failed to encode {}: {error}", path.display()))
        })?;
        write_atomically(&path, &text).map_err(|source| BackendError::Spawn {
            what: format!("desktop record {}", path.display()),
            source,
        })?;
        Ok(())
    }

    fn start_worker(&mut self) -> Result<(), BackendError> {
        let argv = self.config.worker_command.clone();
        if argv.is_empty() {
            return Err(BackendError::DesktopFailed(
                "empty worker command".to_string(),
            ));
        }
        let socket = self.run_dir.join(WORKER_SOCKET_FILE);
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(BackendError::Spawn {
                    what: format!("stale worker socket {}", socket.display()),
                    source,
                });
            }
        }
        let log = log_file(&self.config.session_dir.log_file("worker"))?;
        // A short socket path whatever the state directory: fixed inside the sandbox, relative
        // to the worker's working directory without it.
        let (inside_socket, cwd) = match &self.sandbox {
            Some(_) => (format!("{INSIDE_RUN_DIR}/{WORKER_SOCKET_FILE}"), None),
            None => (WORKER_SOCKET_FILE.to_string(), Some(self.run_dir.clone())),
        };
        let mut env = self.x_client_env();
        env.push((WORKER_SOCKET_ENV.to_string(), inside_socket));
        if self.config.window_manager.is_some() {
            // The worker listens only once the manager took the display, so the app (started
            // after the handshake) never maps a window the manager does not adopt.
            let wait_ms = WM_TIMEOUT.as_millis().to_string();
            env.push((WORKER_WAIT_WM_ENV.to_string(), wait_ms));
        }
        for name in WORKER_ENV_ALLOWLIST {
            if let Ok(value) = std::env::var(name) {
                env.push((name.to_string(), value));
            }
        }
        let mut command = self.desktop_command(&argv, cwd.as_deref(), &env)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0);
        self.spawn("worker", command)?;
        let deadline = Instant::now() + WORKER_TIMEOUT;
        let stream = loop {
            match connect_in(&self.run_dir, WORKER_SOCKET_FILE) {
                Ok(stream) => break stream,
                Err(error) => {
                    if let Err(died) = self.check_alive(None) {
                        return Err(self.with_log_tail(died, "worker"));
                    }
                    if Instant::now() >= deadline {
                        return Err(BackendError::Worker(format!(
                            "the worker did not listen on {} within {} s: {error}{}",
                            socket.display(),
                            WORKER_TIMEOUT.as_secs(),
                            tail_suffix(&self.config.session_dir.log_file("worker"))
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        };
        self.handshake(stream)
    }

    /// Says hello on a fresh worker connection and checks the protocol and display.
    fn handshake(&mut self, stream: UnixStream) -> Result<(), BackendError> {
        let mut client = WorkerClient::new(stream)?;
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
        let pid = child.id();
        self.processes.push(Supervised {
            role,
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            child: Some(child),
        });
        self.record_processes();
        let last = self.processes.len() - 1;
        self.processes[last]
            .child
            .as_mut()
            .ok_or_else(|| BackendError::DesktopFailed(format!("{role} was not started")))
    }

    fn record_processes(&self) {
        let recorded: Vec<RecordedProcess> = self
            .processes
            .iter()
            .map(|process| RecordedProcess {
                role: process.role.to_string(),
                pid: process.pid,
                start_ticks: process.start_ticks,
            })
            .collect();
        let path = self.config.session_dir.processes_file();
        if let Ok(text) = serde_json::to_string_pretty(&recorded)
            && let Err(error) = write_atomically(&path, &text)
        {
            tracing::warn!(%error, path = %path.display(), "failed to record processes");
        }
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

    fn stop_role(&mut self, role: &str) {
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

    fn stop_all(&mut self) {
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
        self.app_running = false;
        self.record_processes();
        if self.sandbox.is_some() {
            crate::sandbox::remove_workspace(&self.config.session_dir);
        }
    }
}

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

fn expect_value<T>(
    value: WorkerValue,
    pick: impl FnOnce(WorkerValue) -> Option<T>,
    what: &str,
) -> Result<T, BackendError> {
    pick(value)
        .ok_or_else(|| BackendError::Worker(format!("worker answered {what} with something else")))
}

impl LocalDesktop {
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
        let mut env = self.x_client_env();
        for (key, value) in &launch.env {
            env.retain(|(existing, _)| existing != key);
            env.push((key.clone(), value.clone()));
        }
        let mut command = self.desktop_command(&launch.argv, Some(&launch.cwd), &env)?;
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
        let facts = crate::sandbox::facts::measure(
            host_pid,
            mode,
            &self.forbidden_paths(),
            &workspace,
            &writable,
        );
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

impl Drop for LocalDesktop {
    fn drop(&mut self) {
        if !self.detached {
            self.stop_all();
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
