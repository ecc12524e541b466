//! The members of a real pid namespace (made with `bwrap`), found the tracked way, against
//! the full scan: an entered process, one that ends, a mount over the sandbox's `/proc`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

#[test]
fn a_mount_table_with_anything_else_at_proc_is_not_clean() {
    let bwrap = "20 1 0:5 / / ro,nosuid - tmpfs tmpfs rw\n\
                 31 20 0:33 / /proc rw,nosuid,nodev,noexec - proc proc rw\n\
                 32 31 0:33 /irq /proc/irq ro,nosuid,nodev,noexec - proc proc rw\n\
                 33 31 0:33 /sys /proc/sys ro,nosuid,nodev,noexec - proc proc rw\n\
                 34 20 0:5 / /tmp rw - tmpfs tmpfs rw\n";
    assert!(proc_mount_is_clean(bwrap), "bwrap's own covers");
    let bound = format!("{bwrap}42 31 0:33 /7/ns /proc/1/ns rw - proc proc rw\n");
    assert!(
        !proc_mount_is_clean(&bound),
        "another entry bound over pid 1's"
    );
    let other = format!("{bwrap}43 31 0:60 /sys /proc/sys rw - proc proc rw\n");
    assert!(!proc_mount_is_clean(&other), "another procfs inside");
    let stacked = format!("{bwrap}44 31 0:61 / /proc rw - proc proc rw\n");
    assert!(!proc_mount_is_clean(&stacked), "a second procfs over /proc");
    let over = format!("{bwrap}40 31 0:40 / /proc rw - tmpfs none rw\n");
    assert!(!proc_mount_is_clean(&over), "a tmpfs over /proc");
    let inside = format!("{bwrap}41 31 0:41 / /proc/1/ns rw - tmpfs none rw\n");
    assert!(!proc_mount_is_clean(&inside), "a mount inside /proc");
    let replaced = bwrap.replace("- proc proc rw", "- tmpfs none rw");
    assert!(!proc_mount_is_clean(&replaced), "no procfs at /proc");
    assert!(!proc_mount_is_clean("20 1 0:5 / / ro - tmpfs tmpfs rw\n"));
    let hidden = bwrap.replace("proc proc rw", "proc proc rw,hidepid=invisible");
    assert!(!proc_mount_is_clean(&hidden), "hidepid hides processes");
    let subset = bwrap.replace("proc proc rw", "proc proc rw,subset=pid");
    assert!(!proc_mount_is_clean(&subset));
    let shown = bwrap.replace("proc proc rw", "proc proc rw,hidepid=0");
    assert!(proc_mount_is_clean(&shown));
    assert!(!proc_mount_is_clean(""));
}

#[test]
fn nspid_lists_the_pid_in_each_namespace() {
    let status = "Name:\tsleep\nTgid:\t812\nPid:\t812\nNSpid:\t812\t3\nNStgid:\t812\t3\n";
    assert_eq!(parse_nspids(status), Some(vec![812, 3]));
    assert_eq!(parse_nspids("Name:\tx\n"), None);
    assert_eq!(parse_nspids("NSpid:\t81x\n"), None);
}

/// A sandbox as bwrap makes one (new user and pid namespaces, a root of a few binds and a fresh
/// `/proc`) whose pid 1 sleeps, killed on drop.
struct Namespace {
    bwrap: Child,
    holder: u32,
    namespace: PathBuf,
}

