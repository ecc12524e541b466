//! The session's workspace and what a sandbox may write in it: the one home of the workspace's
//! layout and of the policy's `writable_directories` as the sandbox enforces them.
//!
//! ```text
//! <workspace>/      read-only inside
//!   host/           broker-written: account files, lease deadline, window manager config
//!   home/           the seed of the app's home (profile files), read-only at INSIDE_HOME_SEED
//!   attempt/        the task's output; it, or directories below it, writable (the policy's)
//!   run/            worker socket, X cookie (buses without split identities); writable at
//!                   INSIDE_RUN_DIR; the desktop uid's, 0700
//!   bus/            split identities: the buses' sockets, writable at INSIDE_BUS_DIR (0755)
//!   appauth/        split identities: the app's own X cookie, the app uid's, 0700
//! ```
//!
//! Inside the sandbox the workspace is a read-only bind; only the policy's writable
//! directories (each `attempt` or below it) are bound read-write from the host. The app's home,
//! `<workspace>/home` inside, is a size-limited tmpfs filled from the seed before every app
//! start ([`seed_home`]): what the app writes there (settings, caches, recent files) lives in
//! memory, never reaches the host and is gone at the next reset.
//!
//! Invariant: a host directory bound into a running sandbox (home, attempt, each writable
//! directory) is emptied at each reset, never removed and made anew; a bind shows the directory
//! it was made from, so a new one would be invisible inside.
//!
//! Over 400 lines: it is the workspace layout's one home (constants, writable directories,
//! emptying, binds, the home's seed), as the first line says.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::policy::{INSIDE_RUN_DIR, Role, SAFE_PATH, Sandbox, SandboxPolicy};
use crate::error::BackendError;
use crate::layout::SessionDir;

/// The seed of the app's home in a workspace.
pub(crate) const HOME_DIR: &str = "home";

/// The attempt directory in a workspace: the task's output.
pub const ATTEMPT_DIR: &str = "attempt";

/// The run directory in a workspace (worker socket, X cookie, buses).
pub const RUN_DIR: &str = "run";

/// The buses' directory in a workspace with split identities.
pub const BUS_DIR: &str = "bus";

/// The app's X cookie directory in a workspace with split identities.
pub(crate) const APP_AUTH_DIR: &str = "appauth";

/// Where the home seed is shown, read-only, inside the sandbox.
pub const INSIDE_HOME_SEED: &str = "/run/desk-home-seed";

/// The size limit of the app's in-memory home (a tmpfs takes memory only as it is filled).
const HOME_TMPFS_BYTES: u64 = 1 << 30;

/// How long filling the home from its seed may take.
const SEED_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a root broker keeps the sandbox-visible workspaces: the session directory stays 0700
/// and root-owned, so the unprivileged sandbox uid could not reach a workspace inside it.
const ROOT_WORKSPACES: &str = "/run/deskbroker-workspaces";

/// The workspace directories a sandbox may write, relative to the workspace: the attempt
/// directory or directories below it (the workspace policy's `writable_directories`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableDirs(Vec<PathBuf>);

impl Default for WritableDirs {
    fn default() -> Self {
        WritableDirs::attempt_only()
    }
}

impl WritableDirs {
    /// The attempt directory alone (the built-in default policy's).
    pub fn attempt_only() -> WritableDirs {
        WritableDirs(vec![PathBuf::from(ATTEMPT_DIR)])
    }

    /// The policy's `writable_directories`, each `attempt` or `attempt/...` of plain names;
    /// anything else is refused (the policy lint refuses it first).
    pub fn from_policy(paths: &[String]) -> Result<WritableDirs, BackendError> {
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        WritableDirs::from_paths(&paths)
    }

    /// [`WritableDirs::from_policy`] for paths (a `BackendRequest`'s plain data).
    pub fn from_paths(paths: &[PathBuf]) -> Result<WritableDirs, BackendError> {
        let mut dirs = Vec::new();
        for path in paths {
            let plain = path
                .components()
                .all(|component| matches!(component, Component::Normal(_)));
            if !plain || path.components().next() != Some(Component::Normal(ATTEMPT_DIR.as_ref())) {
                return Err(BackendError::Rejected(format!(
                    "writable directory {:?} is not the attempt directory or below it",
                    path.display().to_string()
                )));
            }
            dirs.push(path.clone());
        }
        if dirs.is_empty() {
            return Err(BackendError::Rejected(
                "the policy names no writable directory".to_string(),
            ));
        }
        dirs.sort();
        dirs.dedup();
        Ok(WritableDirs(dirs))
    }

