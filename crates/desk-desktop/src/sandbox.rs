//! The session sandbox: one bubblewrap (`bwrap`) sandbox per session that every desktop process
//! (Xvfb, window manager, worker, app) runs in.
//!
//! Why bubblewrap: it is Debian's maintained, small, setuid-free namespace tool (Flatpak's), it
//! needs no daemon, and its sandbox is an ordinary process tree that outlives the broker
//! (no `--die-with-parent`), so a restarted broker can reattach.
//!
//! Shape: `bwrap` starts a holder (`deskbroker-worker hold`, see [`host`]) in new user, mount, pid, ipc, uts, net and
//! cgroup namespaces, as an unprivileged uid (the dedicated [`DEFAULT_SANDBOX_UID`] when the
//! broker is root, else the broker's own uid inside a user namespace), with `NoNewPrivs`. Its
//! root is built from an allowlist: the profile's filesystem view (see [`view`]: all of `/usr`
//! and `/etc`, or only the programs, data and libraries the desktop and app need) and the font
//! cache read-only, the merged-usr links, a
//! minimal `/dev`, a fresh `/proc`, private tmpfs `/tmp` and `/dev/shm`, the worker program
//! (the file alone, never the directory holding `deskbroker`) read-only, and the session's workspace read-only but for the policy's writable directories
//! (the attempt directory) and `run/`, the only host-backed writable paths; the app's home is
//! an in-memory tmpfs filled from a seed at each app start (see [`workspace`]). `/dev` is not
//! a devpts mount on purpose: that keeps bwrap to one user
//! namespace, which `nsenter` can join. Each desktop process then enters the holder's
//! namespaces (`setpriv [--reuid] --no-new-privs nsenter --user --mount ...`), so all of them
//! share one display socket, one IPC namespace (MIT-SHM) and one loopback-only network.
//!
//! Every process starts from an empty environment plus the allowlist the caller passes.
//!
//! The holder is pid 1 of the sandbox and enforces the lease deadline (see [`host`]); the
//! account files and the deadline live in the workspace's read-only `host/` directory.

pub mod cgroup;
mod elf;
pub mod facts;
mod host;
pub mod inside;
pub mod probe;
pub mod view;
pub mod workspace;

pub use host::{SANDBOX_USER, set_lease_deadline};
pub use view::{FsView, ViewKind, ViewSpec};
pub use workspace::{WritableDirs, ensure_workspace, remove_workspace};

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::BackendError;

/// The host uid (and gid) desktop processes run as when the broker runs as root: not the
/// broker's, owns nothing on the host.
pub const DEFAULT_SANDBOX_UID: u32 = 61_234;

/// Where the worker socket and the X authority file live inside the sandbox (short, so the
/// socket path never depends on the state directory's length).
pub const INSIDE_RUN_DIR: &str = "/run/desk";

/// The operator's extra writable paths (colon-separated absolute paths, read from the broker's
/// environment at each desktop start), bound at the same place inside every sandbox. Meant for
/// test instruments such as the probe window's recording; never set it in production.
pub const EXTRA_WRITABLE_ENV: &str = "DESKBROKER_SANDBOX_WRITABLE";

/// How long bwrap may take to report its sandbox.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether and how a session's processes are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxPolicy {
    /// Processes run unsandboxed as the broker's user (`serve --unsafe-no-sandbox`).
    Off,
    /// One bubblewrap sandbox per session; processes run as `uid`/`gid` on the host.
    On {
        /// Host uid of every desktop process.
        uid: u32,
        /// Host gid of every desktop process.
        gid: u32,
    },
}

impl SandboxPolicy {
    /// The policy for `mode`: [`SandboxPolicy::default_for_this_process`] when on.
    pub fn for_mode(mode: desk_contract::desktop::SandboxMode) -> SandboxPolicy {
        match mode {
            desk_contract::desktop::SandboxMode::On => SandboxPolicy::default_for_this_process(),
            desk_contract::desktop::SandboxMode::Off => SandboxPolicy::Off,
        }
    }

    /// On: the dedicated uid for a root broker, the broker's own uid otherwise.
    pub fn default_for_this_process() -> SandboxPolicy {
        if nix::unistd::geteuid().is_root() {
            SandboxPolicy::On {
                uid: DEFAULT_SANDBOX_UID,
                gid: DEFAULT_SANDBOX_UID,
            }
        } else {
            SandboxPolicy::On {
                uid: nix::unistd::getuid().as_raw(),
                gid: nix::unistd::getgid().as_raw(),
            }
        }
    }
}

