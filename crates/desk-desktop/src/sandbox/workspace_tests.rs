//! Unit tests of the workspace: writable directories only at or below the attempt, and
//! emptying that keeps the bound directories.

use super::*;

#[test]
fn writable_directories_must_be_the_attempt_or_below_it() {
    let ok = WritableDirs::from_policy(&[
        "attempt/exports".to_string(),
        "attempt".to_string(),
        "attempt".to_string(),
    ])
    .unwrap();
    assert_eq!(
        ok.relative(),
        [PathBuf::from("attempt"), PathBuf::from("attempt/exports")]
    );
    for bad in [
        "home",
        "attempt/../home",
        "/attempt",
        "./attempt",
        "attempts",
        "",
    ] {
        assert!(
            WritableDirs::from_policy(&[bad.to_string()]).is_err(),
            "{bad:?} must be refused"
        );
    }
    assert!(WritableDirs::from_policy(&[]).is_err());
}

#[test]
fn emptying_keeps_the_bound_directories_and_removes_everything_else() {
    let tmp = tempfile::tempdir().unwrap();
    let attempt = tmp.path().join("attempt");
    let exports = attempt.join("exports");
    std::fs::create_dir_all(exports.join("deep")).unwrap();
    std::fs::create_dir_all(attempt.join("stray/dir")).unwrap();
    std::fs::write(attempt.join("drawing.dxf"), b"x").unwrap();
    std::fs::write(exports.join("deep/file"), b"x").unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside)
        .and_then(|()| std::fs::write(outside.join("kept"), b"x"))
        .unwrap();
    symlink(&outside, attempt.join("link")).unwrap();
    let inode = |path: &Path| std::os::unix::fs::MetadataExt::ino(&path.metadata().unwrap());
    let (attempt_inode, exports_inode) = (inode(&attempt), inode(&exports));

    empty_dir(&attempt, &[attempt.clone(), exports.clone()]).unwrap();
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&attempt), ["exports"]);
    assert!(names(&exports).is_empty());
    assert_eq!(
        (inode(&attempt), inode(&exports)),
        (attempt_inode, exports_inode)
    );
    assert!(outside.join("kept").exists(), "a link is not followed");

    // A link where a kept directory belongs is replaced by a directory.
    std::fs::remove_dir(&exports).unwrap();
    symlink(&outside, &exports).unwrap();
    empty_dir(&attempt, std::slice::from_ref(&exports)).unwrap();
    assert!(std::fs::symlink_metadata(&exports).unwrap().is_dir());
    assert!(outside.join("kept").exists());
}
