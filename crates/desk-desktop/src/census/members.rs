//! Which host processes belong to a sandbox's pid namespace: the census's list of members.
//!
//! The authority is the full scan ([`full_scan`]): every process of the host's `/proc` whose
//! `ns/pid` is the holder's. It finds every member whatever its parent: the launcher's
//! entries (their `nsenter` parent is outside the namespace), an orphan adopted by the holder,
//! and a process entered from outside by anything that joined the namespace (`setns`), whose
//! parent is outside too. It costs a `/proc` lookup per process of the host (2.66 ms per
//! action on a busy CI host), which is why a walk down from the holder
//! (`/proc/<pid>/task/*/children`) is not used instead: it cannot see an entered process,
//! whose parent is outside the namespace.
//!
//! The tracked way ([`members`]) keeps the host's answer and asks the namespace itself what
//! changed: the sandbox's own procfs, mounted by bwrap at its `/proc` and reached from the
//! host through `/proc/<holder>/root/proc`, lists exactly the processes of the namespace (by
//! their pids inside it), entered ones included, because the kernel fills it. Each listed pid
//! is looked up in the members of the last full scan (pid inside → host pid and start time);
//! when every one is the same live process (its host `stat` shows the recorded start time), the
//! list is complete and no other process was read. Anything else (a pid not recorded: a new
//! process, an orphan, an entered one; a process that died and whose pid was reused) falls
//! back to the full scan, which records the members again.
//!
//! That listing is only as good as the mount it goes through, and in a sandbox whose processes
//! hold capabilities in its user namespace (a broker that is not root) the app could mount
//! something else over `/proc` to hide a process. So the listing is trusted only while the
//! holder's mount table is the one checked when tracking began:
//! - the holder's `/proc/<holder>/mountinfo` (the host's procfs, from outside the sandbox) is
//!   opened and read once: exactly one mount at or below `/proc`, a `proc` mount without
//!   `hidepid`/`subset`, whose pid 1 (`/proc/1/ns/pid` through it) is in the holder's
//!   namespace;
//! - every later scan polls that open file after listing: the kernel flags it (`POLLPRI`) at
//!   any mount or unmount in that mount namespace since it was opened, and a flag ends the
//!   tracking (full scan, a new check).
//!
//! A process in a namespace nested inside the sandbox's is listed by the sandbox's procfs but
//! is not a member by the full scan's rule (its `ns/pid` differs): while one runs, every scan
//! is a full scan (never a shorter list). Trackers live in this process (the broker's, the
//! watchdog's: each keeps its own), one per holder, at most [`MAX_TRACKED`].

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read as _;
use std::os::fd::AsFd as _;
use std::path::Path;
use std::sync::Mutex;

use super::{Resolved, ScanError};

/// At most this many sandboxes are tracked at once (more: all are forgotten and start again).
const MAX_TRACKED: usize = 256;

/// How a scan found the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// From the sandbox's own listing and the recorded members.
    Tracked,
    /// From every process of the host.
    Full,
}

/// What is kept of one sandbox between scans.
#[derive(Debug)]
struct Tracker {
    /// The holder's start time (with its pid, its identity).
    holder_start: u64,
    /// The holder's mount table, opened when tracking began (polled for changes).
    mountinfo: File,
    /// Members by pid inside the namespace: host pid and start time.
    members: BTreeMap<u32, (u32, u64)>,
    /// Program names resolved inside the sandbox's root since tracking began
    /// ([`resolutions`]).
    resolved: Resolved,
}

static TRACKED: Mutex<BTreeMap<u32, Tracker>> = Mutex::new(BTreeMap::new());

fn tracked() -> std::sync::MutexGuard<'static, BTreeMap<u32, Tracker>> {
    // A panic while holding the lock leaves a map that is still consistent (whole entries).
    TRACKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `(state, ppid, start_ticks)` from `/proc/<pid>/stat`.
pub(super) fn stat(pid: u32) -> Option<(char, u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let start = fields.nth(17)?.parse().ok()?;
    Some((state, ppid, start))
}

