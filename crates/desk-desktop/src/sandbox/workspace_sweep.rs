//! Orphaned out-of-tree workspaces, removed: a root broker's workspace lives in
//! `/run/deskbroker-workspaces` and is removed with its desktop (`remove_workspace`), but a
//! session directory removed before its desktop stopped (a test's temporary state directory, a
//! broker killed mid-stop, an operator's `rm`) leaves it behind with the attempt inside.
//!
//! Rule: every live workspace is named by a held uid claim (`identity.rs`: claimed right after the
//! workspace is made, released with it, stale once its session's link no longer leads to it).
//! A workspace that no held claim names, and that is older than [`ORPHAN_AGE`] (so one being made
//! this instant, before its claim, is never taken), belongs to no session and is removed.
//! Swept whenever a new workspace is made.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old an unclaimed workspace must be to be removed.
pub(super) const ORPHAN_AGE: Duration = Duration::from_secs(120);

/// Removes the workspaces in `root` that `claimed` does not name and that were last changed
/// more than `min_age` before `now`; returns how many were removed.
pub(super) fn sweep(
    root: &Path,
    claimed: &BTreeSet<PathBuf>,
    min_age: Duration,
    now: SystemTime,
) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > min_age);
        if !meta.is_dir() || !old || claimed.contains(&path) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(error) => {
                tracing::warn!(%error, workspace = %path.display(), "cannot remove an orphaned workspace");
            }
        }
    }
    if removed > 0 {
        tracing::info!(removed, root = %root.display(), "orphaned workspaces removed");
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_old_unclaimed_directories_are_removed() {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let make = |name: &str| {
            let dir = root.path().join(name);
            std::fs::create_dir_all(dir.join("attempt")).unwrap_or_else(|error| panic!("{error}"));
            dir
        };
        let (claimed, orphan, fresh) = (make("claimed"), make("orphan"), make("fresh"));
        let file = root.path().join("not-a-dir");
        std::fs::write(&file, b"").unwrap_or_else(|error| panic!("{error}"));
        let named: BTreeSet<PathBuf> = [claimed.clone()].into_iter().collect();
        let later = SystemTime::now() + Duration::from_secs(600);
        // `fresh` counts as made now: at `now` nothing is old enough.
        assert_eq!(sweep(root.path(), &named, ORPHAN_AGE, SystemTime::now()), 0);
        assert!(orphan.exists() && fresh.exists());
        assert_eq!(sweep(root.path(), &named, ORPHAN_AGE, later), 2);
        assert!(claimed.exists() && file.exists());
        assert!(!orphan.exists() && !fresh.exists());
        // A missing root sweeps nothing.
        assert_eq!(
            sweep(&root.path().join("absent"), &named, ORPHAN_AGE, later),
            0
        );
    }
}
