//! Reading a file the desktop wrote, without trusting it: the attempt file lives in a directory
//! the sandboxed app writes, so whatever is at its name may be a symbolic link (to the gold, the
//! evidence key, `/proc/self/environ`), a hard link (to a file the app cannot read but the
//! broker can), a FIFO that never answers, a directory or a sparse file of terabytes.
//!
//! The broker does not open it itself. It opens the trusted directory as a handle only
//! (`O_PATH | O_DIRECTORY | O_NOFOLLOW`: a linked directory is refused, nothing in it is read)
//! and runs the reading child (`read/child.rs`: the broker's own program as
//! `deskbroker __read-workspace-file`, [`crate::BrokerConfig::workspace_reader`]) with that
//! handle as its stdin, an empty environment, and, under a root broker, the session's app uid and
//! gid (`<session>/identity.json`) with no supplementary group. A session without an app
//! identity of its own (the fake backend, `--unsafe-no-sandbox`, a broker that is not root) runs
//! its app as the broker's uid: its child keeps that uid. Either way the child empties its
//! capability sets, sets `no_new_privs`, checks its identity and that no capability is left,
//! and only then opens the name below the handle with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`
//! and `O_NOFOLLOW | O_NONBLOCK` (a FIFO opens without a writer and is then refused, never
//! read); where the kernel lacks `openat2` (`ENOSYS`) a plain `openat` with `O_NOFOLLOW` of the
//! single component does the same. The open file must be a regular file with one link and at
//! most the bound in size (by `fstat` of the open descriptor); then it is read from that
//! descriptor only, never past the bound, and streamed back on its stdout after a header with
//! its facts or the reason it was refused. What the app's uid cannot open (a root-only file
//! linked in, a directory it cannot search) is `artifact_invalid`, like every other refusal,
//! and nothing is read. The parent reads at most the bound plus one byte and gives the child
//! [`CHILD_TIMEOUT`] in all.
//!
//! Without a configured program (an embedding that is not the `deskbroker` binary: the
//! library's own tests, harness and client tests over the fake backend) the same checks run in
//! the broker's process, with its privileges; `deskbroker` always configures itself.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use desk_desktop::SessionDir;
use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::sys::stat::{Mode, SFlag};

use crate::error::BrokerError;

mod child;

pub use child::{CHILD_COMMAND, workspace_read_child};

/// The largest attempt file a checkpoint reads (a FreeCAD part is a few MiB).
pub(crate) const MAX_ATTEMPT_BYTES: u64 = 256 * 1024 * 1024;

/// How long the reading child may take in all (a bounded local file is read in well under a
/// second; a child past this is killed and the read fails).
pub(crate) const CHILD_TIMEOUT: Duration = Duration::from_secs(20);

/// A workspace file as read from its open descriptor.
pub(crate) struct WorkspaceFile {
    /// The bytes.
    pub(crate) bytes: Vec<u8>,
    /// Modification time, milliseconds since the Unix epoch (floored; 0 before the epoch).
    pub(crate) modified_ms: u64,
}

/// Who reads a session's workspace files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reader {
    /// The reading child's program; `None`: the checks in this process.
    program: Option<PathBuf>,
    /// Uid and gid the child runs as; `None` keeps the broker's (a broker that is not root).
    ids: Option<(u32, u32)>,
}

impl Reader {
    /// The reader of `session_dir`'s workspace with `program` (the broker's configured
    /// [`crate::BrokerConfig::workspace_reader`]): the child runs as the session's app uid
    /// where the app has one of its own (`identity.json`, a root broker's sandbox), else as the
    /// broker's uid, the one that app runs as; without capabilities either way.
    pub(crate) fn for_session(program: Option<&Path>, session_dir: &SessionDir) -> Reader {
        let ids = desk_desktop::sandbox::identity::load(session_dir)
            .filter(|identities| identities.split() && nix::unistd::geteuid().is_root())
            .map(|identities| (identities.app.uid, identities.app.gid));
        Reader {
            program: program.map(Path::to_path_buf),
            ids,
        }
    }

    /// The checks in this process (tests of the checks themselves).
    #[cfg(test)]
    pub(crate) fn in_process() -> Reader {
        Reader {
            program: None,
            ids: None,
        }
    }
}

/// Reads the file at `path` (its directory taken as the trusted base) through `reader`, as
/// described in the module documentation; refuses with `artifact_invalid` what is not a plain
/// file of at most `max_bytes` that the reader can open.
pub(crate) fn read_workspace_file(
    path: &Path,
    max_bytes: u64,
    reader: &Reader,
) -> Result<WorkspaceFile, BrokerError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(refused(path, "it has no directory and file name"));
    };
    let dir_fd = open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| open_failure(dir, errno))?;
    let Some(program) = &reader.program else {
        return match child::open_checked(dir_fd.as_fd(), Path::new(name), max_bytes) {
            Ok(opened) => {
                let mut bytes = Vec::new();
                std::fs::File::from(opened.file)
                    .take(max_bytes.saturating_add(1))
                    .read_to_end(&mut bytes)
                    .map_err(BrokerError::io("read the attempt file", path))?;
                finish(path, max_bytes, bytes, opened.modified_ms)
            }
            Err(refusal) => Err(refusal_error(path, max_bytes, refusal)),
        };
    };
    let mut command = Command::new(program);
    command
        .arg(CHILD_COMMAND)
        .arg(name)
        .arg(max_bytes.to_string())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::from(dir_fd))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some((uid, gid)) = reader.ids {
        // As root, std clears the supplementary groups before setgid/setuid.
        command.uid(uid).gid(gid).arg(format!("{uid}:{gid}"));
    }
    let mut spawned = command
        .spawn()
        .map_err(BrokerError::io("start the reading child", program))?;
    let received = match spawned.stdout.take() {
        Some(stdout) => receive(
            OwnedFd::from(stdout),
            max_bytes,
            Instant::now() + CHILD_TIMEOUT,
        ),
        None => Err(std::io::Error::other("the child has no stdout")),
    };
    if received.is_err() {
        let _ = spawned.kill();
    }
    let status = spawned.wait();
    let (header, bytes) =
        received.map_err(BrokerError::io("read through the reading child", path))?;
    let clean = status.as_ref().is_ok_and(|status| status.success());
    let Some(header) = header else {
        return Err(BrokerError::io("read through the reading child", path)(
            std::io::Error::other(format!("the child ended without an answer ({status:?})")),
        ));
    };
    let modified_ms = match child::Answer::decode(header) {
        child::Answer::Opened { modified_ms } => modified_ms,
        child::Answer::Refused(refusal) => return Err(refusal_error(path, max_bytes, refusal)),
    };
    if !clean {
        return Err(BrokerError::io("read the attempt file", path)(
            std::io::Error::other(format!(
                "the reading child did not finish ({status:?}) after {} bytes",
                bytes.len()
            )),
        ));
    }
    finish(path, max_bytes, bytes, modified_ms)
}

