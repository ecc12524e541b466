//! Unit tests of save detection: a same-size rewrite, an untouched file, a save by rename
//! (never following a link for the stamp), and a DWG's change-then-signature rule.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::time::Duration;

use super::*;

fn saved(path: &Path) -> SavedFile {
    SavedFile::read(path, &Reader::in_process()).unwrap()
}

/// Rewrites `path` in place with bytes of the same length: only its times change, which a
/// save poll that skipped reads on an unchanged stamp must still see.
fn rewrite_in_place(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
}

#[test]
fn a_same_size_rewrite_during_the_poll_is_the_save() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::write(&path, b"reset-bytes").unwrap();
    let before = saved(&path);
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            // Several unchanged polls first, so the stamp has been cached.
            std::thread::sleep(Duration::from_millis(260));
            rewrite_in_place(&path, b"saved-bytes");
        })
    };
    let found = wait_for_save(&path, &Reader::in_process(), &before, &before.sha256, 5_000);
    writer.join().unwrap();
    let found = found.unwrap();
    assert_eq!(found.bytes, b"saved-bytes");
}

#[test]
fn an_untouched_file_is_not_a_save() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::write(&path, b"reset-bytes").unwrap();
    let before = saved(&path);
    match wait_for_save(&path, &Reader::in_process(), &before, &before.sha256, 300) {
        Err(BrokerError::CheckpointFailed(message)) => {
            assert!(message.contains("300 ms"), "{message}")
        }
        Err(other) => panic!("expected checkpoint_failed, got {other:?}"),
        Ok(file) => panic!("an untouched file was taken as saved: {:?}", file.bytes),
    }
}

#[test]
fn a_save_by_rename_is_seen_and_a_link_is_never_followed_for_the_stamp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    std::fs::write(&path, b"reset-bytes").unwrap();
    let first = workspace_file_stamp(&path).unwrap();
    let staged = dir.path().join("attempt.tmp");
    std::fs::write(&staged, b"reset-bytes").unwrap();
    std::fs::rename(&staged, &path).unwrap();
    assert_ne!(
        workspace_file_stamp(&path),
        Some(first),
        "a rename changes the stamp"
    );
    assert_eq!(workspace_file_stamp(&dir.path().join("absent")), None);
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, b"a longer file than the link's own name").unwrap();
    let link = dir.path().join("link.dxf");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let linked = workspace_file_stamp(&link).unwrap();
    assert_ne!(
        Some(linked),
        workspace_file_stamp(&target),
        "the link's own metadata"
    );
}

#[test]
fn a_dwg_checkpoint_needs_a_post_reset_change_and_the_dwg_signature() {
    use desk_desktop::ArtifactFormat;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dwg");
    // The reset drawing is itself a valid DWG: the signature alone proves nothing.
    let reset = crate::artifact::dwg::fixture_dwg(0);
    std::fs::write(&path, &reset).unwrap();
    let before = saved(&path);
    crate::artifact::validate(ArtifactFormat::Dwg, &before.bytes).unwrap();
    match wait_for_save(&path, &Reader::in_process(), &before, &before.sha256, 200) {
        Err(BrokerError::CheckpointFailed(message)) => {
            assert!(message.contains("did not write a changed"), "{message}")
        }
        Err(other) => panic!("expected checkpoint_failed, got {other:?}"),
        Ok(file) => panic!("an unchanged DWG was taken as saved: {:?}", file.sha256),
    }
    // A changed DWG is the save, and passes the validator.
    rewrite_in_place(&path, &crate::artifact::dwg::fixture_dwg(1));
    let found =
        wait_for_save(&path, &Reader::in_process(), &before, &before.sha256, 2_000).unwrap();
    crate::artifact::validate(ArtifactFormat::Dwg, &found.bytes).unwrap();
    // A changed file that is not a DWG is a save the validator refuses.
    let mut not_dwg = crate::artifact::dwg::fixture_dwg(2);
    not_dwg[..6].copy_from_slice(b"PK\x03\x04\0\0");
    rewrite_in_place(&path, &not_dwg);
    let found =
        wait_for_save(&path, &Reader::in_process(), &before, &before.sha256, 2_000).unwrap();
    assert!(matches!(
        crate::artifact::validate(ArtifactFormat::Dwg, &found.bytes),
        Err(BrokerError::ArtifactInvalid(_))
    ));
}
