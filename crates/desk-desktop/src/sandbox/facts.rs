//! The workspace measured from outside: what `/proc` says about the app's process, compared
//! with the broker's own. The launcher measures it at every handoff and refuses a sandboxed
//! handoff whose facts fail a rule ([`crate::BackendError::WorkspaceUnverified`]).

use std::path::{Path, PathBuf};

use desk_contract::desktop::{LimitsMode, SandboxMode, WorkspaceFacts};

/// The namespaces a sandboxed app must not share with the broker.
const NAMESPACES: [&str; 7] = ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"];

/// Measures the workspace of the app with host pid `pid` (`desktop_uid`: the desktop's own
/// uid when the app must have another, see `sandbox::identity`). `forbidden` are host paths the app
/// must not see (the broker's state directory, home directories); `workspace` is the
/// session's own workspace, which may lie inside one of them (a broker that is not root keeps
/// it in its state directory): the empty directories bubblewrap made on the way to it are not
/// a view of the forbidden path, anything else in it is. `writable` are the paths inside where
/// a writable host-backed mount is allowed (see [`super::workspace`]).
pub fn measure(
    pid: u32,
    mode: SandboxMode,
    forbidden: &[PathBuf],
    workspace: &Path,
    writable: &[PathBuf],
    desktop_uid: Option<u32>,
) -> WorkspaceFacts {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let status = std::fs::read_to_string(proc_dir.join("status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|rest| rest.trim_start_matches(':').trim().to_string())
            .unwrap_or_default()
    };
    let app_uid = field("Uid")
        .split_whitespace()
        .nth(1)
        .and_then(|uid| uid.parse().ok())
        .unwrap_or(0);
    let no_new_privs = field("NoNewPrivs") == "1";
    let cap_eff = field("CapEff");
    // With split identities (`desktop_uid`, a root broker) the sandbox has no user namespace
    // by design: the app is kept apart by its own host uid, checked below.
    let shared_namespaces = NAMESPACES
        .iter()
        .filter(|ns| desktop_uid.is_none() || **ns != "user")
        .filter(|ns| {
            let ours = std::fs::read_link(format!("/proc/self/ns/{ns}"));
            let theirs = std::fs::read_link(proc_dir.join("ns").join(ns));
            match (ours, theirs) {
                (Ok(ours), Ok(theirs)) => ours == theirs,
                // Unreadable: not proven separate.
                _ => true,
            }
        })
        .map(|ns| ns.to_string())
        .collect();
    let interfaces = std::fs::read_to_string(proc_dir.join("net/dev"))
        .unwrap_or_default()
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next().map(|name| name.trim().to_string()))
        .collect();
    let root = proc_dir.join("root");
    let visible_forbidden = forbidden
        .iter()
        .filter(|path| shows_anything(&root, path, workspace))
        .map(|path| path.display().to_string())
        .collect();
    let mountinfo = std::fs::read_to_string(proc_dir.join("mountinfo")).unwrap_or_default();
    let root_read_only = root_mount_read_only(&mountinfo);
    let writable_mounts = writable_host_mounts(&mountinfo);
    let unexpected_writable = writable_mounts
        .iter()
        .filter(|mount| !writable.iter().any(|allowed| Path::new(mount) == allowed))
        .cloned()
        .collect();
    let broker_uid = nix::unistd::geteuid().as_raw();
    let visible_executables = super::inside::count_executables(&root, &super::inside::BIN_DIRS);
    let mut facts = WorkspaceFacts {
        sandbox: mode,
        // The launcher sets what it applied.
        limits: LimitsMode::Enforced,
        app_uid,
        broker_uid,
        no_new_privs,
        cap_eff,
        shared_namespaces,
        interfaces,
        visible_forbidden,
        root_read_only,
        writable_mounts,
        unexpected_writable,
        visible_executables,
        failures: Vec::new(),
    };
    if mode == SandboxMode::On {
        facts.failures = failures(&facts);
        if desktop_uid.is_some_and(|desktop| desktop == facts.app_uid) {
            facts.failures.push("app_uid_is_desktop_uid".to_string());
        }
    }
    facts
}

