//! `--as UID:GID`: the worker started as root inside the sandbox's namespaces (with the app on
//! an identity of its own, see `desk_desktop::sandbox::Role::Worker`) drops to the desktop's
//! ids itself, keeping two capabilities, `CAP_SYS_PTRACE` and `CAP_DAC_READ_SEARCH`, before
//! anything else runs.
//!
//! Why: the idle-aware settle reads the app's `/proc/<pid>/task/<tid>/syscall` and
//! `/proc/<pid>/mem` (`desk_x11::idle`). Those files are the app's uid's, mode 0400/0600, and
//! the kernel opens them only to a process that may also ptrace the app: across uids that takes
//! `CAP_DAC_READ_SEARCH` (the file mode) and `CAP_SYS_PTRACE` (the ptrace check). Without them
//! every settle falls back to the quiet-time rule (about 400 ms an action instead of tens). The
//! grant points one way: the app (another uid, no capability, NoNewPrivs) still cannot read,
//! ptrace or signal the worker, which the uid change also makes non-dumpable. The worker sees
//! only the sandbox: its pid namespace and its allowlisted filesystem view, where the extra read
//! access reaches the app's own files and nothing of the host's.

use rustix::thread::CapabilitySet;

#[path = "../../drop_ids.rs"]
mod drop_ids;

/// What the worker keeps: see the module documentation.
const KEPT: CapabilitySet = CapabilitySet::SYS_PTRACE.union(CapabilitySet::DAC_READ_SEARCH);

/// Parses `UID:GID`.
fn parse(ids: &str) -> Result<(u32, u32), String> {
    let (uid, gid) = ids
        .split_once(':')
        .ok_or_else(|| format!("{ids:?} is not UID:GID"))?;
    let number = |text: &str| {
        text.parse::<u32>()
            .map_err(|_| format!("{text:?} in {ids:?} is not a numeric id"))
    };
    let (uid, gid) = (number(uid)?, number(gid)?);
    if uid == 0 || gid == 0 {
        return Err(format!("{ids:?}: the worker never runs as root"));
    }
    Ok((uid, gid))
}

/// Drops this (single-threaded, root) process to `ids` (`UID:GID`, no supplementary groups)
/// with `CAP_SYS_PTRACE` and `CAP_DAC_READ_SEARCH` alone in its effective and permitted sets
/// and nothing inheritable (`drop_ids.rs`, shared with the watchdog).
pub(crate) fn drop_to(ids: &str) -> Result<(), String> {
    let (uid, gid) = parse(ids)?;
    drop_ids::drop_ids(uid, gid, KEPT, false)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn ids_are_two_numbers_and_never_root() {
        assert_eq!(parse("61236:61236"), Ok((61_236, 61_236)));
        assert!(parse("61236").is_err());
        assert!(parse("0:61236").is_err());
        assert!(parse("61236:0").is_err());
        assert!(parse("a:b").is_err());
        assert!(parse("-1:5").is_err());
    }
}