    /// A request's plain paths ([`WritableDirs::from_paths`]); none: the attempt directory
    /// alone (a reattached desktop keeps the binds it started with).
    pub(crate) fn for_request(paths: &[PathBuf]) -> Result<WritableDirs, BackendError> {
        match paths {
            [] => Ok(WritableDirs::attempt_only()),
            paths => WritableDirs::from_paths(paths),
        }
    }

    /// The directories, relative to the workspace, parents before children.
    pub fn relative(&self) -> &[PathBuf] {
        &self.0
    }

    /// The directories below `workspace`.
    pub fn under(&self, workspace: &Path) -> Vec<PathBuf> {
        self.0.iter().map(|dir| workspace.join(dir)).collect()
    }
}

/// The session's workspace directory (`<session_dir>/workspace`, a link into
/// [`ROOT_WORKSPACES`] for a root broker), created when missing, with its `run/` (and, for a
/// root broker, the session's identities claimed, see [`super::identity`], with `bus/` and
/// `appauth/`). `home/` and `attempt/` are filled by the profile at each reset.
pub(crate) fn ensure_workspace(
    session_dir: &SessionDir,
    policy: SandboxPolicy,
) -> Result<PathBuf, BackendError> {
    let link = session_dir.workspace();
    let io = |what: &str, path: &Path| {
        let what = format!("{what} {}", path.display());
        move |source| BackendError::Spawn { what, source }
    };
    let root_broker = nix::unistd::geteuid().is_root();
    if let (SandboxPolicy::On { uid: base, .. }, true) = (policy, root_broker) {
        if std::fs::symlink_metadata(&link).is_ok_and(|meta| !meta.file_type().is_symlink()) {
            // Made before this call (not through it): the sandbox uid cannot reach it.
            return Err(BackendError::SandboxUnavailable(format!(
                "{} is a directory inside the private session directory, not the link to a \
                 workspace the sandbox can reach",
                link.display()
            )));
        }
        if !link.exists() {
            let name = hex16(session_dir.path());
            let target = Path::new(ROOT_WORKSPACES).join(name);
            std::fs::create_dir_all(ROOT_WORKSPACES)
                .map_err(io("workspace root", Path::new(ROOT_WORKSPACES)))?;
            // Reachable (not listable) by the sandbox uid; writable only by root.
            std::fs::set_permissions(ROOT_WORKSPACES, std::fs::Permissions::from_mode(0o711))
                .map_err(io("workspace root", Path::new(ROOT_WORKSPACES)))?;
            sweep::sweep(
                Path::new(ROOT_WORKSPACES),
                &super::identity::claimed_workspaces(),
                sweep::ORPHAN_AGE,
                std::time::SystemTime::now(),
            );
            std::fs::create_dir_all(&target).map_err(io("workspace", &target))?;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .map_err(io("workspace", &target))?;
            let _ = std::fs::remove_file(&link);
            symlink(&target, &link).map_err(io("workspace link", &link))?;
        }
        let workspace = std::fs::canonicalize(&link).map_err(io("workspace", &link))?;
        let identities = super::identity::claim(session_dir, &workspace, base)?;
        let (desktop, app) = (identities.desktop, identities.app);
        for (name, ids, mode) in [
            (RUN_DIR, desktop, 0o700),
            (BUS_DIR, desktop, 0o755),
            (APP_AUTH_DIR, app, 0o700),
        ] {
            let dir = workspace.join(name);
            std::fs::create_dir_all(&dir).map_err(io("workspace directory", &dir))?;
            std::os::unix::fs::lchown(&dir, Some(ids.uid), Some(ids.gid))
                .map_err(io("workspace directory", &dir))?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))
                .map_err(io("workspace directory", &dir))?;
        }
        // at-spi-bus-launcher makes its socket directory 0700 unless it exists: made here so
        // that the app's uid reaches the accessibility bus.
        let at_spi = workspace.join(BUS_DIR).join("at-spi");
        std::fs::create_dir_all(&at_spi).map_err(io("bus directory", &at_spi))?;
        std::os::unix::fs::lchown(&at_spi, Some(desktop.uid), Some(desktop.gid))
            .map_err(io("bus directory", &at_spi))?;
        std::fs::set_permissions(&at_spi, std::fs::Permissions::from_mode(0o755))
            .map_err(io("bus directory", &at_spi))?;
        return Ok(workspace);
    }
    let run = link.join(RUN_DIR);
    std::fs::create_dir_all(&run).map_err(io("run directory", &run))?;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))
        .map_err(io("run directory", &run))?;
    std::fs::canonicalize(&link).map_err(io("workspace", &link))
}

