//! What the broker writes for a sandbox and the sandbox may only read: `<workspace>/host/`,
//! bound read-only inside. It holds the account files (`passwd`, `group`: the sandbox uid has
//! an entry, because toolkits such as Qt and FreeCAD crash or misbehave without one) and the
//! lease deadline the sandbox's first process enforces.
//!
//! The first process (pid 1 of the sandbox's pid namespace, so nothing inside can stop or kill
//! it) is a shell loop that reads `deadline` (Unix seconds) every [`CHECK_INTERVAL_SECS`] and
//! exits once it has passed. When it exits, the kernel kills every process in the namespace:
//! a desktop whose broker never comes back stops at its lease expiry plus the grace period,
//! without the broker. The broker rewrites the file at each lease renewal (see
//! [`set_lease_deadline`]); a file that never appears ends the sandbox after
//! [`MISSING_DEADLINE_SECS`].

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::BackendError;
use crate::layout::SessionDir;

/// The host-written, read-only directory in a workspace.
pub(super) const HOST_DIR: &str = "host";

/// The lease deadline file in [`HOST_DIR`].
pub(super) const DEADLINE_FILE: &str = "deadline";

/// How often the first process reads the deadline.
pub(super) const CHECK_INTERVAL_SECS: u32 = 2;

/// How long the first process waits for a deadline file that is missing or unreadable.
pub(super) const MISSING_DEADLINE_SECS: u32 = 120;

/// The user name the sandbox uid has inside.
pub const SANDBOX_USER: &str = "desk";

/// Creates `<workspace>/host` (0755, the broker's) with `passwd` and `group` naming the sandbox
/// account (`uid`, `gid`, `home`) beside root and nobody. Returns the directory.
pub(crate) fn prepare(
    workspace: &Path,
    uid: u32,
    gid: u32,
    home: &Path,
) -> Result<PathBuf, BackendError> {
    let dir = workspace.join(HOST_DIR);
    let io = |what: &'static str, path: &Path| {
        let what = format!("{what} {}", path.display());
        move |source| BackendError::Spawn { what, source }
    };
    std::fs::create_dir_all(&dir).map_err(io("sandbox host directory", &dir))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .map_err(io("sandbox host directory", &dir))?;
    let passwd = format!(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         {SANDBOX_USER}:x:{uid}:{gid}:{SANDBOX_USER}:{home}:/usr/sbin/nologin\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        home = home.display()
    );
    let group = format!("root:x:0:\n{SANDBOX_USER}:x:{gid}:\nnogroup:x:65534:\n");
    for (name, text) in [("passwd", passwd), ("group", group)] {
        let path = dir.join(name);
        write_replacing(&path, text.as_bytes()).map_err(io("sandbox account file", &path))?;
    }
    Ok(dir)
}

/// The first process's program: `sh -c SCRIPT` enforcing `<host_dir>/deadline`.
pub(crate) fn holder_argv(host_dir: &Path) -> Vec<String> {
    let deadline = host_dir.join(DEADLINE_FILE);
    let script = format!(
        "f='{file}'; missing=0\n\
         while :; do\n\
           if read -r d < \"$f\" 2>/dev/null && [ -n \"$d\" ]; then\n\
             missing=0; [ \"$(date +%s)\" -gt \"$d\" ] && exit 0\n\
           else\n\
             missing=$((missing + {interval})); [ \"$missing\" -ge {limit} ] && exit 0\n\
           fi\n\
           sleep {interval}\n\
         done",
        file = deadline.display(),
        interval = CHECK_INTERVAL_SECS,
        limit = MISSING_DEADLINE_SECS,
    );
    vec!["sh".to_string(), "-c".to_string(), script]
}

/// Records that the desktop of `session_dir` may run until `deadline_unix_secs` (its lease
/// expiry plus grace). A session without a sandbox workspace has nothing to record.
///
/// Every renewal calls this (each action, screenshot, checkpoint), so a deadline less than one
/// check interval later than the recorded one is not written: the holder reads the file only
/// that often, and the grace period dwarfs the difference.
pub fn set_lease_deadline(
    session_dir: impl AsRef<Path>,
    deadline_unix_secs: u64,
) -> std::io::Result<()> {
    let dir = SessionDir::at(session_dir.as_ref())
        .workspace()
        .join(HOST_DIR);
    if !dir.is_dir() {
        return Ok(());
    }
    let path = dir.join(DEADLINE_FILE);
    let recorded = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    if recorded.is_some_and(|recorded| {
        (recorded..recorded + u64::from(CHECK_INTERVAL_SECS)).contains(&deadline_unix_secs)
    }) {
        return Ok(());
    }
    write_replacing(&path, format!("{deadline_unix_secs}\n").as_bytes())
}

/// Writes `path` through a temporary sibling and a rename (0644), so a reader sees the old or
/// the new contents, and a directory bind sees the new file.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&temporary)?;
    file.write_all(bytes)?;
    // Readable by the sandbox uid whatever the broker's umask (0077 under `serve`).
    file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    drop(file);
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_files_name_the_sandbox_user_and_the_deadline_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path();
        let workspace = session.join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        let dir = prepare(&workspace, 61234, 61235, &workspace.join("home")).unwrap();
        let passwd = std::fs::read_to_string(dir.join("passwd")).unwrap();
        assert!(passwd.contains(&format!(
            "desk:x:61234:61235:desk:{}/home:",
            workspace.display()
        )));
        let read = || std::fs::read_to_string(dir.join(DEADLINE_FILE)).unwrap();
        set_lease_deadline(session, 100).unwrap();
        set_lease_deadline(session, 200).unwrap();
        assert_eq!(read(), "200\n");
        // Less than one check interval later: not rewritten. Earlier, or later by more: written.
        set_lease_deadline(session, 201).unwrap();
        assert_eq!(read(), "200\n");
        set_lease_deadline(session, 202).unwrap();
        assert_eq!(read(), "202\n");
        set_lease_deadline(session, 150).unwrap();
        assert_eq!(read(), "150\n");
        for name in [DEADLINE_FILE, "passwd", "group"] {
            let mode = std::fs::metadata(dir.join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o644, "{name} is readable by the sandbox uid");
        }
        // No workspace: nothing to do, no error.
        set_lease_deadline(root.path().join("elsewhere"), 1).unwrap();
    }

    #[test]
    fn the_holder_script_exits_once_the_deadline_passed() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        std::fs::write(dir.join(DEADLINE_FILE), "1\n").unwrap();
        let argv = holder_argv(dir);
        let started = std::time::Instant::now();
        let status = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // A deadline in the future keeps it running.
        let future = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600;
        std::fs::write(dir.join(DEADLINE_FILE), format!("{future}\n")).unwrap();
        let mut child = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_none(), "still running");
        std::fs::write(dir.join(DEADLINE_FILE), "1\n").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the holder did not exit"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