/// A running sandbox, as recorded in `desktop.json` so a restarted broker can enter it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// Host pid of the sandbox's first process (pid 1 inside), whose namespaces others enter.
    pub holder_pid: u32,
    /// Host uid of every process inside.
    pub uid: u32,
    /// Host gid of every process inside.
    pub gid: u32,
    /// Whether processes drop from root to `uid` before entering (the broker is root).
    pub drop_root: bool,
    /// The workspace on the host, bound read-only at the same path inside.
    pub workspace: PathBuf,
    /// The host-backed paths inside that are writable: the policy's writable directories, the
    /// run directory and the operator's extra writable paths (see [`workspace`]).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// The holder (the worker program, `deskbroker-worker`), at the same path inside; it also
    /// fills the app's home (`seed-home`). `None` in a record from before it was kept.
    #[serde(default)]
    pub holder: Option<PathBuf>,
}

/// fontconfig's system cache (generated fonts metadata, no user data).
const FONT_CACHE: &str = "/var/cache/fontconfig";

/// The namespaces every sandbox gets anew (bwrap flags).
const UNSHARE: [&str; 6] = [
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-cgroup",
];

/// `setpriv` dropping a root broker to `uid`/`gid` (no supplementary groups), always with
/// `NoNewPrivs`; the program to run follows as its next argument.
fn setpriv_command(uid: u32, gid: u32) -> Command {
    let mut command = Command::new("setpriv");
    if nix::unistd::geteuid().is_root() {
        command.args([
            "--reuid",
            &uid.to_string(),
            "--regid",
            &gid.to_string(),
            "--clear-groups",
        ]);
    }
    command.arg("--no-new-privs");
    command
}

/// The read-only base every sandbox root starts from: `/usr` and the merged-usr top-level
/// links (or directories, where the host has them).
fn base_root_args(command: &mut Command) {
    command.args(["--ro-bind", "/usr", "/usr"]);
    top_level_links(command);
}

/// The merged-usr top-level links (`/bin` → `usr/bin`...), or the directories where the host
/// has them.
fn top_level_links(command: &mut Command) {
    for top in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
        let host = Path::new("/").join(top);
        match std::fs::read_link(&host) {
            Ok(target) => {
                command.arg("--symlink").arg(target).arg(&host);
            }
            Err(_) if host.is_dir() => {
                command.arg("--ro-bind").arg(&host).arg(&host);
            }
            Err(_) => {}
        }
    }
}

/// A sandbox being started: spawn the command [`SandboxStart::new`] returns, then
/// [`SandboxStart::finish`] with its stdout.
pub struct SandboxStart {
    holder: PathBuf,
    uid: u32,
    gid: u32,
    drop_root: bool,
    workspace: PathBuf,
    writable: Vec<PathBuf>,
}

impl SandboxStart {
    /// Builds the bwrap command for `workspace` (read-only but for its `writable` directories,
    /// see [`workspace`]), with `read_only` extra paths (the worker program) bound at the same
    /// place inside, and `holder` (the worker program, one of `read_only`) as its pid 1, over
    /// the host filesystem `view` (see [`view`]). Spawn the command with its stdout piped.
    pub fn new(
        policy: SandboxPolicy,
        workspace: &Path,
        writable: &WritableDirs,
        read_only: &[PathBuf],
        holder: &Path,
        view: &FsView,
    ) -> Result<(Command, SandboxStart), BackendError> {
        let SandboxPolicy::On { uid, gid } = policy else {
            return Err(BackendError::DesktopFailed(
                "the sandbox is off for this desktop".to_string(),
            ));
        };
        let drop_root = nix::unistd::geteuid().is_root();
        let mut command = setpriv_command(uid, gid);
        command.arg(probe::bwrap_program()?);
        command.args(UNSHARE).args(["--hostname", "desk"]);
        match view {
            FsView::Broad => {
                base_root_args(&mut command);
                command.args(["--ro-bind", "/etc", "/etc"]);
            }
            FsView::Allowlist(spec) => {
                // Only the resolved programs, data and libraries, each at its own path.
                top_level_links(&mut command);
                let resolved = view::resolve(spec, holder)?;
                for path in &resolved.binds {
                    command.arg("--ro-bind").arg(path).arg(path);
                }
                for (link, target) in &resolved.links {
                    command.arg("--symlink").arg(target).arg(link);
                }
            }
        }
        command.args(["--proc", "/proc", "--dir", "/dev"]);
        for device in ["null", "zero", "full", "random", "urandom"] {
            let path = format!("/dev/{device}");
            command.args(["--dev-bind", &path, &path]);
        }
        // The system's font cache, read-only: without it every app start rebuilds one in its
        // fresh home (measured: LibreCAD's handoff took about 0.5 s longer).
        if Path::new(FONT_CACHE).is_dir() {
            command.args(["--ro-bind", FONT_CACHE, FONT_CACHE]);
        }
        command.args([
            "--tmpfs",
            "/dev/shm",
            "--tmpfs",
            "/tmp",
            "--dir",
            "/tmp/.X11-unix",
            "--dir",
            "/run",
        ]);
        for path in read_only {
            command.arg("--ro-bind").arg(path).arg(path);
        }
        let extra: Vec<PathBuf> = std::env::var_os(EXTRA_WRITABLE_ENV)
            .map(|paths| {
                std::env::split_paths(&paths)
                    .filter(|path| path.is_absolute())
                    .collect()
            })
            .unwrap_or_default();
        for path in &extra {
            command.arg("--bind").arg(path).arg(path);
        }
        let host_dir = host::prepare(workspace, uid, gid, &workspace.join(workspace::HOME_DIR))?;
        let dirs = workspace::bind_args(&mut command, workspace, writable)?;
        command
            .arg("--ro-bind")
            .arg(&host_dir)
            .arg(&host_dir)
            .arg("--ro-bind")
            .arg(host_dir.join("passwd"))
            .arg("/etc/passwd")
            .arg("--ro-bind")
            .arg(host_dir.join("group"))
            .arg("/etc/group")
            .arg("--bind")
            .arg(workspace.join(workspace::RUN_DIR))
            .arg(INSIDE_RUN_DIR);
        // The root itself (bwrap's tmpfs) becomes read-only once everything is mounted on it.
        command.args(["--remount-ro", "/"]);
        // The holder is pid 1 (no bwrap reaper): signals from inside cannot stop or kill it.
        command.args(["--chdir", "/", "--as-pid-1", "--info-fd", "1", "--"]);
        command.args(host::holder_argv(holder, &host_dir));
        command
            .env_clear()
            .env("PATH", SAFE_PATH)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        Ok((
            command,
            SandboxStart {
                holder: holder.to_path_buf(),
                uid,
                gid,
                drop_root,
                workspace: workspace.to_path_buf(),
                writable: workspace::allowed_writable(dirs, &extra),
            },
        ))
    }

