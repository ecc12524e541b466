//! The session sandbox: one bubblewrap (`bwrap`) sandbox per session that every desktop process
//! (Xvfb, window manager, worker, app) runs in.
//!
//! Why bubblewrap: it is Debian's maintained, small, setuid-free namespace tool (Flatpak's), it
//! needs no daemon, and its sandbox is an ordinary process tree that outlives the broker
//! (no `--die-with-parent`), so a restarted broker can reattach.
//!
//! Shape: `bwrap` starts a holder (`deskbroker-worker hold`, see [`host`]) in new mount, pid,
//! ipc, uts, net and cgroup namespaces, with `NoNewPrivs`. Identities (see [`identity`]): a root
//! broker runs bwrap as root without a user namespace and with every capability dropped (the
//! holder is uid 0 without capabilities); each desktop process is entered by root and dropped to
//! its role's host uid, the session's own desktop uid (Xvfb, window manager, buses, worker) or
//! its own app uid (the app), so the kernel's uid checks keep the app from the worker's files,
//! `/proc`, memory and signals. A broker that is not root gets one identity: its own uid in a
//! new user namespace, which every process joins. Its
//! root is built from an allowlist: the profile's filesystem view (see [`view`]: all of `/usr`
//! and `/etc`, or only the programs, data and libraries the desktop and app need) and the font
//! cache read-only, the merged-usr links, a
//! minimal `/dev`, a fresh `/proc`, private tmpfs `/tmp` and `/dev/shm`, the worker program
//! (the file alone, never the directory holding `deskbroker`) read-only, and the session's workspace read-only but for the policy's writable directories
//! (the attempt directory), `run/` and (split identities) `bus/`, the only host-backed
//! writable paths; the app's home is an in-memory tmpfs filled from a seed at each app start
//! (see [`workspace`]). `/dev` is not a devpts mount on purpose: that keeps bwrap to at most
//! one user namespace, which `nsenter` can join. Each desktop process then enters the holder's
//! namespaces (`setpriv --no-new-privs nsenter [--user] --mount ... [-S uid -G gid]`), so all
//! of them share one display socket, one IPC namespace (MIT-SHM) and one loopback-only network.
//!
//! Every process starts from an empty environment plus the allowlist the caller passes.
//!
//! The holder is pid 1 of the sandbox and enforces the lease deadline (see [`host`]); the
//! account files and the deadline live in the workspace's read-only `host/` directory.
//!
//! This file keeps the one bwrap command line (and the directories bwrap makes for it), how
//! each role's process enters the sandbox and the X cookies: one shape, read together; that is
//! why it is over 400 lines. The policy, the sandbox's record and the roles are in `policy.rs`,
//! the bwrap pieces the capability probe shares in `bwrap.rs`.

mod bwrap;
pub mod cgroup;
mod confine;
mod elf;
pub mod facts;
mod host;
pub mod identity;
pub mod inside;
mod policy;
pub mod probe;
pub(crate) mod start_gate;
pub mod view;
pub mod workspace;

pub(crate) use host::set_lease_deadline;
pub use identity::{Identities, Ids};
pub use policy::{DEFAULT_SANDBOX_UID, INSIDE_RUN_DIR, Role, SAFE_PATH, Sandbox, SandboxPolicy};
pub use view::{FsView, ViewKind, ViewSpec};
pub use workspace::WritableDirs;
pub(crate) use workspace::{ensure_workspace, remove_workspace};

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use serde::Deserialize;

use bwrap::{base_root_args, bwrap_namespace_args, setpriv_command, top_level_links};

use crate::error::BackendError;

/// Where the session bus and the AT-SPI bus put their sockets when the app has an identity of
/// its own (the workspace's `bus/`, 0755): both identities reach them, the app cannot reach
/// `run/`.
pub const INSIDE_BUS_DIR: &str = "/run/desk-bus";

/// The AT-SPI bus launcher's configuration, replaced in a sandbox with split identities by
/// one that admits both uids (the shipped one admits only the bus's own uid and root).
const AT_SPI_CONFIG: &str = "/usr/share/defaults/at-spi2/accessibility.conf";

/// The operator's extra writable paths (colon-separated absolute paths, read from the broker's
/// environment at each desktop start), bound at the same place inside every sandbox. Meant for
/// test instruments such as the probe window's recording; never set it in production.
pub const EXTRA_WRITABLE_ENV: &str = "DESKBROKER_SANDBOX_WRITABLE";

/// How long bwrap may take to report and complete its sandbox once it holds a start slot
/// ([`start_gate`]), and how long a process entering it may take to appear. A start's own
/// work is short on an idle host; the bound is for a host whose cores other desktops' apps
/// keep busy (measured under `deskbroker load` in docs/operations.md, "Sandbox starts under
/// load"). Overrunning it is [`BackendError::StartTimedOut`], never `SandboxUnavailable`.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(10);

