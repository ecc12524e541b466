//! The reading child: `deskbroker __read-workspace-file NAME MAX [UID:GID]`, started by
//! `read.rs` with the trusted directory's handle as stdin, an empty environment and, under a root
//! broker, the session's app uid and gid (std clears the supplementary groups). Before it opens
//! anything it empties its capability sets (a child left at the broker's uid, for a session
//! without an app identity of its own, starts with root's), clears the ambient set, sets
//! `no_new_privs` and makes itself not dumpable, then checks what it runs as: the uid and gid it
//! was given (real, effective and saved), no supplementary group but that gid, and empty
//! inheritable, permitted, effective and ambient capability sets (`/proc/self/status`); a
//! child that finds anything else refuses (`Refusal::Privileged`) without opening the file. Then the open and checks of
//! [`open_checked`], and the answer on stdout: a header of four little-endian `u64` (status and
//! three values), then, after an `OPENED`, the file's bytes (at most `MAX + 1`).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::process::ExitCode;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, SFlag, fstat};

/// The subcommand the broker's program answers as the reading child.
pub const CHILD_COMMAND: &str = "__read-workspace-file";

/// Bytes of the answer's header.
pub(super) const HEADER_BYTES: usize = 32;

const OPENED: u64 = 0;
const OPEN_FAILED: u64 = 1;
const NOT_REGULAR: u64 = 2;
const LINKED: u64 = 3;
const TOO_LARGE: u64 = 4;
const STAT_FAILED: u64 = 5;
const PRIVILEGED: u64 = 6;

/// Why the file was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The open failed (a link, a mount, `..`, a socket, a file the reader may not open).
    Open(Errno),
    /// Not a regular file: its kind.
    NotRegular(SFlag),
    /// More than one name: the link count.
    Linked(u64),
    /// Over the bound: the size.
    TooLarge(u64),
    /// `fstat` of the open descriptor failed.
    Stat(Errno),
    /// The child still held a privilege (the code of what it found): nothing was opened.
    Privileged(&'static str),
}

/// The header's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// Opened and checked; the bytes follow.
    Opened {
        /// Modification time, ms since the epoch.
        modified_ms: u64,
    },
    /// Refused; nothing follows.
    Refused(Refusal),
}

/// What [`Refusal::Privileged`] names, by code (the wire carries the index).
const PRIVILEGES: [&str; 5] = [
    "no_new_privs could not be set",
    "its uid or gid is not the one it was given",
    "it holds a supplementary group",
    "it holds a capability",
    "its identity could not be read",
];

impl Answer {
    pub(super) fn encode(self) -> [u64; 4] {
        match self {
            Answer::Opened { modified_ms } => [OPENED, modified_ms, 0, 0],
            Answer::Refused(Refusal::Open(errno)) => [OPEN_FAILED, errno as u64, 0, 0],
            Answer::Refused(Refusal::NotRegular(kind)) => {
                [NOT_REGULAR, u64::from(kind.bits()), 0, 0]
            }
            Answer::Refused(Refusal::Linked(links)) => [LINKED, links, 0, 0],
            Answer::Refused(Refusal::TooLarge(size)) => [TOO_LARGE, size, 0, 0],
            Answer::Refused(Refusal::Stat(errno)) => [STAT_FAILED, errno as u64, 0, 0],
            Answer::Refused(Refusal::Privileged(why)) => {
                let code = PRIVILEGES
                    .iter()
                    .position(|known| *known == why)
                    .unwrap_or(0);
                [PRIVILEGED, code as u64, 0, 0]
            }
        }
    }

    /// The answer of `header`; an unknown status is a privilege refusal (nothing is trusted).
    pub(super) fn decode(header: [u64; 4]) -> Answer {
        let [status, value, _, _] = header;
        let errno = || Errno::from_raw(i32::try_from(value).unwrap_or(0));
        match status {
            OPENED => Answer::Opened { modified_ms: value },
            OPEN_FAILED => Answer::Refused(Refusal::Open(errno())),
            NOT_REGULAR => Answer::Refused(Refusal::NotRegular(
                SFlag::from_bits_truncate(u32::try_from(value).unwrap_or(0)) & SFlag::S_IFMT,
            )),
            LINKED => Answer::Refused(Refusal::Linked(value)),
            TOO_LARGE => Answer::Refused(Refusal::TooLarge(value)),
            STAT_FAILED => Answer::Refused(Refusal::Stat(errno())),
            _ => Answer::Refused(Refusal::Privileged(
                usize::try_from(value)
                    .ok()
                    .and_then(|code| PRIVILEGES.get(code))
                    .copied()
                    .unwrap_or("its answer was not understood"),
            )),
        }
    }
}

/// An opened, checked file.
pub(super) struct Opened {
    /// The descriptor the checks ran on.
    pub(super) file: OwnedFd,
    /// Modification time, ms since the epoch (floored; 0 before it).
    pub(super) modified_ms: u64,
}