    /// Reads bwrap's `--info-fd` report from the spawned holder's stdout.
    pub fn finish(self, stdout: impl Read + Send + 'static) -> Result<Sandbox, BackendError> {
        let (sender, receiver) = channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let result = loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) => break Ok(text),
                    Ok(_) => {
                        text.push_str(&line);
                        if line.trim_end() == "}" {
                            break Ok(text);
                        }
                    }
                    Err(error) => break Err(error),
                }
            };
            let _ = sender.send(result);
        });
        let text = match receiver.recv_timeout(START_TIMEOUT) {
            Ok(Ok(text)) => text,
            Ok(Err(error)) => {
                return Err(BackendError::SandboxUnavailable(format!(
                    "failed to read bwrap's report: {error}"
                )));
            }
            Err(_) => {
                return Err(BackendError::SandboxUnavailable(format!(
                    "bwrap did not report its sandbox within {} s (see sandbox.log)",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        #[derive(Deserialize)]
        struct Info {
            #[serde(rename = "child-pid")]
            child_pid: u32,
        }
        let info: Info = serde_json::from_str(&text).map_err(|_| {
            BackendError::SandboxUnavailable(
                "bwrap could not build the sandbox (see sandbox.log)".to_string(),
            )
        })?;
        // bwrap reports its child before building the root; the child execs the holder only
        // once the sandbox is complete.
        let deadline = std::time::Instant::now() + START_TIMEOUT;
        let comm = format!("/proc/{}/comm", info.child_pid);
        loop {
            match std::fs::read_to_string(&comm) {
                Ok(name) if name.trim() != "bwrap" => break,
                Ok(_) => {}
                Err(error) => {
                    return Err(BackendError::SandboxUnavailable(format!(
                        "the sandbox ended while starting ({error}; see sandbox.log)"
                    )));
                }
            }
            if std::time::Instant::now() >= deadline {
                return Err(BackendError::SandboxUnavailable(format!(
                    "the sandbox was not complete within {} s (see sandbox.log)",
                    START_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(Sandbox {
            holder_pid: info.child_pid,
            uid: self.uid,
            gid: self.gid,
            drop_root: self.drop_root,
            workspace: self.workspace,
            writable: self.writable,
            holder: Some(self.holder),
        })
    }
}

/// The `PATH` every desktop process gets.
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

impl Sandbox {
    /// A command that runs `argv` inside this sandbox in `cwd` (a path inside), with exactly
    /// `env` as its environment.
    pub fn command(&self, argv: &[String], cwd: &Path, env: &[(String, String)]) -> Command {
        let mut command = Command::new("setpriv");
        if self.drop_root {
            command.args([
                "--reuid",
                &self.uid.to_string(),
                "--regid",
                &self.gid.to_string(),
                "--clear-groups",
            ]);
        }
        command
            .args(["--no-new-privs", "nsenter", "--target"])
            .arg(self.holder_pid.to_string())
            .args([
                "--user",
                "--mount",
                "--pid",
                "--net",
                "--ipc",
                "--uts",
                "--cgroup",
                "--preserve-credentials",
                "--",
                "env",
                "-C",
            ])
            .arg(cwd)
            .arg("--")
            .args(argv)
            .env_clear()
            .envs(env.iter().map(|(key, value)| (key, value)));
        command
    }

    /// Whether `program` (an absolute path, or a name looked up in [`SAFE_PATH`]) names an
    /// executable file as the sandbox sees it, read through the holder's root from outside.
    pub fn can_run(&self, program: &str) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let root = self.root_from_host();
        let inside = |path: &Path| {
            inside::metadata_inside(&root, path)
                .is_some_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        };
        if program.contains('/') {
            return Path::new(program).is_absolute() && inside(Path::new(program));
        }
        SAFE_PATH
            .split(':')
            .any(|dir| inside(&Path::new(dir).join(program)))
    }

    /// The sandbox's root as the host reaches it: its holder's `/proc/<pid>/root`.
    pub fn root_from_host(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.holder_pid))
    }

    /// The pids, on the host and inside the sandbox, of the program a [`Sandbox::command`]
    /// wrapper with host pid `wrapper` runs (nsenter's child; `env` execs the program in place).
    pub fn program_pids(&self, wrapper: u32) -> Result<(u32, u32), BackendError> {
        let deadline = std::time::Instant::now() + START_TIMEOUT;
        let children = format!("/proc/{wrapper}/task/{wrapper}/children");
        loop {
            let child = std::fs::read_to_string(&children)
                .ok()
                .and_then(|text| text.split_whitespace().next().map(str::to_string));
            if let Some(child) = child {
                let status =
                    std::fs::read_to_string(format!("/proc/{child}/status")).unwrap_or_default();
                let inner = status
                    .lines()
                    .find_map(|line| line.strip_prefix("NSpid:"))
                    .and_then(|pids| pids.split_whitespace().last())
                    .and_then(|pid| pid.parse().ok());
                if let (Some(inner), Ok(host)) = (inner, child.parse()) {
                    return Ok((host, inner));
                }
            }
            if std::time::Instant::now() >= deadline {
                return Err(BackendError::DesktopFailed(format!(
                    "the process started by wrapper {wrapper} did not appear in the sandbox"
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The workspace's read-only `host/` directory (account files, lease deadline, window
    /// manager configuration), at the same path inside.
    pub fn host_dir(&self) -> PathBuf {
        self.workspace.join(host::HOST_DIR)
    }

    /// The run directory on the host (worker socket, X cookie).
    pub fn host_run_dir(&self) -> PathBuf {
        self.workspace.join(workspace::RUN_DIR)
    }

    /// Gives the sandbox uid the tree at `path` (a fresh home or attempt directory the broker
    /// prepared as root), without following links. No-op when not dropping root.
    pub fn hand_over(&self, path: &Path) -> Result<(), BackendError> {
        if !self.drop_root {
            return Ok(());
        }
        chown_tree(path, self.uid, self.gid).map_err(|source| BackendError::Spawn {
            what: format!("ownership of {}", path.display()),
            source,
        })
    }
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    let metadata = std::fs::symlink_metadata(path)?;
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    if metadata.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// The X authority family that matches any host and display.
pub const FAMILY_WILD: u16 = 0xffff;

/// One X authority file entry naming the MIT-MAGIC-COOKIE-1 `cookie` for `family`, `address` and
/// display `number` (empty: any). Fields longer than 65,535 bytes are cut to that length; real
/// ones (host names, display numbers, a 16-byte cookie) are far shorter.
pub fn xauthority_entry(family: u16, address: &[u8], number: &[u8], cookie: &[u8]) -> Vec<u8> {
    let mut bytes = family.to_be_bytes().to_vec();
    for field in [address, number, b"MIT-MAGIC-COOKIE-1", cookie] {
        let field = &field[..field.len().min(usize::from(u16::MAX))];
        bytes.extend_from_slice(&(field.len() as u16).to_be_bytes());
        bytes.extend_from_slice(field);
    }
    bytes
}

/// Writes an X authority file with one fresh MIT-MAGIC-COOKIE-1 for any display (family
/// Wild, empty number), mode 0600, owned by `owner` when given.
pub fn write_xauthority(path: &Path, owner: Option<(u32, u32)>) -> Result<(), BackendError> {
    let io = |source| BackendError::Spawn {
        what: format!("X authority {}", path.display()),
        source,
    };
    let mut cookie = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut cookie))
        .map_err(io)?;
    let bytes = xauthority_entry(FAMILY_WILD, b"", b"", &cookie);
    let _ = std::fs::remove_file(path);
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        file.write_all(&bytes).map_err(io)?;
    }
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(io)?;
    }
    Ok(())
}
