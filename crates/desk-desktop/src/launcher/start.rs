//! Starting a desktop: the sandbox (when on), Xvfb with a fresh cookie, the window manager on
//! the pinned configuration, and the worker, each in its own process group, recorded on disk
//! (`records.rs`) as soon as it runs, and the worker's protocol handshake.
//!
//! Over 400 lines: the start is one ordered procedure whose steps each record what they started;
//! split, the order would be read across files.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use desk_contract::worker::{
    WORKER_PROTOCOL_VERSION, WORKER_SOCKET_ENV, WORKER_WAIT_WM_ENV, WorkerOp, WorkerValue,
};

use super::records::{
    DesktopRecord, RecordedProcess, remove_stale_socket, start_ticks, write_atomically,
};
use super::{
    LocalDesktop, Supervised, WM_TIMEOUT, WORKER_ENV_ALLOWLIST, WORKER_SOCKET_FILE, WORKER_TIMEOUT,
    XAUTHORITY_FILE, XVFB_START_TIMEOUT, connect_in, log_file, log_tail, pin_openbox_config,
    tail_suffix,
};
use crate::error::BackendError;
use crate::sandbox::{
    INSIDE_BUS_DIR, INSIDE_RUN_DIR, Identities, Role, SAFE_PATH, SandboxPolicy, SandboxStart,
    start_gate,
};
use crate::worker_client::WorkerClient;

