//! Test support: a broker subprocess, the probe profile, signed policies, and the Xvfb
//! availability rule. Over 400 lines: it is the one home of the setup every suite shares, so
//! that none keeps a copy.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use desk_client::{Client, ClientError};
use desk_contract::a11y::AxTree;
use desk_contract::api::{LeaseRequest, ResetRequest, ResetResponse};

/// Whether real-desktop tests can run. Without Xvfb they print `skipped: Xvfb/openbox not
/// found` and pass, unless `DESK_REQUIRE_XVFB=1` (CI), where a missing Xvfb fails.
pub(crate) fn xvfb_available() -> bool {
    desk_test_support::tools_available("Xvfb/openbox", &["Xvfb", "openbox"])
}

/// The `deskbroker` binary under test.
pub(crate) fn deskbroker() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_deskbroker"))
}

/// Runs `deskbroker certs …` and returns its stdout.
pub(crate) fn certs(args: &[&str]) -> String {
    let output = Command::new(deskbroker())
        .arg("certs")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "certs {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The `deskbroker-worker` binary under test: the desktop worker and the sandbox's pid 1.
pub(crate) fn worker_program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_deskbroker-worker"))
}

/// `deskbroker-remote-worker`, the worker for a broker on another host (TCP, mutual TLS).
pub(crate) fn remote_worker_program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_deskbroker-remote-worker"))
}

/// A sandboxed 640x400 desktop of `session_dir` with the worker and no window manager: what
/// the launcher-level tests (limits, reaping, the worker's peer check) start from.
pub(crate) fn bare_desktop_config(
    session_dir: &desk_desktop::SessionDir,
) -> desk_desktop::LocalDesktopConfig {
    let mut config = desk_desktop::LocalDesktopConfig::new(
        desk_contract::DisplaySize {
            width: 640,
            height: 400,
        },
        vec![worker_program().display().to_string()],
        session_dir.clone(),
    );
    config.window_manager = None;
    // Without root no cgroup can be made: limits off, as `--unsafe-no-limits` asks.
    if !nix::unistd::geteuid().is_root() {
        config.limits_mode = desk_contract::desktop::LimitsMode::Off;
    }
    config
}

/// The flag a broker not run as root must be started with (`docs/security.md`).
pub(crate) const UNSAFE_NO_LIMITS: &str = "--unsafe-no-limits";

/// The probe window binary, built by desk-test-support in the same target directory.
pub(crate) fn probe_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/it-<hash> → target/<profile>/desk-probe
    let path = exe.parent().unwrap().parent().unwrap().join("desk-probe");
    assert!(
        path.exists(),
        "probe binary missing at {}; build desk-test-support",
        path.display()
    );
    path
}

/// A broker subprocess with its own state directory and socket; SIGKILLed on drop.
pub(crate) struct Broker {
    child: Option<Child>,
    pub(crate) socket: PathBuf,
    pub(crate) state_dir: PathBuf,
    pub(crate) profiles: PathBuf,
    /// Extra `serve` arguments.
    extra: Vec<String>,
    /// Extra environment for `serve`.
    env: Vec<(String, String)>,
    /// The probe's recording, bound writable into every session sandbox.
    probe_log: PathBuf,
}

impl Broker {
    /// Starts `deskbroker serve` with `fault` in `DESKBROKER_FAULT` when given, offering a
    /// `probe` profile (the default) whose probe window records to `probe_log`.
    pub(crate) fn start(root: &Path, fault: Option<&str>, probe_log: &Path) -> Broker {
        Broker::start_with(root, fault, probe_log, &[])
    }

    /// [`Broker::start`] with extra `serve` arguments, kept across restarts.
    pub(crate) fn start_with(
        root: &Path,
        fault: Option<&str>,
        probe_log: &Path,
        extra: &[&str],
    ) -> Broker {
        Broker::start_in(root, &root.join("state"), fault, probe_log, extra)
    }

    /// [`Broker::start_with`] on the state directory `state_dir` (socket and profiles in
    /// `root`).
    pub(crate) fn start_in(
        root: &Path,
        state_dir: &Path,
        fault: Option<&str>,
        probe_log: &Path,
        extra: &[&str],
    ) -> Broker {
        let mut broker = Broker::unspawned(root, state_dir, probe_log, extra);
        broker.spawn(fault);
        broker
    }

