//! Giving a host service's directory to the uid it drops to (`watchdog.rs`, `observer.rs`).

/// Gives `path` and everything below it to `uid:gid`, never following a symbolic link.
pub(crate) fn chown_tree(path: &std::path::Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}