/// The pids of `pid` in each namespace from the host's down (`NSpid` of its status).
fn nspids(pid: u32) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_nspids(&text)
}

/// The `NSpid` line of a `/proc/<pid>/status` text.
pub(super) fn parse_nspids(status: &str) -> Option<Vec<u32>> {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))?;
    line.split_whitespace()
        .map(|field| field.parse().ok())
        .collect()
}

/// Whether the mount table `mountinfo` (a `/proc/<pid>/mountinfo` text) shows at `/proc` the
/// sandbox's procfs as bwrap mounts it: one `proc` mount of its whole tree there, without
/// `hidepid` or `subset`, and below it only bwrap's read-only covers (`/proc/sys`, `/proc/irq`,
/// …: that same procfs bound onto its own place). Nothing mounted over it, nothing else
/// inside it.
pub(super) fn proc_mount_is_clean(mountinfo: &str) -> bool {
    // (device, root, mount point, filesystem type, super options) of each mount under /proc.
    let mounts: Vec<(&str, &str, &str, &str, &str)> = mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let mut fields = before.split(' ').skip(2);
            let (device, root, mount_point) = (fields.next()?, fields.next()?, fields.next()?);
            let mut fields = after.split(' ');
            let (fs_type, _source, options) = (fields.next()?, fields.next()?, fields.next()?);
            Some((device, root, mount_point, fs_type, options))
        })
        .filter(|(_, _, mount_point, _, _)| {
            *mount_point == "/proc" || mount_point.starts_with("/proc/")
        })
        .collect();
    let mut tops = mounts.iter().filter(|mount| mount.2 == "/proc");
    let (Some(&(device, root, _, fs_type, options)), None) = (tops.next(), tops.next()) else {
        return false;
    };
    let options_allowed = options
        .split(',')
        .all(|option| match option.split_once('=') {
            Some(("subset", _)) => false,
            Some(("hidepid", value)) => value == "0" || value == "off",
            _ => true,
        });
    let covers_are_its_own = mounts.iter().filter(|mount| mount.2 != "/proc").all(
        |&(cover_device, cover_root, mount_point, cover_type, _)| {
            cover_device == device
                && cover_type == "proc"
                && mount_point.strip_prefix("/proc") == Some(cover_root)
        },
    );
    fs_type == "proc" && root == "/" && options_allowed && covers_are_its_own
}

/// Every process of the host whose pid namespace is `namespace` (the holder's `ns/pid` link).
pub(super) fn full_scan(namespace: &Path) -> Result<Vec<u32>, ScanError> {
    let entries = std::fs::read_dir("/proc").map_err(|_| ScanError::HolderGone)?;
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|link| link == namespace) {
            pids.push(pid);
        }
    }
    Ok(pids)
}

impl Tracker {
    /// Starts tracking the sandbox of `holder` from the members a full scan just found; `None`
    /// when its `/proc` cannot be trusted (or read).
    fn start(holder: u32, holder_start: u64, namespace: &Path, found: &[u32]) -> Option<Tracker> {
        // Opened first: any mount from here on flags it, including during the checks below.
        let mut mountinfo = File::open(format!("/proc/{holder}/mountinfo")).ok()?;
        let mut text = String::new();
        mountinfo.read_to_string(&mut text).ok()?;
        if !proc_mount_is_clean(&text) {
            tracing::debug!(
                holder,
                "the sandbox's /proc is not bwrap's alone: full scans"
            );
            return None;
        }
        let init = std::fs::read_link(format!("/proc/{holder}/root/proc/1/ns/pid")).ok()?;
        if init != namespace {
            return None;
        }
        let holder_ids = nspids(holder)?;
        let level = holder_ids.len().checked_sub(1)?;
        if holder_ids.get(level) != Some(&1) {
            return None;
        }
        let mut members = BTreeMap::new();
        for &pid in found {
            let (Some(ids), Some((_, _, start))) = (nspids(pid), stat(pid)) else {
                continue;
            };
            if let Some(&inside) = ids.get(level) {
                members.insert(inside, (pid, start));
            }
        }
        Some(Tracker {
            holder_start,
            mountinfo,
            members,
            resolved: Resolved::new(),
        })
    }