    /// The broker's files and arguments, not yet started.
    fn unspawned(root: &Path, state_dir: &Path, probe_log: &Path, extra: &[&str]) -> Broker {
        let state_dir = state_dir.to_path_buf();
        let profiles = root.join("profiles");
        std::fs::create_dir_all(&profiles).unwrap();
        let socket = root.join("broker.sock");
        let mut broker = Broker {
            child: None,
            socket,
            state_dir,
            profiles,
            extra: extra.iter().map(|arg| arg.to_string()).collect(),
            env: Vec::new(),
            probe_log: PathBuf::new(),
        };
        broker.add_probe_profile(probe_log);
        share_probe_log(root, probe_log);
        broker.probe_log = probe_log.to_path_buf();
        broker
    }

    /// [`Broker::start`] with `env` added to the broker's environment (kept across restarts).
    pub(crate) fn start_env(root: &Path, probe_log: &Path, env: &[(&str, String)]) -> Broker {
        let mut broker = Broker::unspawned(root, &root.join("state"), probe_log, &[]);
        broker.env = env
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect();
        broker.spawn(None);
        broker
    }

    fn spawn(&mut self, fault: Option<&str>) {
        let _ = std::fs::remove_file(&self.socket);
        let mut command =
            serve_command(&deskbroker(), &self.socket, &self.state_dir, &self.profiles);
        command.args(&self.extra);
        // A broker not run as root cannot make the sessions' cgroups: it must say so.
        if !nix::unistd::geteuid().is_root() && !self.extra.iter().any(|a| a == UNSAFE_NO_LIMITS) {
            command.arg(UNSAFE_NO_LIMITS);
        }
        command
            .env_remove("DESKBROKER_FAULT")
            .env(desk_desktop::sandbox::EXTRA_WRITABLE_ENV, &self.probe_log)
            .envs(self.env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null());
        if let Some(fault) = fault {
            command.env("DESKBROKER_FAULT", fault);
        }
        self.child = Some(command.spawn().unwrap());
        // Ready when the socket accepts a connection (a socket file alone may be a stale one,
        // or bound before it listens), or when the broker has already exited.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if std::os::unix::net::UnixStream::connect(&self.socket).is_ok() {
                break;
            }
            if let Some(child) = self.child.as_mut()
                && child.try_wait().unwrap().is_some()
            {
                break;
            }
            assert!(Instant::now() < deadline, "broker socket did not accept");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Restarts the broker on the same state (after it died or was killed).
    pub(crate) fn restart(&mut self, fault: Option<&str>) {
        self.kill();
        self.spawn(fault);
    }

    /// Waits for the broker process to exit by itself and returns its wait status.
    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let child = self.child.as_mut().unwrap();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(Instant::now() < deadline, "broker did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn client(&self) -> Client {
        Client::new(self.socket.clone())
    }

    /// Writes a `probe` profile that runs the probe window, recording to `log`.
    fn add_probe_profile(&self, log: &Path) {
        write_probe_profile(
            &self.profiles,
            "probe",
            &probe_binary(),
            &log.display().to_string(),
            &[&probe_binary()],
        );
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
        // A test that failed before releasing leaves its desktops behind the killed broker.
        if let Ok(sessions) = std::fs::read_dir(self.state_dir.join("sessions")) {
            for session in sessions.flatten() {
                desk_desktop::launcher::reap_recorded(session.path());
            }
        }
    }
}

/// Writes profile `name` into `profiles`: the probe window at `program`, recording to `out` (a
/// path the sandbox can write, or `{home}/...`), with the sandbox's extra `read_only` paths
/// (the sandbox shows the worker program alone of the target directory: a probe there must be
/// one of them, like an app installed outside /usr).
pub(crate) fn write_probe_profile(
    profiles: &Path,
    name: &str,
    program: &Path,
    out: &str,
    read_only: &[&Path],
) {
    let binds: Vec<String> = read_only
        .iter()
        .map(|path| format!("{:?}", path.display().to_string()))
        .collect();
    let text = format!(
        "name = {name:?}\ncommand = [{program:?}, \"--out\", {out:?}]\nread_only = [{binds}]\n\
         [attempt]\nfilename = \"attempt.txt\"\ntemplate = \"fresh\"\n[window]\n\
         class = \"deskprobe\"\nmaximize = true\ntimeout_ms = 15000\n",
        program = program.display().to_string(),
        binds = binds.join(", ")
    );
    std::fs::create_dir_all(profiles).unwrap();
    std::fs::write(profiles.join(format!("{name}.toml")), text).unwrap();
}

