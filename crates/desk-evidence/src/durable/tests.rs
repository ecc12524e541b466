//! Tests of the durable batch: every file's bytes are flushed and readable from a fresh handle,
//! a failing flush fails typed for its own file only, and both halves of `join` really run at
//! the same time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{Durable, SyncKind, join, sync_all, sync_each};
use crate::error::EvidenceError;

fn written(dir: &std::path::Path, name: &str, bytes: &[u8]) -> (File, PathBuf) {
    let path = dir.join(name);
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(bytes).unwrap();
    (file, path)
}

#[test]
fn a_batch_flushes_every_file_and_each_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(File, PathBuf, Vec<u8>)> = (0..5)
        .map(|index| {
            let bytes = format!("record {index}\n")
                .repeat(1000 + index)
                .into_bytes();
            let (file, path) = written(dir.path(), &format!("f{index}"), &bytes);
            (file, path, bytes)
        })
        .collect();
    let directory = File::open(dir.path()).unwrap();
    let mut batch: Vec<Durable<'_>> = files
        .iter()
        .map(|(file, path, _)| Durable::data(file, path))
        .collect();
    batch.push(Durable::directory(&directory, dir.path()));
    let results = sync_each(&batch);
    assert_eq!(results.len(), 6, "one result per file");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for (_, path, bytes) in &files {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
    assert_eq!(batch[5].kind, SyncKind::All);
    sync_all(&batch).unwrap();
    assert!(sync_each(&[]).is_empty());
}

#[test]
fn a_failed_flush_fails_typed_for_its_own_file_and_not_for_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let (good, good_path) = written(dir.path(), "good", b"kept\n");
    // fsync on a character device without a flush operation fails with EINVAL.
    let null_path = PathBuf::from("/dev/null");
    let null = File::open(&null_path).unwrap();
    let (later, later_path) = written(dir.path(), "later", b"also kept\n");
    for kind in [SyncKind::Data, SyncKind::All] {
        let batch = [
            Durable::data(&good, &good_path),
            Durable {
                file: &null,
                path: &null_path,
                kind,
            },
            Durable::data(&later, &later_path),
        ];
        let results = sync_each(&batch);
        assert!(results[0].is_ok(), "{results:?}");
        assert!(results[2].is_ok(), "{results:?}");
        match &results[1] {
            Err(EvidenceError::Io {
                operation, path, ..
            }) => {
                assert_eq!(path, &null_path);
                let expected = if kind == SyncKind::Data {
                    "fdatasync"
                } else {
                    "fsync"
                };
                assert_eq!(*operation, expected);
            }
            other => panic!("expected a typed I/O error for /dev/null, got {other:?}"),
        }
        let first_failure = sync_all(&batch).unwrap_err();
        assert!(
            first_failure.to_string().contains("/dev/null"),
            "{first_failure}"
        );
    }
    // Alone, too (a batch of one runs on the caller's thread).
    assert!(sync_each(&[Durable::data(&null, &null_path)])[0].is_err());
}

#[test]
fn join_runs_both_steps_at_the_same_time() {
    // Each side waits for a message only the other sends while it is still running: run one
    // after the other, the first would time out.
    let (to_second, from_first) = mpsc::channel();
    let (to_first, from_second) = mpsc::channel();
    let (a, b) = join(
        move || {
            to_second.send(1).unwrap();
            from_second.recv_timeout(Duration::from_secs(10))
        },
        move || {
            to_first.send(2).unwrap();
            from_first.recv_timeout(Duration::from_secs(10))
        },
    );
    assert_eq!((a.unwrap(), b.unwrap()), (2, 1));
}