/// Opens `name` below `dir` without following any link, crossing a mount or leaving `dir`, and
/// checks it is a regular file with one link of at most `max_bytes` (by `fstat` of the
/// descriptor).
pub(super) fn open_checked(
    dir: BorrowedFd<'_>,
    name: &Path,
    max_bytes: u64,
) -> Result<Opened, Refusal> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let how = OpenHow::new().flags(flags).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_NO_XDEV,
    );
    let file = match openat2(dir, name, how) {
        Err(Errno::ENOSYS) => {
            // Older kernels: one component only, so O_NOFOLLOW covers the whole path.
            if name.components().count() != 1 {
                return Err(Refusal::Open(Errno::EXDEV));
            }
            openat(dir, name, flags, Mode::empty())
        }
        other => other,
    }
    .map_err(Refusal::Open)?;
    let stat = fstat(&file).map_err(Refusal::Stat)?;
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    if kind != SFlag::S_IFREG {
        return Err(Refusal::NotRegular(kind));
    }
    if stat.st_nlink != 1 {
        return Err(Refusal::Linked(stat.st_nlink));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > max_bytes {
        return Err(Refusal::TooLarge(size));
    }
    let modified_ms = u64::try_from(stat.st_mtime)
        .unwrap_or(0)
        .saturating_mul(1000)
        .saturating_add(u64::try_from(stat.st_mtime_nsec / 1_000_000).unwrap_or(0));
    Ok(Opened { file, modified_ms })
}

/// The reading child's whole life: `args` are what follows [`CHILD_COMMAND`]. Exits 0 when
/// its answer (and, after `OPENED`, every byte) was written.
pub fn workspace_read_child(args: &[OsString]) -> ExitCode {
    let (Some(name), Some(max_bytes)) = (
        args.first(),
        args.get(1)
            .and_then(|max| max.to_str())
            .and_then(|max| max.parse::<u64>().ok()),
    ) else {
        return ExitCode::from(2);
    };
    let expected = args.get(2).and_then(|ids| {
        let (uid, gid) = ids.to_str()?.split_once(':')?;
        Some((uid.parse::<u32>().ok()?, gid.parse::<u32>().ok()?))
    });
    let answer = match unprivileged(expected) {
        Err(why) => Err(Refusal::Privileged(why)),
        Ok(()) => open_checked(std::io::stdin().as_fd(), Path::new(name), max_bytes),
    };
    let mut out = std::io::stdout().lock();
    let sent = match answer {
        Err(refusal) => send_header(&mut out, Answer::Refused(refusal)),
        Ok(opened) => {
            send_header(
                &mut out,
                Answer::Opened {
                    modified_ms: opened.modified_ms,
                },
            )
            .and_then(|()| {
                // One byte past the bound tells the parent the file grew since fstat.
                let mut file = std::fs::File::from(opened.file).take(max_bytes.saturating_add(1));
                std::io::copy(&mut file, &mut out).map(|_| ())
            })
        }
    };
    match sent.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

fn send_header(out: &mut impl Write, answer: Answer) -> std::io::Result<()> {
    let mut bytes = [0u8; HEADER_BYTES];
    for (chunk, value) in bytes.chunks_exact_mut(8).zip(answer.encode()) {
        chunk.copy_from_slice(&value.to_le_bytes());
    }
    out.write_all(&bytes)
}

/// Empties the capability sets, sets `no_new_privs` and not dumpable, then checks the child
/// holds nothing more than `expected` (its uid and gid) and no capability: see the module
/// documentation.
fn unprivileged(expected: Option<(u32, u32)>) -> Result<(), &'static str> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    // The process is single-threaded here: rustix's thread calls act on all of it.
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|_| PRIVILEGES[3])?;
    rustix::thread::clear_ambient_capability_set().map_err(|_| PRIVILEGES[3])?;
    nix::sys::prctl::set_no_new_privs().map_err(|_| PRIVILEGES[0])?;
    nix::sys::prctl::set_dumpable(false).map_err(|_| PRIVILEGES[0])?;
    let status = std::fs::read_to_string("/proc/self/status").map_err(|_| PRIVILEGES[4])?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let ids = |name: &str| -> Option<Vec<u32>> {
        field(name)?
            .split_whitespace()
            .map(|id| id.parse::<u32>().ok())
            .collect()
    };
    let (Some(uids), Some(gids), Some(groups)) = (ids("Uid"), ids("Gid"), ids("Groups")) else {
        return Err(PRIVILEGES[4]);
    };
    if let Some((uid, gid)) = expected {
        if uids.iter().any(|id| *id != uid) || gids.iter().any(|id| *id != gid) {
            return Err(PRIVILEGES[1]);
        }
        if groups.iter().any(|group| *group != gid) {
            return Err(PRIVILEGES[2]);
        }
    }
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        let value = field(set).ok_or(PRIVILEGES[4])?;
        if u64::from_str_radix(value, 16).map_err(|_| PRIVILEGES[4])? != 0 {
            return Err(PRIVILEGES[3]);
        }
    }
    Ok(())
}
