//! Private directories: the state directory and the socket directory belong to the broker's
//! user and nobody else.
//!
//! Invariants: a directory this module creates is mode 0700 (every missing component); an
//! existing one is accepted only when it is a real directory (not a symlink) owned by the
//! broker's effective uid, and, for the state directory, with no access for group or others, or,
//! for the socket directory, not writable by group or others (another user who can write there
//! can swap the socket). Anything else is refused with a message saying what to change; the only
//! directory ever chmod-ed is an empty state directory of our own, which holds nothing yet.

use std::fs::File;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::Path;

use crate::error::BrokerError;

/// Opens a file used as a lock or a counter, read-write, creating it 0600 when missing and never
/// truncating it.
pub(crate) fn open_lock_file(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Creates (or truncates) a private 0600 file for writing.
pub(crate) fn create_file(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// What a directory is for, which decides the permission bits group and others may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirUse {
    /// Sessions, the journal, frames, logs, keys: no access for group or others.
    State,
    /// The Unix socket's directory: not writable by group or others.
    Socket,
}

impl DirUse {
    fn forbidden_bits(self) -> u32 {
        match self {
            DirUse::State => 0o077,
            DirUse::Socket => 0o022,
        }
    }

    fn operation(self) -> &'static str {
        match self {
            DirUse::State => "use the state directory",
            DirUse::Socket => "use the socket directory",
        }
    }

    fn allowed(self) -> &'static str {
        match self {
            DirUse::State => "group or others can access it",
            DirUse::Socket => "group or others can write to it",
        }
    }
}

fn refused(dir_use: DirUse, dir: &Path, reason: String) -> BrokerError {
    BrokerError::Io {
        operation: dir_use.operation(),
        path: dir.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, reason),
    }
}

/// Creates `dir` (and missing parents up to `root`) with mode 0700 when `root`, the state
/// directory, still exists. Nothing below the state directory ever recreates it: a broker, kill
/// or watchdog writing after its state directory was removed (a test's temporary directory, an
/// operator's cleanup) fails with `NotFound` instead of leaving a new partial tree behind.
pub(crate) fn create_dir_below(root: &Path, dir: &Path) -> std::io::Result<()> {
    if !dir.starts_with(root) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not below {}", dir.display(), root.display()),
        ));
    }
    if !root.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("state directory {} is gone", root.display()),
        ));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates `dir` (and missing parents) with mode 0700, or checks an existing one as described
/// in the module documentation. An existing state directory that is still empty (a fresh
/// temporary directory, say) holds nothing yet, so it is made 0700 rather than refused.
pub fn ensure_private_dir(dir: &Path, dir_use: DirUse) -> Result<(), BrokerError> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(BrokerError::io(dir_use.operation(), dir))?;
        }
        Ok(metadata) => {
            let fresh = dir_use == DirUse::State
                && metadata.is_dir()
                && metadata.uid() == nix::unistd::geteuid().as_raw()
                && metadata.mode() & 0o077 != 0
                && std::fs::read_dir(dir)
                    .map_err(BrokerError::io(dir_use.operation(), dir))?
                    .next()
                    .is_none();
            if fresh {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(BrokerError::io(dir_use.operation(), dir))?;
            }
        }
    }
    check_private_dir(dir, dir_use)
}

/// Checks an existing `dir` as described in the module documentation.
pub(crate) fn check_private_dir(dir: &Path, dir_use: DirUse) -> Result<(), BrokerError> {
    let metadata =
        std::fs::symlink_metadata(dir).map_err(BrokerError::io(dir_use.operation(), dir))?;
    if metadata.file_type().is_symlink() {
        return Err(refused(
            dir_use,
            dir,
            "it is a symbolic link; name the real directory".to_string(),
        ));
    }
    if !metadata.is_dir() {
        return Err(refused(dir_use, dir, "it is not a directory".to_string()));
    }
    let own_uid = nix::unistd::geteuid().as_raw();
    if metadata.uid() != own_uid {
        return Err(refused(
            dir_use,
            dir,
            format!(
                "it is owned by uid {}, not by the broker's uid {own_uid}; use a directory of \
                 your own",
                metadata.uid()
            ),
        ));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & dir_use.forbidden_bits() != 0 {
        return Err(refused(
            dir_use,
            dir,
            format!(
                "{} (mode {mode:04o}); run `chmod 700 {}` or choose another directory",
                dir_use.allowed(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Sets the process umask to 0077, so every file and directory the broker and the libraries it
/// drives (SQLite, the event-log writers) create is private (0600/0700) unless created with an
/// explicit mode. Returns the previous mask.
pub fn restrict_umask() -> u32 {
    let previous = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    previous.bits()
}

#[cfg(test)]
mod tests;