/// fontconfig's system cache (generated fonts metadata, no user data).
const FONT_CACHE: &str = "/var/cache/fontconfig";

/// The directories bwrap creates in its own root for the mount points among `args` (bwrap
/// arguments up to `--`): every proper parent of a mount point that is neither a mount point
/// nor below a host directory bound there (a directory bwrap makes in a tmpfs of its own
/// counts: it is as private), in order, each once.
fn created_parents(args: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let args: Vec<PathBuf> = args.into_iter().collect();
    let flag = |arg: &PathBuf| arg.to_str().map(str::to_string).unwrap_or_default();
    // Mount points, and whether each shows a host tree (a bind) rather than making one entry
    // (a directory, a symlink, a file, a fresh filesystem).
    let mut mounts: Vec<(PathBuf, bool)> = Vec::new();
    let mut index = 0;
    while index < args.len() {
        let name = flag(&args[index]);
        let (dest, tree, width) = match name.as_str() {
            "--" => break,
            "--ro-bind" | "--bind" | "--dev-bind" => (args.get(index + 2), true, 3),
            "--symlink" => (args.get(index + 2), false, 3),
            "--proc" | "--dev" | "--mqueue" => (args.get(index + 1), true, 2),
            "--tmpfs" => (args.get(index + 1), false, 2),
            "--dir" => (args.get(index + 1), false, 2),
            "--chmod" => (None, false, 3),
            "--perms" | "--size" | "--hostname" | "--remount-ro" | "--chdir" | "--info-fd"
            | "--cap-drop" | "--cap-add" | "--uid" | "--gid" => (None, false, 2),
            _ => (None, false, 1),
        };
        if let Some(dest) = dest {
            mounts.push((dest.clone(), tree));
        }
        index += width;
    }
    let inside_tree = |path: &Path| {
        mounts
            .iter()
            .any(|(mount, tree)| path == mount || (*tree && path.starts_with(mount)))
    };
    let mut created: Vec<PathBuf> = Vec::new();
    for (mount, _) in &mounts {
        let mut parents: Vec<&Path> = mount.ancestors().skip(1).collect();
        parents.reverse();
        for parent in parents {
            if parent == Path::new("/")
                || inside_tree(parent)
                || created.iter().any(|c| c == parent)
            {
                continue;
            }
            created.push(parent.to_path_buf());
        }
    }
    created
}

/// A sandbox being started: spawn the command [`SandboxStart::new`] returns, then
/// [`SandboxStart::finish`] with its stdout.
pub(crate) struct SandboxStart {
    holder: PathBuf,
    identities: Identities,
    drop_root: bool,
    workspace: PathBuf,
    writable: Vec<PathBuf>,
}

