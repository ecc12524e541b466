//! The session sandbox, measured from outside through /proc: a session under a 200-character
//! state directory runs with its app in other namespaces than the broker's, as an unprivileged
//! uid (not root when the broker is root) with NoNewPrivs and no capabilities, loopback only,
//! without the state directory, /root or /home mounted, with only the attempt directory
//! writable on the host and an in-memory home filled anew at each reset; its X server refuses a
//! client without the session's cookie. A desktop whose worker fails to start says why.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use desk_contract::DisplaySize;
use desk_desktop::launcher::recorded_processes;
use desk_desktop::{LocalDesktop, LocalDesktopConfig, SandboxPolicy};
use serde_json::json;

use crate::probe::{act, leased_probe, of_type, wait_for_events};
use crate::support::{Broker, xvfb_available};

/// The program a recorded wrapper (`setpriv`/`nsenter`) runs inside the sandbox.
fn inner_child(wrapper: u32) -> u32 {
    let children = std::fs::read_to_string(format!("/proc/{wrapper}/task/{wrapper}/children"))
        .expect("the wrapper is alive");
    children
        .split_whitespace()
        .next()
        .expect("the wrapper runs its program")
        .parse()
        .unwrap()
}

fn status_field(pid: u32, name: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in status"))
        .trim()
        .to_string()
}

/// The first byte of the X server's answer to a connection setup with `auth` (0 = failed,
/// 1 = success).
fn x_setup_answer(socket: &Path, auth: Option<&[u8]>) -> u8 {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    let name: &[u8] = if auth.is_some() {
        b"MIT-MAGIC-COOKIE-1"
    } else {
        b""
    };
    let data = auth.unwrap_or(b"");
    let mut setup = vec![b'l', 0, 11, 0, 0, 0];
    setup.extend_from_slice(&(name.len() as u16).to_le_bytes());
    setup.extend_from_slice(&(data.len() as u16).to_le_bytes());
    setup.extend_from_slice(&[0, 0]);
    let pad = |bytes: &mut Vec<u8>| bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    setup.extend_from_slice(name);
    pad(&mut setup);
    setup.extend_from_slice(data);
    pad(&mut setup);
    stream.write_all(&setup).unwrap();
    let mut first = [0u8; 1];
    stream.read_exact(&mut first).unwrap();
    first[0]
}