    /// The members' host pids when the sandbox's listing holds only recorded, live members
    /// and the mount table did not change; `None`: a full scan decides.
    fn members(&self, holder: u32) -> Option<Vec<u32>> {
        let listing = std::fs::read_dir(format!("/proc/{holder}/root/proc")).ok()?;
        let mut pids = Vec::with_capacity(self.members.len());
        for entry in listing {
            let entry = entry.ok()?;
            let Some(inside) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            let &(pid, start) = self.members.get(&inside)?;
            match stat(pid) {
                Some((_, _, now)) if now == start => pids.push(pid),
                // Gone since it was listed: no longer a member.
                None if !Path::new(&format!("/proc/{holder}/root/proc/{inside}")).exists() => {}
                _ => return None,
            }
        }
        self.mounts_unchanged().then_some(pids)
    }

    /// Whether no mount or unmount happened in the holder's mount namespace since tracking
    /// began (`POLLPRI` on its open mount table).
    fn mounts_unchanged(&self) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let mut fds = [PollFd::new(self.mountinfo.as_fd(), PollFlags::POLLPRI)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => fds[0]
                .revents()
                .is_some_and(|events| !events.intersects(PollFlags::POLLPRI | PollFlags::POLLERR)),
            Err(_) => false,
        }
    }
}

/// The host pids of the members of `holder`'s namespace (`namespace`, its `ns/pid` link) and
/// how they were found: tracked when nothing but known members runs and the sandbox's
/// `/proc` is the one checked, else by a full scan (which starts tracking again).
pub(super) fn members(holder: u32, namespace: &Path) -> Result<(Vec<u32>, Way), ScanError> {
    let (_, _, holder_start) = stat(holder).ok_or(ScanError::HolderGone)?;
    let previous = tracked().remove(&holder);
    if let Some(tracker) = previous.filter(|tracker| tracker.holder_start == holder_start)
        && let Some(pids) = tracker.members(holder)
    {
        tracked().insert(holder, tracker);
        return Ok((pids, Way::Tracked));
    }
    let pids = full_scan(namespace)?;
    if pids.contains(&holder)
        && let Some(tracker) = Tracker::start(holder, holder_start, namespace, &pids)
    {
        let mut all = tracked();
        if all.len() >= MAX_TRACKED {
            all.clear();
        }
        all.insert(holder, tracker);
    }
    Ok((pids, Way::Full))
}

/// The program names resolved inside the sandbox of `holder` since its tracking began, for a
/// scan that found its members the tracked way (empty when it is not tracked). They hold as
/// long as the tracking does: the holder is the same process, so the root is the same, and a
/// mount or unmount anywhere in its mount namespace ends the tracking (the next scan is a full
/// one, which starts again with none). What a name resolves to depends only on that root's
/// mounts and on `/usr` and the top-level links bwrap makes, which are read-only; were a link
/// on the way changed in place anyway, the kept answer is the one every scan since tracking
/// began gave, and the process's program is still compared with the file at that path each
/// scan (`ExeIdentity`), so keeping it allows nothing an earlier scan did not.
pub(super) fn resolutions(holder: u32) -> Resolved {
    tracked()
        .get(&holder)
        .map(|tracker| tracker.resolved.clone())
        .unwrap_or_default()
}

/// Keeps `resolved` (names resolved by a scan of `holder`'s sandbox) for its next tracked
/// scans, when the sandbox is tracked.
pub(super) fn keep_resolutions(holder: u32, resolved: Resolved) {
    if let Some(tracker) = tracked().get_mut(&holder) {
        tracker.resolved = resolved;
    }
}

/// Forgets the sandbox of `holder` (it ended).
pub(super) fn forget(holder: u32) {
    tracked().remove(&holder);
}

#[cfg(test)]
#[path = "members_tests.rs"]
mod tests;
