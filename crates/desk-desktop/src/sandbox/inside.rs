//! Reading a sandbox's root from the host, through its holder's `/proc/<pid>/root`: symbolic
//! links are followed inside that root (the kernel would resolve an absolute link met there
//! against the reader's own root), and the programs on a shell's `PATH` are counted.

use std::path::{Path, PathBuf};

/// The directories on a shell's `PATH` whose programs [`count_executables`] counts.
pub const BIN_DIRS: [&str; 5] = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"];

/// How many distinct files with an execute bit `dirs` hold below `root` (a
/// `/proc/<pid>/root`), links followed (`/bin` is `/usr/bin` on a merged-usr system).
pub fn count_executables(root: &Path, dirs: &[&str]) -> u32 {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mut seen = std::collections::BTreeSet::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir.trim_start_matches('/'))) else {
            continue;
        };
        for entry in entries.flatten() {
            let inside = Path::new(dir).join(entry.file_name());
            let Some(meta) = metadata_inside(root, &inside) else {
                continue;
            };
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                seen.insert((meta.dev(), meta.ino()));
            }
        }
    }
    u32::try_from(seen.len()).unwrap_or(u32::MAX)
}

/// The metadata of `path` (absolute, as the sandbox sees it) below `root` (a
/// `/proc/<pid>/root`), symbolic links followed inside that root: the kernel would resolve an
/// absolute link met through `/proc/<pid>/root` against the caller's root instead.
pub fn metadata_inside(root: &Path, path: &Path) -> Option<std::fs::Metadata> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        let mut walked = PathBuf::from("/");
        let mut relinked = None;
        let parts: Vec<_> = current.components().skip(1).collect();
        for (index, part) in parts.iter().enumerate() {
            walked.push(part);
            let host = root.join(walked.strip_prefix("/").ok()?);
            let meta = std::fs::symlink_metadata(&host).ok()?;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&host).ok()?;
                let base = walked.parent().unwrap_or(Path::new("/")).to_path_buf();
                let mut next = if target.is_absolute() {
                    target
                } else {
                    base.join(target)
                };
                for rest in &parts[index + 1..] {
                    next.push(rest);
                }
                relinked = Some(normalize(&next));
                break;
            }
            if index + 1 == parts.len() {
                return Some(meta);
            }
        }
        current = relinked?;
    }
    None
}

/// `path` with `.` and `..` folded (never above `/`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executables_are_counted_once_with_links_followed_inside_the_root() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::create_dir_all(root.join("opt/app")).unwrap();
        std::os::unix::fs::symlink("usr/bin", root.join("bin")).unwrap();
        let program = root.join("opt/app/app");
        std::fs::write(&program, b"x").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("usr/bin/data"), b"x").unwrap();
        // Absolute, as inside the sandbox: resolved below `root`, never on the host.
        std::os::unix::fs::symlink("/opt/app/app", root.join("usr/bin/app")).unwrap();
        std::os::unix::fs::symlink("/usr/bin/env", root.join("usr/bin/hostenv")).unwrap();
        assert_eq!(count_executables(root, &BIN_DIRS), 1);
        assert!(metadata_inside(root, Path::new("/bin/app")).is_some());
        assert!(metadata_inside(root, Path::new("/usr/bin/hostenv")).is_none());
    }
}
