//! App and worker do not share an identity (issue 24 item 2, `desk-desktop/src/sandbox/identity.rs`):
//! under a root broker a process running as the app's uid inside a live sandbox (all of its
//! namespaces entered, the app's environment) tries to connect to the worker's socket, read the
//! desktop's X cookie, signal and ptrace the worker, Xvfb and the window manager and read their
//! `/proc` environment and memory; the kernel refuses each. The same process reaches what the
//! app needs (its own X cookie, the display with it, the buses' directory, a signal to itself),
//! so the refusals are the identity's doing, not a broken probe. A desktop started as a broker
//! that is not root keeps one identity (said in its handoff facts), so the test needs root.
//!
//! No broker runs here (a bare `LocalDesktop`): the census would end a session in which a
//! `python3` appears, which is what it is for.

use std::path::Path;
use std::process::Command;

use desk_desktop::LocalDesktop;
use serde_json::Value;

use crate::support::{bare_desktop_config, xvfb_available};

/// Tries everything the app's uid must not do and the few things it must, printing one JSON
/// object: each attempt's name → `"ok"` or the errno's name.
const TRIES: &str = r#"
import ctypes, errno, json, os, signal, socket, sys
run, workspace, targets = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as error:
        out[name] = errno.errorcode.get(error.errno, str(error.errno))
def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    finally:
        s.close()
def read(path):
    with open(path, "rb") as f:
        f.read(1)