impl Namespace {
    fn start() -> Option<Namespace> {
        let mut bwrap = Command::new("bwrap")
            .args([
                "--unshare-user",
                "--unshare-pid",
                "--as-pid-1",
                "--die-with-parent",
            ])
            .args(["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib"])
            .args([
                "--symlink",
                "usr/lib64",
                "/lib64",
                "--symlink",
                "usr/bin",
                "/bin",
            ])
            .args(["--proc", "/proc", "sleep", "120"])
            .stdin(Stdio::null())
            .spawn()
            .ok()?;
        let children = format!("/proc/{0}/task/{0}/children", bwrap.id());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let holder = std::fs::read_to_string(&children)
                .ok()
                .and_then(|text| text.split_whitespace().next()?.parse::<u32>().ok());
            // Pid 1 once it runs `sleep` (its ns/pid then is the new namespace's).
            if let Some(holder) = holder
                && std::fs::read_link(format!("/proc/{holder}/exe"))
                    .is_ok_and(|exe| exe.ends_with("sleep"))
                && let Ok(namespace) = std::fs::read_link(format!("/proc/{holder}/ns/pid"))
            {
                return Some(Namespace {
                    bwrap,
                    holder,
                    namespace,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = bwrap.kill();
        let _ = bwrap.wait();
        None
    }

    /// `nsenter --target <holder> ARGS…`: a process entering the namespace from outside.
    fn enter(&self, args: &[&str]) -> Child {
        Command::new("nsenter")
            .args(["--target", &self.holder.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("nsenter: {error}"))
    }

    fn members(&self) -> (Vec<u32>, Way) {
        let (mut pids, way) = members(self.holder, &self.namespace).expect("members");
        pids.sort_unstable();
        (pids, way)
    }

    fn full(&self) -> Vec<u32> {
        let mut pids = full_scan(&self.namespace).expect("full scan");
        pids.sort_unstable();
        pids
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.bwrap.kill();
        let _ = self.bwrap.wait();
        forget(self.holder);
    }
}

/// The pid nsenter's child runs under (nsenter forks to enter a pid namespace).
fn entered_pid(nsenter: &Child, namespace: &Namespace) -> u32 {
    let children = format!("/proc/{0}/task/{0}/children", nsenter.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Some(pid) = std::fs::read_to_string(&children)
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse::<u32>().ok())
            && std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .is_ok_and(|link| link == namespace.namespace)
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nsenter started no process in the namespace");
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn tracked_members_equal_the_full_scan_and_an_entered_process_is_found() {
    let Some(namespace) = Namespace::start() else {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "bwrap could not make a user and pid namespace"
        );
        eprintln!("skipped: bwrap cannot make a user and pid namespace here");
        return;
    };
    let holder = namespace.holder;
    let (first, way) = namespace.members();
    assert_eq!(first, vec![holder]);
    assert_eq!(way, Way::Full, "the first census is a full scan");
    let (second, way) = namespace.members();
    assert_eq!((second, way), (vec![holder], Way::Tracked));
    // Names resolved by a scan are kept while the tracking lasts.
    let kept = Resolved::from([("sh".to_string(), Some("/usr/bin/sh".to_string()))]);
    keep_resolutions(holder, kept.clone());
    assert_eq!(namespace.members().1, Way::Tracked);
    assert_eq!(resolutions(holder), kept);

    // Entered from outside: its parent (nsenter) is not in the namespace.
    let mut nsenter = namespace.enter(&["--pid", "sleep", "120"]);
    let entered = entered_pid(&nsenter, &namespace);
    let (found, way) = namespace.members();
    assert_eq!(found, namespace.full());
    assert!(found.contains(&entered), "{found:?} lacks {entered}");
    assert_eq!(
        way,
        Way::Full,
        "a pid not recorded falls back to the full scan"
    );
    assert_eq!(
        resolutions(holder),
        Resolved::new(),
        "a full scan starts the tracking again with no names kept"
    );
    let (found, way) = namespace.members();
    assert!(found.contains(&entered));
    assert_eq!(way, Way::Tracked, "recorded by that full scan");

    // Per-call cost of each way on this host.
    let rounds = 50;
    let started = Instant::now();
    for _ in 0..rounds {
        assert_eq!(namespace.members().1, Way::Tracked);
    }
    let tracked = started.elapsed() / rounds;
    let started = Instant::now();
    for _ in 0..rounds {
        namespace.full();
    }
    let full = started.elapsed() / rounds;
    let n_host = std::fs::read_dir("/proc")
        .map(|entries| entries.flatten().count())
        .unwrap_or(0);
    eprintln!(
        "members of a 2-process namespace, {n_host} /proc entries: tracked {tracked:?}, full scan {full:?}"
    );

    // Its nsenter ends: an orphan, adopted outside the namespace (by the nsenter's reaper),
    // still the same member.
    let nsenter_pid = nsenter.id();
    let _ = nsenter.kill();
    let _ = nsenter.wait();
    wait_until("the orphan's adoption", || {
        super::stat(entered).is_some_and(|(_, ppid, _)| ppid != nsenter_pid)
    });
    let (found, way) = namespace.members();
    assert_eq!(found, namespace.full());
    assert_eq!((found, way), (vec![holder, entered], Way::Tracked));
    // It ends (a zombie: this pid 1 reaps nothing): the same as the full scan.
    let killed = Command::new("kill")
        .args(["-KILL", &entered.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    wait_until("the zombie", || {
        super::stat(entered).is_some_and(|(state, _, _)| state == 'Z')
    });
    assert_eq!(namespace.members().0, namespace.full());

    // A mount over the sandbox's /proc (as an app with capabilities in its user namespace
    // could) ends the tracking: what it lists is no longer believed.
    let status = Command::new("nsenter")
        .args(["--target", &holder.to_string(), "--mount"])
        .args(["mount", "-t", "tmpfs", "none", "/proc"])
        .status()
        .expect("nsenter mount");
    assert!(status.success(), "mount over /proc: {status}");
    let mut hidden = namespace.enter(&["--pid", "sleep", "120"]);
    let hidden_pid = entered_pid(&hidden, &namespace);
    for _ in 0..3 {
        let (found, way) = namespace.members();
        assert_eq!(way, Way::Full);
        assert!(found.contains(&hidden_pid), "{found:?} lacks {hidden_pid}");
    }
    // Untracked: no names are kept.
    keep_resolutions(holder, kept);
    assert_eq!(resolutions(holder), Resolved::new());
    let _ = hidden.kill();
    let _ = hidden.wait();
}