/// `program serve` on `socket` with `state_dir` and `profiles`, a 1280x800 display and the
/// `probe` profile as default: what every test broker starts from.
pub(crate) fn serve_command(
    program: &Path,
    socket: &Path,
    state_dir: &Path,
    profiles: &Path,
) -> Command {
    let mut command = Command::new(program);
    command
        .arg("serve")
        .arg("--socket")
        .arg(socket)
        .arg("--state-dir")
        .arg(state_dir)
        .arg("--profiles")
        .arg(profiles)
        .args(["--display", "1280x800", "--default-profile", "probe"]);
    command
}

/// Makes the probe's recording `probe_log` (a file directly in `root`) reachable and writable
/// by the sandbox's unprivileged uid; a broker started with
/// [`desk_desktop::sandbox::EXTRA_WRITABLE_ENV`] set to it binds it into every sandbox.
pub(crate) fn share_probe_log(root: &Path, probe_log: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o711)).unwrap();
    if !probe_log.exists() {
        std::fs::write(probe_log, b"").unwrap();
    }
    std::fs::set_permissions(probe_log, std::fs::Permissions::from_mode(0o666)).unwrap();
}

/// Whether any process is still running whose command line mentions `needle`.
pub(crate) fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(needle) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

impl Broker {
    /// The broker's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends SIGTERM (a stop for a restart or an upgrade) and waits for the broker to exit.
    pub(crate) fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait_exit(Duration::from_secs(20))
    }

    /// Starts the broker again on the same state after it exited or was killed.
    pub(crate) fn respawn(&mut self) {
        assert!(self.child.is_none(), "the broker is still running");
        self.spawn(None);
    }

    /// The directory of `session`.
    pub(crate) fn session_dir(&self, session: &str) -> PathBuf {
        self.state_dir.join("sessions").join(session)
    }
}

/// The X display socket of a display name such as `:3`.
pub(crate) fn display_socket(display: &str) -> PathBuf {
    PathBuf::from(format!(
        "/tmp/.X11-unix/X{}",
        display.trim_start_matches(':')
    ))
}