/// Removes a root broker's out-of-tree workspace of `session_dir` (the link's target).
pub(crate) fn remove_workspace(session_dir: &SessionDir) {
    let link = session_dir.workspace();
    if let Ok(target) = std::fs::read_link(&link)
        && target.starts_with(ROOT_WORKSPACES)
    {
        super::identity::release(session_dir, &target);
        let _ = std::fs::remove_dir_all(&target);
        let _ = std::fs::remove_file(&link);
    }
}

fn hex16(path: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest
        .iter()
        .take(12)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Makes `dir` an empty real directory, keeping (emptied) the directories in `keep` and the
/// way to them. A link or file where a directory belongs is removed, never followed.
pub(crate) fn empty_dir(dir: &Path, keep: &[PathBuf]) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            for entry in std::fs::read_dir(dir)? {
                let entry = entry?;
                let path = entry.path();
                let is_dir = entry.file_type()?.is_dir();
                if is_dir && keep.iter().any(|kept| kept.starts_with(&path)) {
                    empty_dir(&path, keep)?;
                } else if is_dir {
                    std::fs::remove_dir_all(&path)?;
                } else {
                    std::fs::remove_file(&path)?;
                }
            }
        }
        Ok(_) => {
            std::fs::remove_file(dir)?;
            std::fs::create_dir_all(dir)?;
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
        }
        Err(error) => return Err(error),
    }
    for kept in keep.iter().filter(|kept| kept.starts_with(dir)) {
        std::fs::create_dir_all(kept)?;
    }
    Ok(())
}

/// The bwrap arguments that show `workspace` inside: read-only, with the `writable` directories
/// read-write, the home as a tmpfs and its seed read-only at [`INSIDE_HOME_SEED`]. Makes the
/// mount points that are missing on the host (a desktop started before its first reset).
/// With `split` identities the home's tmpfs is sticky and world-writable (bwrap cannot give a
/// tmpfs to the app's uid; only the app writes there). Returns the read-write host-backed
/// binds (inside paths) it made.
pub(super) fn bind_args(
    command: &mut Command,
    workspace: &Path,
    writable: &WritableDirs,
    split: bool,
) -> Result<Vec<PathBuf>, BackendError> {
    let home = workspace.join(HOME_DIR);
    let dirs = writable.under(workspace);
    for dir in std::iter::once(&home).chain(&dirs) {
        std::fs::create_dir_all(dir).map_err(|source| BackendError::Spawn {
            what: format!("workspace directory {}", dir.display()),
            source,
        })?;
    }
    command.arg("--ro-bind").arg(workspace).arg(workspace);
    for dir in &dirs {
        command.arg("--bind").arg(dir).arg(dir);
    }
    command
        .arg("--ro-bind")
        .arg(&home)
        .arg(INSIDE_HOME_SEED)
        .args(["--perms", if split { "1777" } else { "0700" }, "--size"])
        .arg(HOME_TMPFS_BYTES.to_string())
        .arg("--tmpfs")
        .arg(&home);
    Ok(dirs)
}