/// Whether the host path `path` shows anything inside the root `root` (a `/proc/<pid>/root`)
/// beyond the bare way to `workspace`: every entry must lead to the workspace, down to it.
fn shows_anything(root: &Path, path: &Path, workspace: &Path) -> bool {
    let Ok(relative) = path.strip_prefix("/") else {
        return true;
    };
    let inside = root.join(relative);
    if std::fs::symlink_metadata(&inside).is_err() {
        return false;
    }
    if path.starts_with(workspace) {
        return false;
    }
    if !workspace.starts_with(path) {
        return true;
    }
    match std::fs::read_dir(&inside) {
        Ok(entries) => entries
            .flatten()
            .any(|entry| shows_anything(root, &path.join(entry.file_name()), workspace)),
        Err(_) => true,
    }
}

/// The rules a sandboxed workspace must satisfy, as the ids of those it fails.
pub fn failures(facts: &WorkspaceFacts) -> Vec<String> {
    let mut failed = Vec::new();
    let mut check = |ok: bool, id: &str| {
        if !ok {
            failed.push(id.to_string());
        }
    };
    check(facts.shared_namespaces.is_empty(), "namespaces_shared");
    check(facts.app_uid != 0, "app_is_root");
    check(
        facts.broker_uid != 0 || facts.app_uid != facts.broker_uid,
        "app_uid_is_broker_uid",
    );
    check(facts.no_new_privs, "new_privileges_allowed");
    check(
        !facts.cap_eff.is_empty() && facts.cap_eff.chars().all(|digit| digit == '0'),
        "capabilities_held",
    );
    check(facts.interfaces == ["lo"], "network_beyond_loopback");
    check(facts.visible_forbidden.is_empty(), "forbidden_path_visible");
    check(facts.root_read_only, "root_writable");
    check(
        facts.unexpected_writable.is_empty(),
        "writable_beyond_policy",
    );
    failed
}

/// Filesystems whose writable mounts keep nothing on the host (memory, kernel views).
const NOT_HOST_STORAGE: [&str; 9] = [
    "tmpfs", "proc", "sysfs", "devpts", "mqueue", "ramfs", "cgroup", "cgroup2", "devtmpfs",
];

/// The mount points in `mountinfo` (a `/proc/<pid>/mountinfo`) mounted read-write on a
/// filesystem that keeps what is written on the host, device nodes (`/dev/null`, ...) aside.
fn writable_host_mounts(mountinfo: &str) -> Vec<String> {
    let mut mounts: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| {
            // Fields: id parent dev root MOUNT_POINT OPTIONS [optional...] - FSTYPE source super.
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let point = unescape_mount_path(fields.get(4)?);
            let writable = fields.get(5)?.split(',').any(|option| option == "rw");
            let fstype = after.split(' ').next()?;
            let device = point.starts_with("/dev/") || point == "/dev";
            (writable && !device && !NOT_HOST_STORAGE.contains(&fstype)).then_some(point)
        })
        .collect();
    mounts.sort();
    mounts.dedup();
    mounts
}