/// Writes `path` (a path through the app's `/proc/PID/root`) as the app's uid `uid`, as the app
/// would.
fn write_as_app(path: &Path, uid: u32) {
    if !nix::unistd::geteuid().is_root() {
        std::fs::write(path, b"x").unwrap();
        return;
    }
    let uid = uid.to_string();
    let status = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            &uid,
            "--regid",
            &uid,
            "--clear-groups",
            "/bin/sh",
            "-c",
        ])
        .arg("printf x > \"$1\"")
        .arg("sh")
        .arg(path)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the sandbox uid could not write {}",
        path.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_under_a_200_character_state_dir_runs_contained() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The sandbox uid must reach the probe's recording below the test's directory.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let base = tmp.path().display().to_string().len() + "/".len();
    let state_dir: PathBuf = tmp.path().join("d".repeat(200 - base));
    assert_eq!(state_dir.as_os_str().len(), 200);
    let log = tmp.path().join("probe.ndjson");
    let broker = Broker::start_in(tmp.path(), &state_dir, None, &log, &[]);
    let session = leased_probe(&broker, "deep").await;
    let client = broker.client();
    let click =
        json!({"type": "click", "x": 321, "y": 234, "intent": "a click in a deep state dir"});
    let clicked = act(&client, &session, "a0", 0, click).await.unwrap();
    assert_eq!(
        clicked.receipt.sandbox,
        desk_contract::desktop::SandboxMode::On
    );
    let events = wait_for_events(&log, 3);
    assert!(
        of_type(&events, "button_press")
            .iter()
            .any(|event| event["root_x"] == 321 && event["root_y"] == 234),
        "the probe got the click: {events:?}"
    );

    // The broker measured the same from outside at handoff and reports it.
    let status = client.status(&session).await.unwrap();
    let facts = status
        .workspace
        .expect("status reports the workspace facts");
    assert_eq!(facts.sandbox, desk_contract::desktop::SandboxMode::On);
    assert!(facts.failures.is_empty(), "{facts:?}");
    assert!(facts.shared_namespaces.is_empty(), "{facts:?}");
    assert_eq!(facts.interfaces, vec!["lo".to_string()]);
    assert!(facts.no_new_privs && facts.root_read_only, "{facts:?}");
    assert!(facts.visible_forbidden.is_empty(), "{facts:?}");
    println!("workspace facts at handoff: {facts:?}");

    let session_dir = broker.session_dir(&session);
    let processes = recorded_processes(&session_dir);
    let roles: Vec<&str> = processes.iter().map(|p| p.role.as_str()).collect();
    assert_eq!(roles[0], "sandbox", "{roles:?}");
    let wrapper = processes.iter().find(|p| p.role == "app").unwrap().pid;
    let app = inner_child(wrapper);

    // A root broker's sandbox has no user namespace: the app is kept apart by a host uid of
    // its own (`sandbox/identity.rs`); any other broker's has one, with one identity.
    let root = nix::unistd::geteuid().is_root();
    for ns in ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"] {
        let ours = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        let theirs = std::fs::read_link(format!("/proc/{app}/ns/{ns}")).unwrap();
        if ns == "user" && root {
            assert_eq!(
                ours, theirs,
                "a root broker's sandbox has no user namespace"
            );
        } else {
            assert_ne!(ours, theirs, "the app must not share the {ns} namespace");
        }
    }
    let uid: u32 = status_field(app, "Uid")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    if root {
        let identities = desk_desktop::sandbox::identity::load(&desk_desktop::SessionDir::from(
            session_dir.clone(),
        ))
        .expect("the session's identities are recorded");
        assert_eq!(uid, identities.app.uid);
        assert_ne!(identities.app.uid, identities.desktop.uid);
        assert!(identities.desktop.uid >= desk_desktop::sandbox::DEFAULT_SANDBOX_UID);
        let worker = processes.iter().find(|p| p.role == "worker").unwrap().pid;
        let worker_uid: u32 = status_field(inner_child(worker), "Uid")
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(worker_uid, identities.desktop.uid);
    } else {
        assert_eq!(uid, nix::unistd::getuid().as_raw());
    }
    assert_ne!(uid, 0);
    assert_eq!(status_field(app, "NoNewPrivs"), "1");
    assert_eq!(status_field(app, "CapEff"), "0000000000000000");
    let interfaces: Vec<String> = std::fs::read_to_string(format!("/proc/{app}/net/dev"))
        .unwrap()
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next().map(|name| name.trim().to_string()))
        .collect();
    assert_eq!(interfaces, vec!["lo".to_string()], "loopback only");

    // What the app's root shows (read as the test's user through /proc/PID/root).
    let inside = |path: &Path| {
        PathBuf::from(format!("/proc/{app}/root")).join(path.strip_prefix("/").unwrap())
    };
    // Of /var, only the system font cache (read-only) is there.
    let names = |path: &str| -> Vec<String> {
        std::fs::read_dir(inside(Path::new(path)))
            .map(|dir| {
                dir.flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    if Path::new("/var/cache/fontconfig").is_dir() {
        assert_eq!(names("/var"), ["cache"]);
        assert_eq!(names("/var/cache"), ["fontconfig"]);
    } else {
        assert!(names("/var").is_empty());
    }
    let workspace = std::fs::canonicalize(session_dir.join("workspace")).unwrap();
    assert!(
        inside(&workspace.join("attempt")).is_dir(),
        "the attempt directory is there"
    );
    for hidden in [
        state_dir.join("evidence"),
        session_dir.join("processes.json"),
        PathBuf::from("/root"),
        PathBuf::from("/home"),
        PathBuf::from("/var/lib"),
        PathBuf::from("/var/log"),
        PathBuf::from("/var/tmp"),
    ] {
        assert!(
            !inside(&hidden).exists(),
            "{} must not be visible in the sandbox",
            hidden.display()
        );
    }

    // Writable: the attempt directory (the policy's) on the host; home is memory; the rest of
    // the workspace is read-only.
    let read_only_error = |path: PathBuf| {
        let error = std::fs::write(&path, b"x").expect_err("must be read-only");
        assert_eq!(
            error.raw_os_error(),
            Some(nix::errno::Errno::EROFS as i32),
            "{}: {error}",
            path.display()
        );
    };
    read_only_error(inside(&workspace.join("stray")));
    read_only_error(inside(&workspace.join("host/deadline")));
    read_only_error(
        inside(Path::new(
            desk_desktop::sandbox::workspace::INSIDE_HOME_SEED,
        ))
        .join("stray"),
    );
    write_as_app(&inside(&workspace.join("home/written-by-app")), uid);
    assert!(
        !workspace.join("home/written-by-app").exists(),
        "the app's home never reaches the host"
    );
    assert!(
        inside(&workspace.join("home/.config")).is_dir(),
        "the home was filled from its seed"
    );
    write_as_app(&inside(&workspace.join("attempt/saved")), uid);
    assert!(
        workspace.join("attempt/saved").exists(),
        "the attempt is the host's"
    );
    let attempt = workspace.join("attempt").display().to_string();
    assert!(facts.writable_mounts.contains(&attempt), "{facts:?}");
    assert!(facts.unexpected_writable.is_empty(), "{facts:?}");
    assert!(
        facts
            .writable_mounts
            .iter()
            .all(|mount| !mount.starts_with(&workspace.join("home").display().to_string())),
        "{facts:?}"
    );

    // The display answers only with the session's cookie.
    let display = desk_desktop::launcher::recorded_display(&session_dir).unwrap();
    let socket = inside(Path::new(&format!(
        "/tmp/.X11-unix/X{}",
        display.trim_start_matches(':')
    )));
    assert_eq!(x_setup_answer(&socket, None), 0, "no cookie, no display");
    let xauthority = std::fs::read(workspace.join("run/xauthority")).unwrap();
    let cookie = &xauthority[xauthority.len() - 16..];
    assert_eq!(
        x_setup_answer(&socket, Some(cookie)),
        1,
        "the cookie opens it"
    );
    assert_eq!(
        x_setup_answer(&socket, Some(&[0u8; 16])),
        0,
        "a wrong cookie does not"
    );

    client.release(&session).await.unwrap();
}

/// A desktop whose worker cannot start fails with the worker's own last words.
#[test]
fn a_worker_that_fails_to_start_is_quoted_in_the_error() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for sandbox in [
        SandboxPolicy::default_for_this_process(),
        SandboxPolicy::Off,
    ] {
        let mut config = LocalDesktopConfig::new(
            DisplaySize {
                width: 640,
                height: 480,
            },
            // The worker program (also the sandbox's pid 1) in a mode it refuses.
            vec![
                crate::support::worker_program().display().to_string(),
                "worker-reason-42".to_string(),
            ],
            tmp.path().join(format!("{sandbox:?}")),
        );
        config.window_manager = None;
        config.sandbox = sandbox;
        let error = match LocalDesktop::start(config) {
            Ok(_) => panic!("the desktop must not start"),
            Err(error) => error.to_string(),
        };
        assert!(
            error.contains("refusing \"worker-reason-42\""),
            "{sandbox:?}: {error}"
        );
    }
}

/// A desktop whose broker died stops by itself at its lease expiry plus the grace period: the
/// sandbox's first process enforces the deadline the broker recorded, not the broker.
#[tokio::test(flavor = "multi_thread")]
async fn a_desktop_whose_broker_died_stops_at_lease_expiry_plus_grace() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("probe.ndjson");
    let mut broker = Broker::start_with(
        tmp.path(),
        None,
        &log,
        &["--lease-ttl-secs", "3", "--lease-grace-secs", "2"],
    );
    let session = leased_probe(&broker, "orphan").await;
    let processes = recorded_processes(broker.session_dir(&session));
    assert!(
        processes.iter().any(|p| p.role == "sandbox"),
        "{processes:?}"
    );
    broker.kill();
    let killed = std::time::Instant::now();
    // Nothing stops it before the lease expires.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        processes.iter().all(|p| p.is_alive()),
        "the desktop must run until its lease expires"
    );
    // Expiry (3 s) + grace (2 s) + one check interval (2 s) + slack.
    let deadline = killed + std::time::Duration::from_secs(15);
    while processes.iter().any(|p| p.is_alive()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the orphaned desktop still runs {} s after its broker died",
            killed.elapsed().as_secs()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    println!(
        "orphaned desktop stopped {} ms after its broker died (lease 3 s + grace 2 s)",
        killed.elapsed().as_millis()
    );
}