impl SandboxStart {
    /// Builds the bwrap command for `workspace` (read-only but for its `writable` directories,
    /// see [`workspace`]), with `read_only` extra paths (the worker program) bound at the same
    /// place inside, and `holder` (the worker program, one of `read_only`) as its pid 1, over
    /// the host filesystem `view` (see [`view`]), for the session's `identities` (split only
    /// under a root broker). Spawn the command with its stdout piped.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        policy: SandboxPolicy,
        identities: Identities,
        workspace: &Path,
        writable: &WritableDirs,
        read_only: &[PathBuf],
        holder: &Path,
        view: &FsView,
    ) -> Result<(Command, SandboxStart), BackendError> {
        let SandboxPolicy::On { .. } = policy else {
            return Err(BackendError::DesktopFailed(
                "the sandbox is off for this desktop".to_string(),
            ));
        };
        let drop_root = nix::unistd::geteuid().is_root();
        let split = identities.split();
        if split && !drop_root {
            return Err(BackendError::SandboxUnavailable(
                "only a root broker can give the app an identity of its own".to_string(),
            ));
        }
        let desktop = identities.desktop;
        let mut command = setpriv_command((!split).then_some((desktop.uid, desktop.gid)));
        command.arg(probe::bwrap_program()?);
        bwrap_namespace_args(&mut command, split);
        command.args(["--hostname", "desk"]);
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
        // Shared by every identity inside: sticky and world-writable, like a host's.
        command.args([
            "--perms",
            "1777",
            "--tmpfs",
            "/dev/shm",
            "--perms",
            "1777",
            "--tmpfs",
            "/tmp",
            "--perms",
            "1777",
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
        let host_dir = host::prepare(workspace, &identities, &workspace.join(workspace::HOME_DIR))?;
        let mut dirs = workspace::bind_args(&mut command, workspace, writable, split)?;
        workspace::read_only_home_args(&mut command, workspace, view.read_only_home_dirs(), split)?;
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
        if split {
            command
                .arg("--bind")
                .arg(workspace.join(workspace::BUS_DIR))
                .arg(INSIDE_BUS_DIR);
            dirs.push(PathBuf::from(INSIDE_BUS_DIR));
            if Path::new(AT_SPI_CONFIG).is_file() {
                command
                    .arg("--ro-bind")
                    .arg(host_dir.join(host::AT_SPI_CONFIG_FILE))
                    .arg(AT_SPI_CONFIG);
            }
        }
        // The root itself (bwrap's tmpfs) becomes read-only once everything is mounted on it.
        // bwrap makes the missing parents of a mount point 0700 root's: opened to the
        // desktop's and the app's uids (`--chmod`, only on directories of its own root).
        let created = created_parents(command.get_args().map(|arg| Path::new(arg).to_path_buf()));
        for dir in created {
            command.args(["--chmod", "0755"]).arg(dir);
        }
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
                identities,
                drop_root,
                workspace: workspace.to_path_buf(),
                writable: workspace::allowed_writable(dirs, &extra),
            },
        ))
    }

    /// Reads bwrap's `--info-fd` report from the spawned holder's stdout and waits until the
    /// holder runs, within [`START_TIMEOUT`].
    pub(crate) fn finish(
        self,
        stdout: impl Read + Send + 'static,
    ) -> Result<Sandbox, BackendError> {
        self.finish_within(stdout, START_TIMEOUT)
    }

    /// [`SandboxStart::finish`] within `bound`: past it, [`BackendError::StartTimedOut`].
    fn finish_within(
        self,
        stdout: impl Read + Send + 'static,
        bound: Duration,
    ) -> Result<Sandbox, BackendError> {
        let deadline = std::time::Instant::now() + bound;
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
        let text = match receiver.recv_timeout(bound) {
            Ok(Ok(text)) => text,
            Ok(Err(error)) => {
                return Err(BackendError::SandboxUnavailable(format!(
                    "failed to read bwrap's report: {error}"
                )));
            }
            Err(_) => {
                return Err(BackendError::StartTimedOut(format!(
                    "bwrap did not report its sandbox within {} ms",
                    bound.as_millis()
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
                return Err(BackendError::StartTimedOut(format!(
                    "the sandbox was not complete within {} ms",
                    bound.as_millis()
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(Sandbox {
            holder_pid: info.child_pid,
            uid: self.identities.desktop.uid,
            gid: self.identities.desktop.gid,
            app: self.identities.split().then_some(self.identities.app),
            drop_root: self.drop_root,
            workspace: self.workspace,
            writable: self.writable,
            holder: Some(self.holder),
        })
    }
}

/// The session bus's configuration file name in the workspace's `host/` (split identities).
pub(crate) fn host_session_bus_config() -> &'static str {
    host::SESSION_BUS_CONFIG_FILE
}

impl Sandbox {
    /// A command that runs `argv` inside this sandbox as a desktop process, in `cwd` (a path
    /// inside), with exactly `env` as its environment.
    pub fn command(&self, argv: &[String], cwd: &Path, env: &[(String, String)]) -> Command {
        self.command_as(Role::Desktop, argv, cwd, env)
    }

    /// The host ids a process of `role` runs as.
    pub fn ids(&self, role: Role) -> Ids {
        match (role, self.app) {
            (Role::App, Some(app)) => app,
            _ => Ids {
                uid: self.uid,
                gid: self.gid,
            },
        }
    }

    /// [`Sandbox::command`] for a process of `role`. With split identities root enters the
    /// namespaces (no user namespace) and `nsenter` drops to the role's ids (no
    /// supplementary groups, no capability left); with one identity the process drops first
    /// and joins the sandbox's user namespace.
    pub fn command_as(
        &self,
        role: Role,
        argv: &[String],
        cwd: &Path,
        env: &[(String, String)],
    ) -> Command {
        let ids = self.ids(role);
        let mut command = Command::new("setpriv");
        if self.drop_root && self.app.is_none() {
            command.args([
                "--reuid",
                &ids.uid.to_string(),
                "--regid",
                &ids.gid.to_string(),
                "--clear-groups",
            ]);
        }
        command
            .args(["--no-new-privs", "nsenter", "--target"])
            .arg(self.holder_pid.to_string());
        if self.app.is_none() {
            command.arg("--user");
        }
        command.args(["--mount", "--pid", "--net", "--ipc", "--uts", "--cgroup"]);
        let mut argv = argv.to_vec();
        if self.app.is_none() {
            command.arg("--preserve-credentials");
        } else if role == Role::Worker {
            // Right after the program: `deskbroker-worker --as UID:GID` (see `Role::Worker`).
            let at = argv.len().min(1);
            argv.splice(
                at..at,
                ["--as".to_string(), format!("{}:{}", ids.uid, ids.gid)],
            );
        } else {
            command
                .arg("--setuid")
                .arg(ids.uid.to_string())
                .arg("--setgid")
                .arg(ids.gid.to_string());
        }
        command
            .args(["--", "env", "-C"])
            .arg(cwd)
            .arg("--")
            .args(&argv)
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
                return Err(BackendError::StartTimedOut(format!(
                    "the process started by wrapper {wrapper} did not appear in the sandbox \
                     within {} s",
                    START_TIMEOUT.as_secs()
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

    /// Gives the app's uid the tree at `path` (a fresh home or attempt directory the broker
    /// prepared as root), without following links. No-op when not dropping root.
    pub fn hand_over(&self, path: &Path) -> Result<(), BackendError> {
        if !self.drop_root {
            return Ok(());
        }
        let ids = self.ids(Role::App);
        chown_tree(path, ids.uid, ids.gid).map_err(|source| BackendError::Spawn {
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

fn fresh_cookie(path: &Path) -> Result<[u8; 16], BackendError> {
    let mut cookie = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut cookie))
        .map_err(|source| BackendError::Spawn {
            what: format!("X authority {}", path.display()),
            source,
        })?;
    Ok(cookie)
}

/// Writes an X authority file with one fresh MIT-MAGIC-COOKIE-1 for any display (family
/// Wild, empty number), mode 0600, owned by `owner` when given. With `app` (a path and its
/// owner), a second fresh cookie goes to that file alone and is appended to `path`, which is
/// also the X server's `-auth` file: the app reaches the display with a cookie of its own and
/// never needs to read the desktop's.
pub fn write_xauthority(
    path: &Path,
    owner: Option<(u32, u32)>,
    app: Option<(&Path, (u32, u32))>,
) -> Result<(), BackendError> {
    let mut bytes = xauthority_entry(FAMILY_WILD, b"", b"", &fresh_cookie(path)?);
    if let Some((app_path, app_owner)) = app {
        let entry = xauthority_entry(FAMILY_WILD, b"", b"", &fresh_cookie(app_path)?);
        write_private(app_path, &entry, Some(app_owner))?;
        bytes.extend_from_slice(&entry);
    }
    write_private(path, &bytes, owner)
}

/// Writes `bytes` to a new file at `path` (replacing one there), mode 0600, owned by `owner`.
fn write_private(path: &Path, bytes: &[u8], owner: Option<(u32, u32)>) -> Result<(), BackendError> {
    let io = |source| BackendError::Spawn {
        what: format!("X authority {}", path.display()),
        source,
    };
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
        file.write_all(bytes).map_err(io)?;
    }
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bwrap that never reports (an injected slow start: its stdout stays open and silent)
    /// ends in the typed timeout, not `SandboxUnavailable`.
    #[test]
    fn a_start_that_does_not_report_in_time_is_a_timeout() {
        let (silent, _open_writer) = std::io::pipe().expect("a pipe");
        let start = SandboxStart {
            holder: PathBuf::from("/nonexistent/holder"),
            identities: Identities::single(DEFAULT_SANDBOX_UID, DEFAULT_SANDBOX_UID),
            drop_root: false,
            workspace: PathBuf::from("/nonexistent/workspace"),
            writable: Vec::new(),
        };
        match start.finish_within(silent, Duration::from_millis(5)) {
            Err(BackendError::StartTimedOut(message)) => {
                assert!(message.contains("did not report"), "{message}");
            }
            other => panic!("expected StartTimedOut, got {other:?}"),
        }
    }

    #[test]
    fn only_the_parents_bwrap_makes_are_opened() {
        let args = [
            "--ro-bind",
            "/usr",
            "/usr",
            "--ro-bind",
            "/usr/lib/x",
            "/usr/lib/x",
            "--perms",
            "1777",
            "--tmpfs",
            "/tmp",
            "--dir",
            "/tmp/.X11-unix",
            "--bind",
            "/tmp/t/log",
            "/tmp/t/log",
            "--dir",
            "/run",
            "--ro-bind",
            "/w/ws",
            "/run/ws/a/ws",
            "--bind",
            "/w/ws/run",
            "/run/desk",
            "--symlink",
            "usr/bin",
            "/bin",
            "--ro-bind",
            "/opt/t/worker",
            "/opt/t/worker",
            "--ro-bind",
            "/etc/x",
            "/etc/dbus-1/x",
            "--",
            "/opt/t/worker",
            "--dir",
            "/never",
        ]
        .map(PathBuf::from);
        assert_eq!(
            created_parents(args),
            [
                "/tmp/t",
                "/run/ws",
                "/run/ws/a",
                "/opt",
                "/opt/t",
                "/etc",
                "/etc/dbus-1"
            ]
            .map(PathBuf::from)
            .to_vec()
        );
    }
}