/// A mount point as `mountinfo` escapes it (space, tab, newline and backslash as `\ooo`).
fn unescape_mount_path(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).and_then(|digits| {
            let digits = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(digits, 8).ok()
        });
        match (bytes[index], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                index += 4;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `/` in `mountinfo` is mounted read-only.
fn root_mount_read_only(mountinfo: &str) -> bool {
    // The last mount on "/" is the visible one; field 5 is the mount point, 6 its options.
    mountinfo
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            (fields.get(4) == Some(&"/")).then(|| fields.get(5).copied().unwrap_or(""))
        })
        .next_back()
        .is_some_and(|options| options.split(',').any(|option| option == "ro"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_unsandboxed_process_fails_the_rules_it_should() {
        let me = std::process::id();
        let facts = measure(
            me,
            SandboxMode::On,
            &[PathBuf::from("/proc")],
            Path::new("/nonexistent"),
            &[],
            None,
        );
        assert_eq!(facts.shared_namespaces.len(), NAMESPACES.len());
        // Split identities: the user namespace is the host's by design, and the app must not
        // run as the desktop's uid.
        let mine = nix::unistd::geteuid().as_raw();
        let split = measure(
            me,
            SandboxMode::On,
            &[],
            Path::new("/nonexistent"),
            &[],
            Some(mine),
        );
        assert_eq!(split.shared_namespaces.len(), NAMESPACES.len() - 1);
        assert!(!split.shared_namespaces.contains(&"user".to_string()));
        assert!(
            split
                .failures
                .contains(&"app_uid_is_desktop_uid".to_string())
        );
        let other = measure(
            me,
            SandboxMode::On,
            &[],
            Path::new("/nonexistent"),
            &[],
            Some(mine + 1),
        );
        assert!(
            !other
                .failures
                .contains(&"app_uid_is_desktop_uid".to_string())
        );
        assert!(facts.failures.contains(&"namespaces_shared".to_string()));
        assert!(
            facts
                .failures
                .contains(&"forbidden_path_visible".to_string())
        );
        let off = measure(
            me,
            SandboxMode::Off,
            &[],
            Path::new("/nonexistent"),
            &[],
            None,
        );
        assert!(
            off.failures.is_empty(),
            "no rules apply with the sandbox off"
        );
    }

    #[test]
    fn only_the_bare_way_to_the_workspace_may_exist_inside_a_forbidden_path() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let state = Path::new("/srv/state");
        let workspace = state.join("sessions/s1/workspace");
        let inside = |path: &Path| root.join(path.strip_prefix("/").unwrap());
        assert!(!shows_anything(root, state, &workspace), "absent");
        std::fs::create_dir_all(inside(&workspace).join("home")).unwrap();
        assert!(!shows_anything(root, state, &workspace), "only the way");
        std::fs::create_dir_all(inside(&state.join("sessions/s2"))).unwrap();
        assert!(shows_anything(root, state, &workspace), "another session");
        std::fs::remove_dir(inside(&state.join("sessions/s2"))).unwrap();
        std::fs::write(inside(&state.join("broker.sqlite3")), b"").unwrap();
        assert!(shows_anything(root, state, &workspace), "the journal");
    }

    #[test]
    fn a_contained_workspace_passes() {
        let facts = WorkspaceFacts {
            sandbox: SandboxMode::On,
            limits: LimitsMode::Enforced,
            app_uid: 61234,
            broker_uid: 0,
            no_new_privs: true,
            cap_eff: "0000000000000000".to_string(),
            shared_namespaces: Vec::new(),
            interfaces: vec!["lo".to_string()],
            visible_forbidden: Vec::new(),
            root_read_only: true,
            writable_mounts: vec!["/ws/attempt".to_string(), "/run/desk".to_string()],
            unexpected_writable: Vec::new(),
            visible_executables: 4,
            failures: Vec::new(),
        };
        assert!(failures(&facts).is_empty());
        let root_app = WorkspaceFacts {
            app_uid: 0,
            ..facts.clone()
        };
        assert!(failures(&root_app).contains(&"app_is_root".to_string()));
        let networked = WorkspaceFacts {
            interfaces: vec!["lo".to_string(), "eth0".to_string()],
            ..facts.clone()
        };
        assert_eq!(failures(&networked), vec!["network_beyond_loopback"]);
        let home_on_disk = WorkspaceFacts {
            unexpected_writable: vec!["/ws/home".to_string()],
            ..facts
        };
        assert_eq!(failures(&home_on_disk), vec!["writable_beyond_policy"]);
    }

    #[test]
    fn writable_host_mounts_are_read_from_mountinfo() {
        let mountinfo = "\
1 0 0:30 / / ro,nosuid - tmpfs tmpfs rw
2 1 8:1 /usr /usr ro,nosuid,nodev - ext4 /dev/sda1 rw
3 1 8:1 /ws /ws ro,nosuid - ext4 /dev/sda1 rw
4 3 8:1 /ws/attempt /ws/attempt rw,nosuid - ext4 /dev/sda1 rw
5 3 0:40 / /ws/home rw,nosuid - tmpfs tmpfs rw,size=1048576k
6 1 0:5 /null /dev/null rw,nosuid - devtmpfs udev rw
7 1 0:31 / /proc rw,nosuid - proc proc rw
8 1 0:50 /x /tmp/with\\040space rw shared:4 - overlay overlay rw
9 1 8:1 /ws/run /run/desk rw,nosuid - ext4 /dev/sda1 rw
";
        assert_eq!(
            writable_host_mounts(mountinfo),
            ["/run/desk", "/tmp/with space", "/ws/attempt"]
        );
        assert!(root_mount_read_only(mountinfo));
    }
}