/// `serve --unsafe-no-sandbox` runs desktops unsandboxed only when asked, and says so.
#[tokio::test(flavor = "multi_thread")]
async fn an_unsandboxed_broker_stamps_sandbox_off() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("probe.ndjson");
    let broker = Broker::start_with(tmp.path(), None, &log, &["--unsafe-no-sandbox"]);
    let session = leased_probe(&broker, "unsafe").await;
    let facts = broker
        .client()
        .status(&session)
        .await
        .unwrap()
        .workspace
        .expect("status reports the workspace facts");
    assert_eq!(facts.sandbox, desk_contract::desktop::SandboxMode::Off);
    assert!(facts.failures.is_empty(), "no rules apply: {facts:?}");
    assert!(
        facts.shared_namespaces.contains(&"net".to_string()),
        "unsandboxed, the app shares the broker's network: {facts:?}"
    );
    let processes = recorded_processes(broker.session_dir(&session));
    assert!(
        processes.iter().all(|p| p.role != "sandbox"),
        "{processes:?}"
    );
    let client = broker.client();
    let moved = act(
        &client,
        &session,
        "m1",
        0,
        json!({"type": "move", "x": 5, "y": 5, "intent": "a move"}),
    )
    .await
    .unwrap();
    assert_eq!(
        moved.receipt.sandbox,
        desk_contract::desktop::SandboxMode::Off
    );
    client.release(&session).await.unwrap();
    // Every signed evidence record of the session says so.
    let journal = broker
        .state_dir
        .join("evidence")
        .join(&session)
        .join("evidence.ndjson");
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 4, "lease, action, receipt, release: {text}");
    for line in lines {
        assert!(line.contains(r#""sandbox":"off""#), "{line}");
    }
    // The stamp is signed: the exported bundle verifies, and without the stamp it does not.
    let bundle = tmp.path().join("bundle");
    crate::evidence::export(&broker.state_dir, &session, &bundle);
    let key = broker.state_dir.join("evidence").join("evidence.pub");
    let (ok, output) = crate::evidence::verify(&bundle, &key);
    assert!(ok, "{output}");
    let exported = bundle.join("evidence.ndjson");
    let signed = std::fs::read_to_string(&exported).unwrap();
    let first_off = signed.find(r#""sandbox":"off","#).unwrap();
    let mut unstamped = signed.clone();
    unstamped.replace_range(first_off..first_off + r#""sandbox":"off","#.len(), "");
    std::fs::write(&exported, unstamped).unwrap();
    let (ok, output) = crate::evidence::verify(&bundle, &key);
    assert!(!ok, "a record without its stamp must not verify: {output}");
}