/// What a cheap look at the workspace name shows, to tell whether it may have been written
/// since the last look: taken by the broker with `fstatat(AT_SYMLINK_NOFOLLOW)` below the
/// directory handle, so it reads no content and follows no link (a link's own metadata is
/// what it sees). Any write changes the change time or the size, a rename the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// The [`FileStamp`] of `path`, or `None` when it cannot be taken (absent, a directory that is
/// a link, ...): the caller then reads as it would without one.
pub(crate) fn workspace_file_stamp(path: &Path) -> Option<FileStamp> {
    let (dir, name) = (path.parent()?, path.file_name()?);
    let dir_fd = open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = nix::sys::stat::fstatat(
        dir_fd.as_fd(),
        Path::new(name),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .ok()?;
    Some(FileStamp {
        dev: stat.st_dev,
        ino: stat.st_ino,
        size: stat.st_size,
        mtime: (stat.st_mtime, stat.st_mtime_nsec),
        ctime: (stat.st_ctime, stat.st_ctime_nsec),
    })
}

fn finish(
    path: &Path,
    max_bytes: u64,
    bytes: Vec<u8>,
    modified_ms: u64,
) -> Result<WorkspaceFile, BrokerError> {
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
        return Err(refused(
            path,
            &format!("it grew past the {max_bytes}-byte bound while read"),
        ));
    }
    Ok(WorkspaceFile { bytes, modified_ms })
}

fn refusal_error(path: &Path, max_bytes: u64, refusal: child::Refusal) -> BrokerError {
    match refusal {
        child::Refusal::Open(errno) => open_failure(path, errno),
        child::Refusal::NotRegular(kind) => refused(path, &format!("it is a {}", kind_name(kind))),
        child::Refusal::Linked(links) => refused(
            path,
            &format!("it has {links} hard links (a plain save has one)"),
        ),
        child::Refusal::TooLarge(size) => refused(
            path,
            &format!("it holds {size} bytes, over the {max_bytes}-byte bound"),
        ),
        child::Refusal::Stat(errno) => {
            BrokerError::io("stat the attempt file", path)(std::io::Error::from(errno))
        }
        child::Refusal::Privileged(why) => BrokerError::io("drop privileges to read", path)(
            std::io::Error::other(format!("the reading child refused to open it: {why}")),
        ),
    }
}

/// Reads the child's header and its bytes (at most `max_bytes + 1` of them) until it closes
/// its stdout or `deadline` passes (an error: the caller kills it).
fn receive(
    stdout: OwnedFd,
    max_bytes: u64,
    deadline: Instant,
) -> std::io::Result<(Option<[u64; 4]>, Vec<u8>)> {
    let mut header_bytes = Vec::with_capacity(child::HEADER_BYTES);
    let mut bytes = Vec::new();
    let limit = usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX);
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the reading child took over {CHILD_TIMEOUT:?}"),
            ));
        }
        let timeout = u16::try_from(left.as_millis().max(1)).unwrap_or(u16::MAX);
        let mut fds = [nix::poll::PollFd::new(
            stdout.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        match nix::poll::poll(&mut fds, timeout) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(errno) => return Err(errno.into()),
        }
        let got = match nix::unistd::read(&stdout, &mut buffer) {
            Ok(0) => break,
            Ok(got) => got,
            Err(Errno::EAGAIN | Errno::EINTR) => continue,
            Err(errno) => return Err(errno.into()),
        };
        let mut chunk = &buffer[..got];
        if header_bytes.len() < child::HEADER_BYTES {
            let take = (child::HEADER_BYTES - header_bytes.len()).min(chunk.len());
            header_bytes.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if bytes.len().saturating_add(chunk.len()) > limit {
            return Err(std::io::Error::other(
                "the reading child sent more than the bound",
            ));
        }
        bytes.extend_from_slice(chunk);
    }
    if header_bytes.len() < child::HEADER_BYTES {
        return Ok((None, bytes));
    }
    let mut header = [0u64; 4];
    for (value, chunk) in header.iter_mut().zip(header_bytes.chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *value = u64::from_le_bytes(word);
    }
    Ok((Some(header), bytes))
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
        // The app's own uid cannot open it: not a file the app saved.
        Errno::EACCES | Errno::EPERM => refused(path, "the session's app cannot read it"),
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
