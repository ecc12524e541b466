//! Where a program name leads: on the host ([`resolve_program`]) or inside a sandbox whose root
//! the host reaches at a path ([`resolve_in`]), links followed inside that root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::sandbox::SAFE_PATH;

/// The `PATH` a program name is looked up in (the sandbox's, [`crate::sandbox::SAFE_PATH`]).
fn search_path() -> impl Iterator<Item = &'static str> {
    SAFE_PATH.split(':')
}

/// `program` as a canonical host path: an absolute path with its links followed, or a name
/// found in the sandbox's `PATH` (the sandbox shows the host's `/usr` at the same place).
pub fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return std::fs::canonicalize(program).ok();
    }
    search_path()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
        .and_then(|path| std::fs::canonicalize(path).ok())
}

/// How many symbolic links one resolution follows at most.
const MAX_LINKS: usize = 40;

/// `program` as the sandbox whose root the host reaches at `root` shows it: an absolute path
/// or a name found in the sandbox's `PATH`, its links followed inside that root (an absolute
/// link starts again at the sandbox's root), as a path inside (`/usr/bin/…`). `None` for
/// `root`: the host's own view ([`resolve_program`]).
pub(crate) fn resolve_in(root: Option<&Path>, program: &str) -> Option<String> {
    let Some(root) = root else {
        return resolve_program(program).map(|path| path.display().to_string());
    };
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        search_path()
            .map(|dir| Path::new(dir).join(program))
            .collect()
    };
    candidates
        .iter()
        .filter_map(|candidate| walk_inside(root, candidate))
        .find(|inside| std::fs::metadata(below(root, inside)).is_ok_and(|meta| meta.is_file()))
        .map(|inside| inside.display().to_string())
}

/// Names already resolved inside one sandbox's root ([`resolve_in`]'s answers by name), kept
/// between the tracked scans of that sandbox (`census/members.rs`).
pub(crate) type Resolved = BTreeMap<String, Option<String>>;

/// [`resolve_in`], answered from `resolved` when the name is there (else resolved and kept).
pub(crate) fn resolve_kept(
    root: Option<&Path>,
    program: &str,
    resolved: &mut Resolved,
) -> Option<String> {
    resolved
        .entry(program.to_string())
        .or_insert_with(|| resolve_in(root, program))
        .clone()
}

/// `inside` (a path inside the sandbox) as the host reaches it below `root`.
pub(crate) fn below(root: &Path, inside: &Path) -> PathBuf {
    root.join(inside.strip_prefix("/").unwrap_or(inside))
}

/// `path` with its links followed inside `root`; `None` past [`MAX_LINKS`] links or when a
/// component is missing.
fn walk_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let push_all = |pending: &mut Vec<std::ffi::OsString>, path: &Path| {
        for part in path.components().rev() {
            match part {
                Component::Normal(name) => pending.push(name.to_os_string()),
                Component::ParentDir => pending.push("..".into()),
                _ => {}
            }
        }
    };
    push_all(&mut pending, path);
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&name);
        let meta = std::fs::symlink_metadata(below(root, &next)).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let target = std::fs::read_link(below(root, &next)).ok()?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            push_all(&mut pending, &target);
        } else {
            current = next;
        }
    }
    Some(current)
}
