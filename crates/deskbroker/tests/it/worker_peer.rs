//! The broker trusts the worker socket's listener, not its path: the socket lives in `run/`,
//! which the desktop can write, so a proxy put at the path (by the app's uid, or any other)
//! must be refused at reattach by `SO_PEERCRED` (uid and the recorded worker's pid).

use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use desk_desktop::{BackendError, LocalDesktop, LocalDesktopConfig, SandboxPolicy};

use crate::support::{bare_desktop_config, xvfb_available};

fn reattach_error(config: &LocalDesktopConfig) -> BackendError {
    match LocalDesktop::reattach(config.clone()) {
        Ok(Some(mut desktop)) => {
            desktop.detach();
            panic!("reattached through a proxy")
        }
        Ok(None) => panic!("no desktop recorded"),
        Err(error) => error,
    }
}

/// A listener at `path` run by `uid` (a Python one-liner: bind, listen, accept forever).
fn proxy_as(uid: u32, gid: u32, path: &Path) -> Child {
    let script = "import socket,sys,time\n\
        s=socket.socket(socket.AF_UNIX);s.bind(sys.argv[1]);s.listen(8)\n\
        while True:\n c,_=s.accept();time.sleep(60)\n";
    let mut command = Command::new("/usr/bin/python3");
    command
        .args(["-c", script])
        .arg(path)
        .stdin(Stdio::null())
        .env_clear();
    if nix::unistd::geteuid().is_root() {
        command.uid(uid).gid(gid);
    }
    let child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::symlink_metadata(path).is_err() {
        assert!(Instant::now() < deadline, "the proxy did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn reattach_refuses_a_proxy_at_the_worker_socket() {
    if !xvfb_available() || !Path::new("/usr/bin/python3").exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("peer");
    let config = bare_desktop_config(&session_dir);
    let SandboxPolicy::On { uid, gid } = config.sandbox else {
        panic!("the sandbox is on by default");
    };
    let mut desktop = LocalDesktop::start(config.clone()).unwrap();
    // Under a root broker the run directory is the desktop uid's alone (the app has a uid of
    // its own and cannot enter it): the proxy runs as the worker's own uid, the strongest case.
    let (uid, gid) = desk_desktop::sandbox::identity::load(&session_dir)
        .map(|ids| (ids.desktop.uid, ids.desktop.gid))
        .unwrap_or((uid, gid));
    desktop.detach();
    drop(desktop);
    // The real worker passes the check.
    let mut desktop = LocalDesktop::reattach(config.clone()).unwrap().unwrap();
    desktop.detach();
    drop(desktop);

    // Resolved: a root broker's workspace is a link to a directory the sandbox uid reaches.
    let run = std::fs::canonicalize(session_dir.workspace().join("run")).unwrap();
    let socket = run.join("worker.sock");
    let kept = run.join("worker.sock.real");
    std::fs::rename(&socket, &kept).unwrap();

    // Another uid at the path.
    let listener = UnixListener::bind(&socket).unwrap();
    let error = reattach_error(&config);
    assert!(
        matches!(&error, BackendError::WorkerPeerRefused(message) if message.contains("uid")),
        "{error}"
    );
    drop(listener);
    std::fs::remove_file(&socket).unwrap();

    // The worker's own uid (the sandbox uid without a root broker, the app's too then), as a
    // process that replaced the socket would.
    let mut proxy = proxy_as(uid, gid, &socket);
    let error = reattach_error(&config);
    assert!(
        matches!(&error, BackendError::WorkerPeerRefused(message)
            if message.contains("not the recorded worker")),
        "{error}"
    );
    let _ = proxy.kill();
    let _ = proxy.wait();

    // Put back, the real worker is accepted again.
    std::fs::remove_file(&socket).unwrap();
    std::fs::rename(&kept, &socket).unwrap();
    let desktop = LocalDesktop::reattach(config).unwrap().unwrap();
    drop(desktop);
    desk_desktop::launcher::reap_recorded(session_dir.path());
}