/// The bwrap arguments that show each of the profile's read-only home directories (`dirs`,
/// relative to the home) inside the home's tmpfs: the seed's own directory, read-only, so the
/// app sees what the profile seeded there and can add nothing (a write is `EROFS`). The seed
/// keeps these directories across resets (emptied, never made anew: `AppProfile::prepare`),
/// and the home's filling leaves them alone (`deskbroker-worker seed-home` skips another
/// filesystem). Their parents are made in the tmpfs as the home is (sticky and world-writable
/// with `split` identities). Follows [`bind_args`].
pub(super) fn read_only_home_args(
    command: &mut Command,
    workspace: &Path,
    dirs: &[PathBuf],
    split: bool,
) -> Result<(), BackendError> {
    let home = workspace.join(HOME_DIR);
    let mut made: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let seed = home.join(dir);
        std::fs::create_dir_all(&seed).map_err(|source| BackendError::Spawn {
            what: format!("read-only home directory {}", seed.display()),
            source,
        })?;
        let mut parents: Vec<&Path> = dir.ancestors().skip(1).collect();
        parents.reverse();
        for parent in parents.into_iter().filter(|p| !p.as_os_str().is_empty()) {
            let inside = home.join(parent);
            if !made.contains(&inside) {
                command
                    .args(["--perms", if split { "1777" } else { "0700" }, "--dir"])
                    .arg(&inside);
                made.push(inside);
            }
        }
        command.arg("--ro-bind").arg(&seed).arg(&seed);
    }
    Ok(())
}

/// Fills the app's in-memory home (`home`, a path inside) from its seed: everything a previous
/// app wrote there is removed first. Runs inside `sandbox` as the app's uid.
/// The worker program does it (`deskbroker-worker seed-home HOME SEED`): an allowlisted
/// sandbox has no shell, `find` or `cp`. A sandbox recorded before it knew its holder uses
/// the shell it was built with.
pub(crate) fn seed_home(sandbox: &Sandbox, home: &Path) -> Result<(), BackendError> {
    const SCRIPT: &str = "set -e; find \"$1\" -mindepth 1 -delete; cp -a \"$2\"/. \"$1\"/";
    let home = home.display().to_string();
    let argv: Vec<String> = match &sandbox.holder {
        Some(holder) => vec![
            holder.display().to_string(),
            "seed-home".to_string(),
            home,
            INSIDE_HOME_SEED.to_string(),
        ],
        None => [
            "/bin/sh",
            "-c",
            SCRIPT,
            "seed-home",
            &home,
            INSIDE_HOME_SEED,
        ]
        .map(str::to_string)
        .to_vec(),
    };
    let env = [("PATH".to_string(), SAFE_PATH.to_string())];
    let mut child = sandbox
        .command_as(Role::App, &argv, Path::new("/"), &env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| BackendError::Spawn {
            what: "the home seeding".to_string(),
            source,
        })?;
    let deadline = Instant::now() + SEED_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BackendError::DesktopFailed(format!(
                    "filling the app's home from its seed took over {} s",
                    SEED_TIMEOUT.as_secs()
                )));
            }
            Err(source) => {
                return Err(BackendError::Spawn {
                    what: "the home seeding".to_string(),
                    source,
                });
            }
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut detail = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        use std::io::Read as _;
        let _ = stderr.read_to_string(&mut detail);
    }
    Err(BackendError::DesktopFailed(format!(
        "filling the app's home from its seed failed ({status}): {}",
        detail.trim()
    )))
}

/// Tells the worker of the desktop in `session_dir` that the control generation is now
/// `generation` (after a Stop): a settle wait of an older generation ends with `interrupted`.
/// Written by rename, so the worker reads the old or the new number, never a part. No-op for
/// a session without a desktop.
pub(crate) fn signal_stop(session_dir: &SessionDir, generation: u64) -> std::io::Result<()> {
    let run = session_dir.workspace().join(RUN_DIR);
    if !run.is_dir() {
        return Ok(());
    }
    let file = run.join(desk_contract::worker::STOP_GENERATION_FILE);
    let temporary = run.join(format!(
        ".{}.{}",
        desk_contract::worker::STOP_GENERATION_FILE,
        std::process::id()
    ));
    std::fs::write(&temporary, format!("{generation}\n"))?;
    std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o644))?;
    std::fs::rename(&temporary, &file)
}

/// The host-backed paths a sandbox may write: its writable directories, the run directory and
/// the operator's extra writable paths.
pub(super) fn allowed_writable(dirs: Vec<PathBuf>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut allowed = dirs;
    allowed.push(PathBuf::from(INSIDE_RUN_DIR));
    allowed.extend(extra.iter().cloned());
    allowed
}

#[path = "workspace_sweep.rs"]
mod sweep;

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
