//! The watchdog of a root broker runs under a uid of its own (issue 26), through the real
//! binaries and a real probe session: its `/proc/<pid>/status` shows a uid/gid from the
//! reserved range, neither root's nor the session's, no supplementary group, `CAP_KILL`,
//! `CAP_DAC_OVERRIDE` and `CAP_SYS_PTRACE` alone, nothing inheritable or ambient, and
//! `NoNewPrivs`; its directory and key are that uid's (0700, 0600); the session's app uid can
//! neither signal it nor reach its readback socket, and no other uid reads its key (the
//! watchdog's own uid can, so the refusals are the files' modes, not the test's paths); and it
//! still kills the session at its limit with the broker SIGSTOPped. A watchdog started by a uid
//! that is not root keeps that uid and says so (`watchdog_identity: shared`).

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use desk_broker::watchdog::WatchdogIdentity;
use desk_broker::watchdog::key::{WATCHDOG_KEY_FILE, public_key_path, watchdog_dir};
use desk_broker::watchdog::readback::{Readback, query, socket_path};
use desk_desktop::sandbox::Identities;
use desk_desktop::sandbox::identity::watchdog::WATCHDOG_IDS;
use desk_evidence::VerifyingKey;

use crate::kill_frozen_broker::{Resume, watchdog_pid};
use crate::probe::leased_probe;
use crate::support::{Broker, deskbroker, xvfb_available};

/// CAP_DAC_OVERRIDE (1), CAP_KILL (5), CAP_SYS_PTRACE (19).
const KEPT_MASK: u64 = (1 << 1) | (1 << 5) | (1 << 19);

/// The unprivileged uid the key is tried with besides the session's (`nobody`).
const NOBODY: u32 = 65_534;

/// One field of `/proc/<pid>/status`.
fn field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {status}"))
        .trim()
        .to_string()
}

fn hex_field(status: &str, name: &str) -> u64 {
    u64::from_str_radix(&field(status, name), 16).unwrap()
}