attempt("connect worker socket", lambda: connect(run + "/worker.sock"))
attempt("connect worker socket by workspace", lambda: connect(workspace + "/run/worker.sock"))
attempt("read desktop cookie", lambda: read(run + "/xauthority"))
attempt("list run", lambda: os.listdir(run))
attempt("read own cookie", lambda: read(os.environ["XAUTHORITY"]))
attempt("list bus dir", lambda: os.listdir("/run/desk-bus"))
attempt("signal self", lambda: os.kill(os.getpid(), 0))
libc = ctypes.CDLL(None, use_errno=True)
def ptrace(pid):
    if libc.ptrace(16, pid, None, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    libc.ptrace(17, pid, None, None)
for role, pid in targets.items():
    attempt("probe " + role, lambda: os.kill(pid, 0))
    attempt("kill " + role, lambda: os.kill(pid, signal.SIGKILL))
    attempt("stop " + role, lambda: os.kill(pid, signal.SIGSTOP))
    attempt("ptrace " + role, lambda: ptrace(pid))
    attempt("read environ of " + role, lambda: read("/proc/%d/environ" % pid))
    attempt("read mem of " + role, lambda: read("/proc/%d/mem" % pid))
print(json.dumps(out))
"#;

/// The pid inside the sandbox of the program the recorded wrapper `wrapper` runs.
fn inside_pid(wrapper: u32) -> u32 {
    let children = std::fs::read_to_string(format!("/proc/{wrapper}/task/{wrapper}/children"))
        .unwrap_or_default();
    let child: u32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("NSpid:"))
        .and_then(|pids| pids.split_whitespace().last())
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn the_apps_uid_cannot_reach_the_worker_xvfb_or_the_window_manager() {
    if !xvfb_available() || !Path::new("/usr/bin/python3").exists() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: one identity without root (the sandbox's user namespace)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("identity");
    let mut config = bare_desktop_config(&session_dir);
    config.window_manager = Some(vec!["openbox".to_string(), "--sm-disable".to_string()]);
    let desktop = LocalDesktop::start(config).unwrap();
    let identities = desk_desktop::sandbox::identity::load(&session_dir).unwrap();
    assert_ne!(identities.app.uid, identities.desktop.uid);

    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(session_dir.desktop_file()).unwrap())
            .unwrap();
    let sandbox = &record["sandbox"];
    assert_eq!(sandbox["uid"], identities.desktop.uid);
    assert_eq!(sandbox["app"]["uid"], identities.app.uid);
    let holder = sandbox["holder_pid"].as_u64().unwrap().to_string();
    let workspace = sandbox["workspace"].as_str().unwrap().to_string();
    let processes = desk_desktop::launcher::recorded_processes(&session_dir);
    let mut targets = serde_json::Map::new();
    for role in ["worker", "xvfb", "window_manager"] {
        let wrapper = processes.iter().find(|p| p.role == role).unwrap().pid;
        targets.insert(role.to_string(), inside_pid(wrapper).into());
    }
    // The holder is pid 1 inside.
    targets.insert("holder".to_string(), 1.into());
    // The worker runs as the desktop's uid with exactly CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH
    // (to read the app's /proc for the idle-aware settle), nothing inheritable or ambient.
    let wrapper = processes.iter().find(|p| p.role == "worker").unwrap().pid;
    let children = std::fs::read_to_string(format!("/proc/{wrapper}/task/{wrapper}/children"))
        .unwrap_or_default();
    let worker: u32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{worker}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .unwrap()
            .trim()
            .to_string()
    };
    let desktop_uid = identities.desktop.uid.to_string();
    assert!(
        field("Uid:")
            .split_whitespace()
            .all(|uid| uid == desktop_uid),
        "{status}"
    );
    let kept = (1u64 << 19) | (1u64 << 2); // CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH
    for set in ["CapEff:", "CapPrm:"] {
        assert_eq!(
            u64::from_str_radix(&field(set), 16).unwrap(),
            kept,
            "{set} {status}"
        );
    }
    for set in ["CapInh:", "CapAmb:"] {
        assert_eq!(
            u64::from_str_radix(&field(set), 16).unwrap(),
            0,
            "{set} {status}"
        );
    }

    let app = identities.app;
    let output = Command::new("setpriv")
        .args(["--no-new-privs", "nsenter", "--target", &holder])
        .args(["--mount", "--pid", "--net", "--ipc", "--uts", "--cgroup"])
        .args([
            "--setuid",
            &app.uid.to_string(),
            "--setgid",
            &app.gid.to_string(),
        ])
        .args([
            "--",
            "env",
            "-C",
            "/",
            "--",
            "/usr/bin/python3",
            "-c",
            TRIES,
        ])
        .arg(desk_desktop::sandbox::INSIDE_RUN_DIR)
        .arg(&workspace)
        .arg(Value::Object(targets.clone()).to_string())
        .env_clear()
        .env("PATH", desk_desktop::sandbox::SAFE_PATH)
        .env(
            "XAUTHORITY",
            Path::new(&workspace).join("appauth/xauthority"),
        )
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tried: Value = serde_json::from_slice(&output.stdout).unwrap();
    println!("tried as uid {}: {tried}", app.uid);
    // What the app needs.
    for name in ["read own cookie", "list bus dir", "signal self"] {
        assert_eq!(tried[name], "ok", "{name}: {tried}");
    }
    // What it must not do: refused by the kernel's uid checks.
    let mut refused = vec![
        "connect worker socket",
        "connect worker socket by workspace",
        "read desktop cookie",
        "list run",
    ]
    .into_iter()
    .map(str::to_string)
    .collect::<Vec<_>>();
    for role in targets.keys() {
        for what in ["probe", "kill", "stop", "ptrace"] {
            refused.push(format!("{what} {role}"));
        }
        refused.push(format!("read environ of {role}"));
        refused.push(format!("read mem of {role}"));
    }
    for name in &refused {
        let said = tried[name.as_str()].as_str().unwrap_or("missing");
        assert!(
            said == "EACCES" || said == "EPERM",
            "{name} must be refused, got {said}: {tried}"
        );
    }
    // Still alive and untouched: the worker answers.
    let mut desktop = desktop;
    desk_desktop::DesktopBackend::facts(&mut desktop).unwrap();
    desk_desktop::DesktopBackend::shutdown(&mut desktop).unwrap();
}