impl LocalDesktop {
    fn start_sandbox(&mut self) -> Result<(), BackendError> {
        let workspace = self
            .run_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        // The worker program alone (never its directory, where `deskbroker` lies), read-only:
        // it is also the sandbox's pid 1 (`hold`); then the profile's read-only paths.
        let worker = self
            .config
            .worker_command
            .first()
            .map(|program| std::fs::canonicalize(program).unwrap_or_else(|_| program.into()))
            .ok_or_else(|| BackendError::DesktopFailed("empty worker command".to_string()))?;
        let read_only: Vec<PathBuf> = std::iter::once(worker.clone())
            .chain(self.config.read_only.iter().cloned())
            .collect();
        let identities = match self.config.sandbox {
            // A root broker's session has its own two identities, claimed with its workspace.
            SandboxPolicy::On { .. } if nix::unistd::geteuid().is_root() => {
                crate::sandbox::identity::load(&self.config.session_dir).ok_or_else(|| {
                    BackendError::SandboxUnavailable(
                        "the session's identities were not claimed".to_string(),
                    )
                })?
            }
            SandboxPolicy::On { uid, gid } => Identities::single(uid, gid),
            SandboxPolicy::Off => {
                return Err(BackendError::DesktopFailed(
                    "the sandbox is off for this desktop".to_string(),
                ));
            }
        };
        let (mut command, start) = SandboxStart::new(
            self.config.sandbox,
            identities,
            &workspace,
            &self.config.writable,
            &read_only,
            &worker,
            &self.config.view,
        )?;
        let log = log_file(&self.config.session_dir.log_file("sandbox"))?;
        command.stderr(log).process_group(0);
        // One start per core at a time (`sandbox::start_gate`); the start's own bound counts
        // from here.
        let queued = Instant::now();
        let slot = start_gate::host_gate().enter(start_gate::SLOT_WAIT)?;
        let started = Instant::now();
        let child = self.spawn("sandbox", command)?;
        let stdout = child.stdout.take().ok_or_else(|| {
            BackendError::DesktopFailed("bwrap stdout was not captured".to_string())
        })?;
        let sandbox = start.finish(stdout);
        drop(slot);
        tracing::info!(
            session_dir = %self.config.session_dir.path().display(),
            wait_ms = u64::try_from(started.duration_since(queued).as_millis()).unwrap_or(u64::MAX),
            start_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ok = sandbox.is_ok(),
            "sandbox start"
        );
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

    pub(super) fn start_processes(&mut self) -> Result<(), BackendError> {
        // The session's cgroups first: every process below is spawned into them (`ops.rs`).
        self.create_cgroup()?;
        if let SandboxPolicy::On { .. } = self.config.sandbox {
            self.start_sandbox()?;
        }
        let owner = self
            .sandbox
            .as_ref()
            .filter(|s| s.drop_root)
            .map(|s| (s.uid, s.gid));
        // The app's own cookie, when it has an identity of its own (`appauth/`, its uid's).
        let app_cookie = self.app_xauthority_host();
        let app = match (&self.sandbox, &app_cookie) {
            (Some(sandbox), Some(path)) => {
                let ids = sandbox.ids(Role::App);
                Some((path.as_path(), (ids.uid, ids.gid)))
            }
            _ => None,
        };
        crate::sandbox::write_xauthority(&self.run_dir.join(XAUTHORITY_FILE), owner, app)?;
        self.start_xvfb()?;
        if let Some(argv) = self.config.window_manager.clone() {
            // Inside the sandbox the session directory is out of reach: the configuration goes
            // to the workspace's read-only `host/` directory, bound at the same path.
            let dir = match &self.sandbox {
                Some(sandbox) => sandbox.host_dir(),
                None => self.config.session_dir.path().to_path_buf(),
            };
            let argv = pin_openbox_config(argv, &dir)?;
            let env = self.x_client_env();
            self.spawn_logged(
                "window_manager",
                "window-manager",
                &argv,
                None,
                &env,
                Stdio::null(),
            )?;
        }
        self.start_a11y_bus()?;
        self.start_worker()
    }

    fn start_xvfb(&mut self) -> Result<(), BackendError> {
        let size = self.config.display;
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
        let child = self.spawn_logged("xvfb", "xvfb", &argv, None, &env, Stdio::piped())?;
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
        remove_stale_socket(&socket, "worker socket")?;
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
        self.spawn_logged_as(
            Role::Worker,
            "worker",
            "worker",
            &argv,
            cwd.as_deref(),
            &env,
            Stdio::null(),
        )?;
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
    pub(super) fn handshake(&mut self, stream: UnixStream) -> Result<(), BackendError> {
        // Whoever listens at the path must be the recorded worker (`ops.rs`).
        self.check_worker_peer(&stream)?;
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

    pub(super) fn spawn(
        &mut self,
        role: &'static str,
        mut command: Command,
    ) -> Result<&mut Child, BackendError> {
        let spawned = match crate::sandbox::cgroup::SessionCgroup::load(&self.config.session_dir) {
            Some(cgroup) => cgroup.spawn_inside(|| command.spawn())?,
            None => command.spawn(),
        };
        let child = spawned.map_err(|source| BackendError::Spawn {
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

    /// Spawns `argv` as the desktop process `role` ([`LocalDesktop::command_as`]: inside
    /// the sandbox when on, with exactly `env`, in `cwd`), in its own process group and recorded
    /// ([`LocalDesktop::spawn`]): stdin from `/dev/null`, stdout to `stdout`, stderr to the
    /// session's log file `log` (`<log>.log`, created anew before anything else).
    pub(super) fn spawn_logged(
        &mut self,
        role: &'static str,
        log: &str,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
        stdout: Stdio,
    ) -> Result<&mut Child, BackendError> {
        self.spawn_logged_as(Role::Desktop, role, log, argv, cwd, env, stdout)
    }

    /// [`LocalDesktop::spawn_logged`] under the identity of `identity` (the worker's own).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spawn_logged_as(
        &mut self,
        identity: Role,
        role: &'static str,
        log: &str,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
        stdout: Stdio,
    ) -> Result<&mut Child, BackendError> {
        let log = log_file(&self.config.session_dir.log_file(log))?;
        let mut command = self.command_as(identity, argv, cwd, env)?;
        command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(log)
            .process_group(0);
        self.spawn(role, command)
    }

    /// The processes as `processes.json` records them.
    pub(super) fn recorded(&self) -> Vec<RecordedProcess> {
        self.processes
            .iter()
            .map(|process| RecordedProcess {
                role: process.role.to_string(),
                pid: process.pid,
                start_ticks: process.start_ticks,
            })
            .collect()
    }

    pub(super) fn record_processes(&self) {
        let recorded = self.recorded();
        let path = self.config.session_dir.processes_file();
        if let Ok(text) = serde_json::to_string_pretty(&recorded)
            && let Err(error) = write_atomically(&path, &text)
        {
            tracing::warn!(%error, path = %path.display(), "failed to record processes");
        }
    }

    /// A command running `argv` as a process of `role` (the app's own identity when it has
    /// one): inside the sandbox when on, with exactly `env` as its environment, in `cwd` (`/`
    /// when `None`).
    pub(super) fn command_as(
        &self,
        role: Role,
        argv: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> Result<Command, BackendError> {
        let Some(program) = argv.first() else {
            return Err(BackendError::Rejected("empty command".to_string()));
        };
        let cwd = cwd.unwrap_or(Path::new("/"));
        if let Some(sandbox) = &self.sandbox {
            return Ok(sandbox.command_as(role, argv, cwd, env));
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
    pub(super) fn forbidden_paths(&self) -> Vec<PathBuf> {
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
    pub(super) fn xauthority(&self) -> String {
        match &self.sandbox {
            Some(_) => format!("{INSIDE_RUN_DIR}/{XAUTHORITY_FILE}"),
            None => self.run_dir.join(XAUTHORITY_FILE).display().to_string(),
        }
    }

    /// Whether the app runs under an identity of its own (a root broker's sandbox).
    pub(super) fn split(&self) -> bool {
        self.sandbox
            .as_ref()
            .is_some_and(|sandbox| sandbox.app.is_some())
    }

    /// The app's own X authority file on the host, when it has an identity of its own.
    fn app_xauthority_host(&self) -> Option<PathBuf> {
        let workspace = self.run_dir.parent()?;
        self.split().then(|| {
            workspace
                .join(crate::sandbox::workspace::APP_AUTH_DIR)
                .join(XAUTHORITY_FILE)
        })
    }

    /// The environment the app starts from: an X client's, with the app's own cookie when it
    /// has an identity of its own (the workspace is at the same path inside).
    pub(super) fn app_env(&self) -> Vec<(String, String)> {
        let mut env = self.x_client_env();
        if let Some(path) = self.app_xauthority_host() {
            env.retain(|(key, _)| key != "XAUTHORITY");
            env.push(("XAUTHORITY".to_string(), path.display().to_string()));
        }
        env
    }

    /// The directory the buses put their sockets in, as the desktop's processes see it: one
    /// both identities reach when the app has its own.
    pub(super) fn bus_dir(&self) -> String {
        match &self.sandbox {
            Some(_) if self.split() => INSIDE_BUS_DIR.to_string(),
            Some(_) => INSIDE_RUN_DIR.to_string(),
            None => self.run_dir.display().to_string(),
        }
    }

    /// The environment every X client of the desktop starts from.
    pub(super) fn x_client_env(&self) -> Vec<(String, String)> {
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
}
