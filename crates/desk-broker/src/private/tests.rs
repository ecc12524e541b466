//! Unit tests of the private-directory rules (run as root in CI, so ownership is testable).

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn missing_directories_are_created_0700_at_every_level() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("a/b/state");
    ensure_private_dir(&dir, DirUse::State).expect("creates");
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&root.path().join("a")), 0o700);
    ensure_private_dir(&dir, DirUse::State).expect("an existing private directory is fine");
}

#[test]
fn a_state_directory_open_to_group_or_others_is_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    set_mode(root.path(), 0o755);
    ensure_private_dir(root.path(), DirUse::State).expect("an empty one is made private");
    assert_eq!(mode(root.path()), 0o700);
    std::fs::write(root.path().join("broker.sqlite3"), b"").expect("state from an earlier run");
    for open_mode in [0o750, 0o705, 0o755, 0o777] {
        set_mode(root.path(), open_mode);
        let error = ensure_private_dir(root.path(), DirUse::State).expect_err("open state dir");
        let message = format!(
            "{error}: {}",
            std::error::Error::source(&error).expect("cause")
        );
        assert!(message.contains("chmod 700"), "{message}");
        assert_eq!(mode(root.path()), open_mode, "nothing is changed");
    }
    set_mode(root.path(), 0o700);
    ensure_private_dir(root.path(), DirUse::State).expect("0700 is private");
}

#[test]
fn a_socket_directory_others_can_write_or_another_uid_owns_is_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    set_mode(root.path(), 0o755);
    ensure_private_dir(root.path(), DirUse::Socket).expect("others may read, not write");
    for writable in [0o775, 0o757, 0o1777] {
        set_mode(root.path(), writable);
        assert!(
            ensure_private_dir(root.path(), DirUse::Socket).is_err(),
            "{writable:o}"
        );
    }
    set_mode(root.path(), 0o700);
    let link = root.path().join("link");
    std::os::unix::fs::symlink(root.path(), &link).expect("symlink");
    assert!(
        ensure_private_dir(&link, DirUse::Socket).is_err(),
        "a symlink"
    );
    if nix::unistd::geteuid().is_root() {
        let foreign = root.path().join("foreign");
        std::fs::create_dir(&foreign).expect("mkdir");
        set_mode(&foreign, 0o700);
        std::os::unix::fs::chown(&foreign, Some(54_321), None).expect("chown");
        let error = ensure_private_dir(&foreign, DirUse::Socket).expect_err("another uid's");
        let cause = std::error::Error::source(&error)
            .expect("cause")
            .to_string();
        assert!(cause.contains("uid 54321"), "{cause}");
    }
}

#[test]
fn directories_below_a_removed_state_directory_are_not_recreated() {
    let root = tempfile::tempdir().expect("tempdir");
    let state = root.path().join("state");
    let deep = state.join("evidence").join("s_1");
    let error = create_dir_below(&state, &deep).expect_err("state directory missing");
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    assert!(!state.exists(), "the state directory was recreated");
    assert!(create_dir_below(&state, root.path()).is_err(), "not below");
    std::fs::create_dir(&state).expect("mkdir");
    create_dir_below(&state, &deep).expect("created below an existing state directory");
    assert_eq!(mode(&deep), 0o700);
    assert_eq!(mode(&state.join("evidence")), 0o700);
}
