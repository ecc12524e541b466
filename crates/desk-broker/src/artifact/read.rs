//! Reading a file the desktop wrote, without trusting it: the attempt file lives in a directory
//! the sandboxed app writes, so whatever is at its name may be a symbolic link (to the gold, the
//! evidence key, `/proc/self/environ`), a hard link, a FIFO that never answers, a directory or a
//! sparse file of terabytes.
//!
//! The directory is opened first (`O_DIRECTORY | O_NOFOLLOW`: a linked directory is refused),
//! then the name below it with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)` and `O_NOFOLLOW | O_NONBLOCK` (a FIFO opens without
//! a writer and is then refused, never read); where the kernel lacks `openat2` (`ENOSYS`) a
//! plain `openat` with `O_NOFOLLOW` of the single component does the same for a name without
//! `/`. The open file must be a regular file with one link and at most the bound in size (by
//! `fstat` of the open descriptor); then it is read from that descriptor only, never past the
//! bound. Anything else is `artifact_invalid` and nothing is read.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, open, openat, openat2};
use nix::sys::stat::{Mode, SFlag, fstat};

use crate::error::BrokerError;

/// The largest attempt file a checkpoint reads (a FreeCAD part is a few MiB).
pub(crate) const MAX_ATTEMPT_BYTES: u64 = 256 * 1024 * 1024;

/// A workspace file as read from its open descriptor.
pub(crate) struct WorkspaceFile {
    /// The bytes.
    pub(crate) bytes: Vec<u8>,
    /// Modification time, milliseconds since the Unix epoch (floored; 0 before the epoch).
    pub(crate) modified_ms: u64,
}

/// Reads the file at `path` (its directory taken as the trusted base) as described in the
/// module documentation; refuses with `artifact_invalid` what is not a plain file of at most
/// `max_bytes`.
pub(crate) fn read_workspace_file(
    path: &Path,
    max_bytes: u64,
) -> Result<WorkspaceFile, BrokerError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(refused(path, "it has no directory and file name"));
    };
    let dir_fd = open(
        dir,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| open_failure(dir, errno))?;
    let fd = open_beneath(&dir_fd, Path::new(name)).map_err(|errno| open_failure(path, errno))?;
    let stat = fstat(&fd).map_err(|errno| open_failure(path, errno))?;
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    if kind != SFlag::S_IFREG {
        return Err(refused(path, &format!("it is a {}", kind_name(kind))));
    }
    if stat.st_nlink != 1 {
        return Err(refused(
            path,
            &format!("it has {} hard links (a plain save has one)", stat.st_nlink),
        ));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > max_bytes {
        return Err(refused(
            path,
            &format!("it holds {size} bytes, over the {max_bytes}-byte bound"),
        ));
    }
    let modified_ms = u64::try_from(stat.st_mtime)
        .unwrap_or(0)
        .saturating_mul(1000)
        .saturating_add(u64::try_from(stat.st_mtime_nsec / 1_000_000).unwrap_or(0));
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // One byte past the bound tells a file that grew since fstat from one that did not.
    std::fs::File::from(fd)
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(BrokerError::io("read the attempt file", path))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
        return Err(refused(
            path,
            &format!("it grew past the {max_bytes}-byte bound while read"),
        ));
    }
    Ok(WorkspaceFile { bytes, modified_ms })
}

/// Opens `name` below `dir` without following any link, crossing a mount or leaving `dir`.
fn open_beneath(dir: &OwnedFd, name: &Path) -> Result<OwnedFd, Errno> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let how = OpenHow::new().flags(flags).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_NO_XDEV,
    );
    match openat2(dir, name, how) {
        Err(Errno::ENOSYS) => {
            // Older kernels: one component only, so O_NOFOLLOW covers the whole path.
            if name.components().count() != 1 {
                return Err(Errno::EXDEV);
            }
            openat(dir, name, flags, Mode::empty())
        }
        other => other,
    }
}

fn kind_name(kind: SFlag) -> &'static str {
    match kind {
        SFlag::S_IFDIR => "directory",
        SFlag::S_IFIFO => "FIFO",
        SFlag::S_IFSOCK => "socket",
        SFlag::S_IFCHR => "character device",
        SFlag::S_IFBLK => "block device",
        SFlag::S_IFLNK => "symbolic link",
        _ => "file of an unknown kind",
    }
}

fn open_failure(path: &Path, errno: Errno) -> BrokerError {
    match errno {
        // O_NOFOLLOW on a link, or openat2 meeting a link, a mount or `..`.
        Errno::ELOOP | Errno::EXDEV | Errno::ENOTDIR => refused(
            path,
            "it or its directory is a symbolic link or leaves the directory",
        ),
        // A socket or a device without a driver cannot even be opened.
        Errno::ENXIO | Errno::ENODEV => refused(path, "it is a socket or a device"),
        other => BrokerError::io("open the attempt file", path)(std::io::Error::from(other)),
    }
}

fn refused(path: &Path, why: &str) -> BrokerError {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    BrokerError::ArtifactInvalid(format!(
        "the attempt file {name:?} is not a plain file the broker reads ({why}); save it again \
         from the app as a regular file, then checkpoint"
    ))
}

#[cfg(test)]
mod tests;