/// Asserts that none of `processes` is still running and the display's socket and lock are
/// gone (or were taken over by another test's X server, which may reuse a freed display).
pub(crate) fn assert_desktop_gone(
    processes: &[desk_desktop::launcher::RecordedProcess],
    display: &str,
) {
    let number = display.trim_start_matches(':');
    let xvfb = processes.iter().find(|p| p.role == "xvfb").map(|p| p.pid);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<_> = processes.iter().filter(|p| p.is_alive()).collect();
        let socket = display_socket(display);
        let owner = std::fs::read_to_string(format!("/tmp/.X{number}-lock"))
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok());
        // A socket nothing listens on is stale; a live one belongs to a server that reused
        // the display number.
        let stale_socket = matches!(
            std::os::unix::net::UnixStream::connect(&socket),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused
        );
        // A sandboxed display's socket and lock live in the sandbox's private /tmp, gone with
        // its holder (a recorded process); the host's are another server's.
        let sandboxed = processes.iter().any(|p| p.role == "sandbox");
        let ours_left = !sandboxed && ((owner.is_some() && owner == xvfb) || stale_socket);
        if alive.is_empty() && !ours_left {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "orphans after release: {alive:?}, display socket {} exists: {}",
            socket.display(),
            socket.exists()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `serve --backend fake` process, killed on drop.
pub(crate) struct FakeServer {
    child: Child,
    /// Where it listens.
    pub(crate) socket: PathBuf,
}

impl FakeServer {
    /// Starts one in `root` (socket, state and `broker.log` there), logging warnings only;
    /// `serve_args` follow `serve --backend fake`.
    pub(crate) fn start(root: &Path, serve_args: &[&str]) -> FakeServer {
        let socket = root.join("fake.sock");
        let child = Command::new(deskbroker())
            .args(["--log", "warn", "serve", "--backend", "fake"])
            .args(serve_args)
            .arg("--socket")
            .arg(&socket)
            .arg("--state-dir")
            .arg(root.join("state"))
            .env_remove("DESKBROKER_FAULT")
            .env_remove("DISPLAY")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(root.join("broker.log")).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            assert!(
                Instant::now() < deadline,
                "fake broker socket did not appear"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        FakeServer { child, socket }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Decoded RGB(A) pixels of a screenshot: (bytes, bytes per row, channels).
pub(crate) fn png_pixels(png_base64: &str) -> (Vec<u8>, usize, usize) {
    let bytes =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, png_base64).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    (buffer, info.line_size, info.color_type.samples())
}

/// `yaml` signed with the key of `seed` into `root/policy.signed.json`, its public key in
/// `root/policy.pub`: the `serve` arguments that put that policy in force.
pub(crate) fn signed_policy_args(root: &Path, yaml: &str, seed: u8) -> Vec<String> {
    let key = desk_evidence::SigningKey::from_bytes(&[seed; 32]);
    let policy = desk_policy::Policy::from_yaml(yaml).unwrap();
    let signed = desk_policy::sign(&policy, &key)
        .unwrap()
        .canonical_bytes()
        .unwrap();
    let (signed_path, pub_path) = (root.join("policy.signed.json"), root.join("policy.pub"));
    std::fs::write(&signed_path, signed).unwrap();
    key.verifying_key().write(&pub_path).unwrap();
    vec![
        "--policy".to_string(),
        signed_path.display().to_string(),
        "--policy-pub".to_string(),
        pub_path.display().to_string(),
    ]
}

/// A workspace policy for the approval tests: version `version`, the app profiles `profiles`
/// (a YAML flow list's items), 50 refused actions, and approvals by `release-approver` with
/// the key of `approver_seed`, receipts valid `receipt_ttl_seconds`, for the button "press me".
pub(crate) fn approvals_policy(
    version: &str,
    profiles: &str,
    approver_seed: [u8; 32],
    receipt_ttl_seconds: u32,
) -> String {
    let approver = desk_evidence::SigningKey::from_bytes(&approver_seed)
        .verifying_key()
        .to_base64();
    format!(
        r#"schema_version: deskbroker.workspace-policy.v1
policy_version: {version}
workspace: {{disposable: true, logged_out: true}}
apps: {{allowed_profiles: [{profiles}]}}
writable_directories: [attempt]
network: {{mode: none, allowed_domains: []}}
clipboard: none
limits: {{max_task_minutes: 30, max_refused_actions: 50, idle_seconds: 600}}
validity: {{not_before: "2020-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}}
approvals:
  approver_id: release-approver
  approver_public_key: "{approver}"
  receipt_ttl_seconds: {receipt_ttl_seconds}
  high_risk_targets:
    - {{role: button, name_pattern: "^press me$"}}
"#
    )
}

/// The session's current accessibility tree, as the broker reads it.
pub(crate) async fn tree_of(client: &Client, session: &str) -> AxTree {
    client
        .accessibility(session, None, None)
        .await
        .unwrap()
        .tree
}

/// Leases a session of `profile` (task `task_id`, attempt `attempt_id`) and asks for its reset
/// with request id `reset-1`: the session id and the reset's answer or refusal.
pub(crate) async fn lease_then_reset(
    client: &Client,
    task_id: &str,
    attempt_id: &str,
    profile: &str,
) -> (String, Result<ResetResponse, ClientError>) {
    let lease = client
        .lease(&LeaseRequest {
            task_id: task_id.into(),
            attempt_id: attempt_id.into(),
            profile: Some(profile.into()),
        })
        .await
        .unwrap();
    let reset = client
        .reset(
            &lease.session_id,
            &ResetRequest {
                request_id: "reset-1".into(),
            },
        )
        .await;
    (lease.session_id, reset)
}

/// [`lease_then_reset`] whose reset must succeed.
pub(crate) async fn lease_and_reset(
    client: &Client,
    task_id: &str,
    attempt_id: &str,
    profile: &str,
) -> (String, ResetResponse) {
    let (session, reset) = lease_then_reset(client, task_id, attempt_id, profile).await;
    (session, reset.unwrap())
}
