//! `deskbroker-worker seed-home HOME SEED`: fills the app's in-memory home from its read-only
//! seed inside the sandbox, as the sandbox's uid (an allowlisted sandbox has no shell, `find`
//! or `cp`). Everything already in HOME goes first, links removed and never followed; then
//! SEED's directories, files (with their permission bits) and links are copied. A directory on
//! another filesystem (a profile's read-only home directory, the seed's own bound over the
//! home) is left alone, and so are the directories on the way to it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;

/// Runs `seed-home HOME SEED`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    let [home, seed] = args else {
        eprintln!("deskbroker-worker seed-home: usage: seed-home HOME SEED (absolute paths)");
        return ExitCode::from(2);
    };
    let (home, seed) = (Path::new(home), Path::new(seed));
    if !home.is_absolute() || !seed.is_absolute() {
        eprintln!("deskbroker-worker seed-home: HOME and SEED must be absolute");
        return ExitCode::from(2);
    }
    match empty(home).and_then(|_| copy_tree(seed, home)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("deskbroker-worker seed-home: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Removes everything inside `dir` (not `dir` itself), without following links, but
/// directories on another filesystem and those on the way to one; `true` when it kept any.
fn empty(dir: &Path) -> std::io::Result<bool> {
    let device = std::fs::symlink_metadata(dir)?.dev();
    let mut kept = false;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        if !meta.is_dir() {
            std::fs::remove_file(&path)?;
        } else if meta.dev() != device || empty(&path)? {
            kept = true;
        } else {
            std::fs::remove_dir(&path)?;
        }
    }
    Ok(kept)
}

/// Copies the contents of `from` into the existing directory `to`.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            match std::fs::symlink_metadata(&target) {
                // Kept by `empty`: on the way to a directory on another filesystem (copied
                // into), or that directory itself (the seed's own already: left alone).
                Ok(kept) if kept.is_dir() => {
                    if kept.dev() == std::fs::symlink_metadata(to)?.dev() {
                        copy_tree(&entry.path(), &target)?;
                    }
                }
                _ => {
                    std::fs::create_dir(&target)?;
                    copy_tree(&entry.path(), &target)?;
                    let mode = entry.metadata()?.permissions().mode();
                    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
                }
            }
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
