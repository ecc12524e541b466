//! The pieces of a bwrap command line that the session's sandbox (`sandbox.rs`) and the
//! capability probe (`probe.rs`) share: `setpriv` in front, the namespace flags and the
//! read-only base of the root.

use std::path::Path;
use std::process::Command;

/// The namespaces every sandbox gets anew (bwrap flags); the first, the user namespace, only
/// with one identity (see [`bwrap_namespace_args`]).
const UNSHARE: [&str; 6] = [
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-cgroup",
];

/// `setpriv` dropping a root broker to `uid`/`gid` (no supplementary groups) when given,
/// always with `NoNewPrivs`; the program to run follows as its next argument.
///
/// Run under umask 022 (by the host's `/bin/sh`, before anything of the sandbox exists): the
/// directories bwrap makes for its mount points follow the umask, and a broker's 0077 would
/// leave them to root alone, out of reach of the desktop's and the app's uids.
pub(super) fn setpriv_command(drop_to: Option<(u32, u32)>) -> Command {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", "umask 022 && exec \"$@\"", "sh", "setpriv"]);
    if let Some((uid, gid)) = drop_to.filter(|_| nix::unistd::geteuid().is_root()) {
        command.args([
            "--reuid",
            &uid.to_string(),
            "--regid",
            &gid.to_string(),
            "--clear-groups",
        ]);
    }
    command.arg("--no-new-privs");
    command
}

/// bwrap's namespace flags: with split identities (a root broker) no user namespace and every
/// capability dropped (root builds the sandbox; the holder keeps uid 0 and no capability),
/// else all of [`UNSHARE`].
pub(crate) fn bwrap_namespace_args(command: &mut Command, split: bool) {
    if split {
        command.args(&UNSHARE[1..]).args(["--cap-drop", "ALL"]);
    } else {
        command.args(UNSHARE);
    }
}

/// The read-only base every sandbox root starts from: `/usr` and the merged-usr top-level
/// links (or directories, where the host has them).
pub(super) fn base_root_args(command: &mut Command) {
    command.args(["--ro-bind", "/usr", "/usr"]);
    top_level_links(command);
}

/// The merged-usr top-level links (`/bin` → `usr/bin`...), or the directories where the host
/// has them.
pub(super) fn top_level_links(command: &mut Command) {
    for top in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
        let host = Path::new("/").join(top);
        match std::fs::read_link(&host) {
            Ok(target) => {
                command.arg("--symlink").arg(target).arg(&host);
            }
            Err(_) if host.is_dir() => {
                command.arg("--ro-bind").arg(&host).arg(&host);
            }
            Err(_) => {}
        }
    }
}
