//! Unit tests of reading the attempt file: plain files read, links, hard links, FIFOs,
//! directories, sockets and oversized files refused, and the answer's header.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

fn refused_reason(path: &Path, max: u64) -> String {
    match read_workspace_file(path, max, &Reader::in_process()) {
        Err(BrokerError::ArtifactInvalid(message)) => message,
        Err(other) => panic!(
            "{}: expected artifact_invalid, got {other:?}",
            path.display()
        ),
        Ok(file) => panic!("{}: read {} bytes", path.display(), file.bytes.len()),
    }
}

#[test]
fn a_plain_file_is_read_with_its_modification_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::write(&path, b"0\nEOF\n").unwrap();
    let file = read_workspace_file(&path, 1024, &Reader::in_process()).unwrap();
    assert_eq!(file.bytes, b"0\nEOF\n");
    let expected = std::fs::metadata(&path)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(file.modified_ms, expected);
}

#[test]
fn links_to_host_files_and_proc_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("gold.dxf");
    std::fs::write(&secret, b"private gold").unwrap();
    let attempt = dir.path().join("attempt");
    std::fs::create_dir(&attempt).unwrap();
    for (name, target) in [
        ("absolute.dxf", secret.clone()),
        ("relative.dxf", Path::new("../gold.dxf").to_path_buf()),
        ("environ.dxf", Path::new("/proc/self/environ").to_path_buf()),
        ("fd.dxf", Path::new("/proc/self/fd/0").to_path_buf()),
    ] {
        let path = attempt.join(name);
        symlink(&target, &path).unwrap();
        let reason = refused_reason(&path, 1024);
        assert!(reason.contains("symbolic link"), "{name}: {reason}");
    }
    // A linked attempt directory is refused too.
    let linked_dir = dir.path().join("linked");
    symlink(dir.path(), &linked_dir).unwrap();
    let reason = refused_reason(&linked_dir.join("gold.dxf"), 1024);
    assert!(reason.contains("symbolic link"), "{reason}");
}

#[test]
fn a_hard_link_is_refused() {
    // A sandbox uid can only link files it owns (protected_hardlinks); a second name still
    // means the bytes are not the app's plain save.
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("elsewhere");
    std::fs::write(&original, b"bytes").unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::hard_link(&original, &path).unwrap();
    let reason = refused_reason(&path, 1024);
    assert!(reason.contains("2 hard links"), "{reason}");
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    nix::unistd::mkfifo(&path, Mode::from_bits_truncate(0o600)).unwrap();
    let started = Instant::now();
    let reason = refused_reason(&path, 1024);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(reason.contains("FIFO"), "{reason}");
}

#[test]
fn a_directory_and_a_socket_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::create_dir(&path).unwrap();
    assert!(refused_reason(&path, 1024).contains("directory"));
    let socket = dir.path().join("attempt.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert!(refused_reason(&socket, 1024).contains("socket"));
}

#[test]
fn a_sparse_file_over_the_bound_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    let file = std::fs::File::create(&path).unwrap();
    // 1 TiB of holes: reading it would take hours.
    file.set_len(1 << 40).unwrap();
    let started = Instant::now();
    let reason = refused_reason(&path, MAX_ATTEMPT_BYTES);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(reason.contains("over the"), "{reason}");
    // At the bound exactly it is read.
    std::fs::write(&path, vec![b'x'; 64]).unwrap();
    assert_eq!(
        read_workspace_file(&path, 64, &Reader::in_process())
            .unwrap()
            .bytes
            .len(),
        64
    );
    assert!(refused_reason(&path, 63).contains("64 bytes"));
}

#[test]
fn a_missing_file_is_an_io_error_not_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let error = read_workspace_file(&dir.path().join("absent.dxf"), 1024, &Reader::in_process())
        .err()
        .unwrap();
    assert!(
        !matches!(error, BrokerError::ArtifactInvalid(_)),
        "{error:?}"
    );
}

#[test]
fn every_answer_survives_the_header() {
    for answer in [
        child::Answer::Opened {
            modified_ms: 1_764_000_000_123,
        },
        child::Answer::Refused(child::Refusal::Open(Errno::EACCES)),
        child::Answer::Refused(child::Refusal::Open(Errno::ELOOP)),
        child::Answer::Refused(child::Refusal::NotRegular(SFlag::S_IFIFO)),
        child::Answer::Refused(child::Refusal::Linked(2)),
        child::Answer::Refused(child::Refusal::TooLarge(1 << 40)),
        child::Answer::Refused(child::Refusal::Stat(Errno::EIO)),
        child::Answer::Refused(child::Refusal::Privileged("it holds a capability")),
    ] {
        assert_eq!(child::Answer::decode(answer.encode()), answer);
    }
    // An unknown status is never taken for an opened file.
    assert!(matches!(
        child::Answer::decode([99, 0, 0, 0]),
        child::Answer::Refused(child::Refusal::Privileged(_))
    ));
}