/// Runs `program ARGS` as `uid:gid` (no supplementary group: std drops them when root sets
/// a uid); its exit status and stderr.
fn run_as(uid: u32, program: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(program)
        .args(args)
        .uid(uid)
        .gid(uid)
        .current_dir("/")
        .env_clear()
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn readback(state_dir: &Path) -> Readback {
    let key = VerifyingKey::read(&public_key_path(state_dir)).unwrap();
    query(state_dir, "watchdog-uid-readback", &key).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_root_brokers_watchdog_runs_under_its_own_uid_and_still_kills() {
    if !xvfb_available() || !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs Xvfb and root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // Reachable by every uid, so that what stops one is the watchdog's own modes.
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let log = root.path().join("probe.ndjson");
    let broker = Broker::start_with(root.path(), None, &log, &["--max-task-minutes", "0.1"]);
    let state_dir = broker.state_dir.clone();
    let watchdog = watchdog_pid(&state_dir);
    let _resume = Resume(vec![broker.pid(), watchdog]);
    let session = leased_probe(&broker, "watchdog-uid").await;
    let session_dir = broker.session_dir(&session);
    let identities: Identities =
        serde_json::from_slice(&std::fs::read(session_dir.join("identity.json")).unwrap()).unwrap();
    assert!(identities.split(), "{identities:?}");

    let status = std::fs::read_to_string(format!("/proc/{watchdog}/status")).unwrap();
    let uids: Vec<u32> = field(&status, "Uid")
        .split_whitespace()
        .map(|id| id.parse().unwrap())
        .collect();
    let uid = uids[0];
    assert!(
        uids.iter().all(|id| *id == uid),
        "real, effective, saved, fs: {uids:?}"
    );
    let gids: Vec<u32> = field(&status, "Gid")
        .split_whitespace()
        .map(|id| id.parse().unwrap())
        .collect();
    assert!(
        gids.iter().all(|id| *id == uid),
        "gids {gids:?} for uid {uid}"
    );
    assert!(WATCHDOG_IDS.contains(&uid), "uid {uid}");
    let broker_uid = std::fs::metadata(format!("/proc/{}", broker.pid()))
        .unwrap()
        .uid();
    assert_eq!(broker_uid, 0);
    for session_uid in [identities.desktop.uid, identities.app.uid] {
        assert_ne!(uid, session_uid, "the watchdog shares a session's uid");
    }
    assert_eq!(field(&status, "Groups"), "", "no supplementary group");
    assert_eq!(hex_field(&status, "CapEff"), KEPT_MASK, "{status}");
    assert_eq!(hex_field(&status, "CapPrm"), KEPT_MASK, "{status}");
    assert_eq!(hex_field(&status, "CapInh"), 0, "{status}");
    assert_eq!(hex_field(&status, "CapAmb"), 0, "{status}");
    assert_eq!(field(&status, "NoNewPrivs"), "1");

    // Its directory and key are its own, private.
    let dir = watchdog_dir(&state_dir);
    let key = dir.join(WATCHDOG_KEY_FILE);
    for (path, mode) in [(&dir, 0o700), (&key, 0o600)] {
        let metadata = std::fs::metadata(path).unwrap();
        assert_eq!((metadata.uid(), metadata.gid()), (uid, uid), "{path:?}");
        assert_eq!(metadata.mode() & 0o777, mode, "{path:?}");
    }
    let answer = readback(&state_dir);
    assert_eq!(answer.watchdog_identity, WatchdogIdentity::Own);
    assert_eq!(answer.watchdog_uid, uid);
    assert_eq!(answer.watchdog_pid, watchdog);

    // The session's app uid signals its own shell but not the watchdog.
    let app = identities.app.uid;
    let (own, stderr) = run_as(app, "/bin/sh", &["-c", "kill -0 $$"]);
    assert!(own, "the app uid signals itself: {stderr}");
    let (signalled, stderr) = run_as(app, "/bin/sh", &["-c", &format!("kill -0 {watchdog}")]);
    assert!(!signalled, "the app uid signalled the watchdog");
    assert!(stderr.contains("not permitted"), "{stderr}");
    // Nor reaches its readback socket.
    let socket = socket_path(&state_dir);
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    let connect = "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])";
    let (connected, stderr) = run_as(
        app,
        "/usr/bin/python3",
        &["-c", connect, socket.to_str().unwrap()],
    );
    assert!(!connected, "the app uid connected to the readback socket");
    assert!(stderr.contains("PermissionError"), "{stderr}");
    // No uid but the watchdog's reads its key.
    let key_path = key.to_str().unwrap();
    let (read, stderr) = run_as(uid, "/bin/cat", &[key_path]);
    assert!(read, "the watchdog's uid reads its key: {stderr}");
    for other in [app, identities.desktop.uid, NOBODY] {
        let (read, stderr) = run_as(other, "/bin/cat", &[key_path]);
        assert!(!read, "uid {other} read the watchdog's key");
        assert!(stderr.contains("Permission denied"), "{stderr}");
    }

    // It still kills at the limit (6 s after the handoff) with the broker stopped.
    let processes = desk_desktop::launcher::recorded_processes(&session_dir);
    assert!(!processes.is_empty());
    assert!(
        Command::new("kill")
            .args(["-STOP", &broker.pid().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    while session_dir.exists() || processes.iter().any(|process| process.is_alive()) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the session was not killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = started.elapsed();
    let receipt = loop {
        let spooled = crate::watchdog::spooled_receipts(&state_dir)
            .into_iter()
            .find(|spooled| spooled.session_id == session);
        if let Some(spooled) = spooled {
            break spooled.receipt;
        }
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "no receipt; watchdog log: {}",
            std::fs::read_to_string(state_dir.join("watchdog.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(receipt.source, "watchdog");
    assert_eq!(receipt.signer_identity.as_deref(), Some("own"));
    assert_eq!(receipt.limit.as_deref(), Some("max_task_minutes"));
    assert_eq!(receipt.outcome, "contained");
    assert!(receipt.state_destroyed && receipt.storage_destroyed);
    // Its tombstone is in the state directory (which it may write), made by its uid.
    let tombstone = state_dir.join("kills").join(format!("{session}.json"));
    let made = std::fs::metadata(&tombstone).map(|metadata| metadata.uid());
    assert!(
        made.as_ref().is_ok_and(|owner| *owner == uid),
        "{tombstone:?}: {made:?}; watchdog log: {}",
        std::fs::read_to_string(state_dir.join("watchdog.log")).unwrap_or_default()
    );
    eprintln!(
        "killed by the watchdog as uid {uid} with the broker stopped, gone {gone:?} after the stop"
    );
}

#[test]
fn a_watchdog_started_without_root_keeps_its_uid_and_says_shared() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to start the watchdog as another uid");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let home = root.path().join("nobody");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    let state_dir = home.join("state");
    std::fs::create_dir(&state_dir).unwrap();
    std::fs::set_permissions(&state_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&state_dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let mut child = Command::new(deskbroker())
        .args(["watchdog", "--state-dir"])
        .arg(&state_dir)
        .uid(NOBODY)
        .gid(NOBODY)
        .current_dir("/")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::os::unix::net::UnixStream::connect(socket_path(&state_dir)).is_err() {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "no readback socket: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let answer = readback(&state_dir);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answer.watchdog_identity, WatchdogIdentity::Shared);
    assert_eq!(answer.watchdog_uid, NOBODY);
    let key = watchdog_dir(&state_dir).join(WATCHDOG_KEY_FILE);
    assert_eq!(std::fs::metadata(&key).unwrap().uid(), NOBODY);
}
