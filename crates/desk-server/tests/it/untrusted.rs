//! The broker never trusts a workspace file: an attempt file that is a link, a FIFO, a
//! directory or an oversized sparse file is refused at checkpoint (`artifact_invalid`), nothing
//! of its target reaches the answer, the checkpoint copy or `GET /artifact`.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::http::StatusCode;

use crate::support::Harness;

fn attempt(harness: &Harness, id: &str) -> PathBuf {
    harness
        .dir
        .path()
        .join("sessions")
        .join(id)
        .join("workspace/attempt/attempt.txt")
}

/// Checkpoints `id` and expects `artifact_invalid`, then no artifact.
async fn refused(harness: &Harness, id: &str, secret: &str) -> String {
    let started = Instant::now();
    let (status, body) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "checkpoint hung"
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "artifact_invalid", "{body}");
    assert!(!body.to_string().contains(secret), "{body}");
    let (status, artifact) = harness
        .call("GET", &format!("/v1/sessions/{id}/artifact"), None)
        .await;
    assert_ne!(status, StatusCode::OK, "{artifact}");
    assert_eq!(artifact["code"], "checkpoint_required", "{artifact}");
    let copy_dir = harness
        .dir
        .path()
        .join("sessions")
        .join(id)
        .join("checkpoint");
    assert!(
        !copy_dir.join("attempt.txt").exists(),
        "a checkpoint copy was written"
    );
    body["message"].as_str().unwrap_or_default().to_string()
}

fn replace(path: &Path, make: impl FnOnce(&Path)) {
    std::fs::remove_file(path).unwrap();
    make(path);
}

#[tokio::test]
async fn linked_fifo_directory_and_sparse_attempt_files_are_refused() {
    let harness = Harness::new();
    let secret_text = "PRIVATE-GOLD-7f3a";
    let secret = harness.dir.path().join("gold.dxf");
    std::fs::write(&secret, secret_text).unwrap();
    let id = harness.ready().await;
    let path = attempt(&harness, &id);

    replace(&path, |path| symlink(&secret, path).unwrap());
    let message = refused(&harness, &id, secret_text).await;
    assert!(message.contains("symbolic link"), "{message}");

    // The broker's own environment through a magic link.
    replace(&path, |path| symlink("/proc/self/environ", path).unwrap());
    let message = refused(&harness, &id, "PATH=").await;
    assert!(message.contains("symbolic link"), "{message}");

    replace(&path, |path| {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap()
    });
    let message = refused(&harness, &id, secret_text).await;
    assert!(message.contains("FIFO"), "{message}");

    replace(&path, |path| {
        let _ = std::fs::remove_file(path);
        std::fs::create_dir(path).unwrap()
    });
    let message = refused(&harness, &id, secret_text).await;
    assert!(message.contains("directory"), "{message}");
    std::fs::remove_dir(&path).unwrap();

    std::fs::File::create(&path)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let message = refused(&harness, &id, secret_text).await;
    assert!(message.contains("over the"), "{message}");

    // A plain save still checkpoints afterwards.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "saved by the app\n").unwrap();
    let (status, body) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["method"], "already_saved");
}
