//! The broker reads workspace files through a child without its privileges (issue 24 item 6;
//! desk-broker's `artifact/read.rs`): `deskbroker __read-workspace-file`, run as the session's
//! app uid with the trusted directory's handle as stdin. Here the child itself (what it can
//! open as nobody, and at root's uid without capabilities), then a real sandboxed session whose attempt file is
//! a root-only file under one name (what a hard link leaves once its first name is removed:
//! openat2 and the link count pass it, the broker's own read would have returned it).

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use nix::fcntl::{OFlag, open};
use nix::sys::stat::Mode;

use crate::probe::ProbeSession;
use crate::support::{deskbroker, xvfb_available};

const NOBODY: u32 = 65534;

/// The child's answer: its header (status and first value) and the bytes after it.
struct Answer {
    status: u64,
    value: u64,
    bytes: Vec<u8>,
}

/// Runs the reading child on `dir`/`name`, as `ids` when given (root only).
fn read_as(dir: &Path, name: &str, ids: Option<(u32, u32)>) -> Answer {
    let handle: OwnedFd = open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    let mut command = Command::new(deskbroker());
    command
        .arg(desk_broker::WORKSPACE_READ_COMMAND)
        .arg(name)
        .arg("1048576")
        .env_clear()
        .stdin(Stdio::from(handle))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some((uid, gid)) = ids {
        command.uid(uid).gid(gid).arg(format!("{uid}:{gid}"));
    }
    let mut child = command.spawn().unwrap();
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(out.len() >= 32, "{out:?}");
    let word = |index: usize| u64::from_le_bytes(out[index * 8..index * 8 + 8].try_into().unwrap());
    Answer {
        status: word(0),
        value: word(1),
        bytes: out[32..].to_vec(),
    }
}

fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn the_reading_child_opens_only_what_the_apps_uid_may() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::write(&path, b"0\nEOF\n").unwrap();
    let ids = Some((NOBODY, NOBODY));
    // Readable by others: read, bytes intact, status 0 with the modification time.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let answer = read_as(dir.path(), "attempt.dxf", ids);
    assert_eq!(
        (answer.status, answer.bytes.as_slice()),
        (0, &b"0\nEOF\n"[..])
    );
    assert!(answer.value > 0);
    // Root's alone (0600), or root's group's alone (0040: no supplementary group is kept), or
    // nobody's at all (0000: no capability overrides it): EACCES, nothing sent.
    for mode in [0o600, 0o040, 0o000] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"0\nEOF\n",
            "root reads {mode:o}"
        );
        let answer = read_as(dir.path(), "attempt.dxf", ids);
        assert_eq!(
            (answer.status, answer.value),
            (1, nix::errno::Errno::EACCES as u64),
            "mode {mode:o}"
        );
        assert!(answer.bytes.is_empty());
    }
    // A link is still refused inside the child (ELOOP), before any permission question.
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("linked.dxf")).unwrap();
    let answer = read_as(dir.path(), "linked.dxf", ids);
    assert_eq!(
        (answer.status, answer.value),
        (1, nix::errno::Errno::ELOOP as u64)
    );
    // Left at root's uid (a session without an app identity: its app runs as the broker), the
    // child still holds no capability: a root file of mode 0000 is refused, one of 0400 read.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let answer = read_as(dir.path(), "attempt.dxf", None);
    assert_eq!(
        (answer.status, answer.value),
        (1, nix::errno::Errno::EACCES as u64)
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert_eq!(read_as(dir.path(), "attempt.dxf", None).bytes, b"0\nEOF\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_root_only_file_at_the_attempt_name_is_refused_in_a_real_session() {
    if !xvfb_available() || !root() {
        return;
    }
    let probe = ProbeSession::start("root-only").await;
    let (root, broker, client, session) =
        (&probe.root, &probe.broker, &probe.client, &probe.session);
    let attempt = broker
        .session_dir(session)
        .join("workspace/attempt/attempt.txt");
    // A root-only file given a second name at the attempt path, its first name then removed:
    // one link, a regular file, beneath the directory.
    let secret = root.path().join("signing.key");
    std::fs::write(&secret, "PRIVATE-KEY-9f2a").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(&attempt).unwrap();
    std::fs::hard_link(&secret, &attempt).unwrap();
    std::fs::remove_file(&secret).unwrap();
    let error = client.checkpoint(session).await.unwrap_err();
    let desk_client::ClientError::Api(body) = error else {
        panic!("{error}");
    };
    assert_eq!(body.code.as_str(), "artifact_invalid", "{}", body.message);
    assert!(body.message.contains("cannot read"), "{}", body.message);
    assert!(!body.message.contains("PRIVATE-KEY"));
    let desk_client::ClientError::Api(body) = client.artifact(session).await.unwrap_err() else {
        panic!("artifact answered");
    };
    assert_eq!(body.code.as_str(), "checkpoint_required");
    // A plain file the app's uid may read is checkpointed through the same child.
    std::fs::remove_file(&attempt).unwrap();
    std::fs::write(&attempt, "saved as a plain file\n").unwrap();
    let started = Instant::now();
    let checkpoint = client.checkpoint(session).await.unwrap();
    println!(
        "checkpoint (already saved, 22 bytes): {:?}",
        started.elapsed()
    );
    let artifact = client.artifact(session).await.unwrap();
    assert_eq!(artifact.sha256, checkpoint.sha256);
    client.release(session).await.unwrap();
}

/// What the child costs per read against the broker's former in-process read.
#[test]
fn the_reading_child_costs_milliseconds() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for size in [100_000usize, 1_000_000] {
        let path = dir.path().join("attempt.dxf");
        std::fs::write(&path, vec![b'x'; size]).unwrap();
        let rounds = 50u32;
        let started = Instant::now();
        for _ in 0..rounds {
            assert_eq!(std::fs::read(&path).unwrap().len(), size);
        }
        let in_process = started.elapsed() / rounds;
        let started = Instant::now();
        for _ in 0..rounds {
            assert_eq!(
                read_as(dir.path(), "attempt.dxf", Some((NOBODY, NOBODY)))
                    .bytes
                    .len(),
                size
            );
        }
        let child = started.elapsed() / rounds;
        println!("{size} bytes: in process {in_process:?}, reading child {child:?} per read");
        // The checkpoint polls every 50 ms, and a read stays well below that (3-5 ms, printed
        // above; the number belongs to a benchmark). Held here only to what a loaded CI
        // machine keeps: a read that takes half a second is broken, not slow.
        assert!(child.as_millis() < 500, "{child:?}");
    }
}
