//! `deskbroker-worker`, the only program of ours a sandbox sees: it refuses everything but the
//! worker and `hold` (so it cannot run `bench`), it carries none of the corpus, generator,
//! judge, oracle, harness, model or signing code (the full `deskbroker` does: the check can
//! fail), and as `hold` it keeps the lease deadline the way the sandbox's pid 1 must. What a
//! live sandbox shows is checked in `sandbox.rs`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{deskbroker, worker_program};

/// Code of ours the worker must not contain, as it appears in symbols and panic locations.
pub(crate) const FORBIDDEN_CODE: [&str; 12] = [
    "desk_cad",
    "desk-cad/src",
    "desk_harness",
    "desk-harness/src",
    "desk_broker",
    "desk-broker/src",
    "desk_evidence",
    "desk-evidence/src",
    "desk_models",
    "desk-models/src",
    "desk_policy",
    "ed25519",
];

/// The entries of [`FORBIDDEN_CODE`] found in the file at `path`.
pub(crate) fn forbidden_code_in(path: &Path) -> Vec<&'static str> {
    let bytes = std::fs::read(path).unwrap();
    FORBIDDEN_CODE
        .iter()
        .copied()
        .filter(|needle| {
            bytes
                .windows(needle.len())
                .any(|window| window == needle.as_bytes())
        })
        .collect()
}

/// Runs `program args` and returns its status code and stderr.
pub(crate) fn run(program: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(program)
        .args(args)
        .env_remove("DESKBROKER_WORKER_SOCKET")
        .env_remove("DISPLAY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_worker_program_refuses_bench_and_carries_no_gold_making_code() {
    let worker = worker_program();
    for args in [
        &["bench", "corpus", "--gold-out", "/tmp/g"][..],
        &["worker"],
        &["serve"],
        &["--help"],
    ] {
        let (code, stderr) = run(&worker, args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("refusing"), "{args:?}: {stderr}");
    }
    assert!(
        forbidden_code_in(&worker).is_empty(),
        "deskbroker-worker links {:?}",
        forbidden_code_in(&worker)
    );
    // The check can fail: the full binary carries the corpus and the judges.
    let full = forbidden_code_in(&deskbroker());
    assert!(
        full.contains(&"desk_cad") && full.contains(&"desk_harness"),
        "{full:?}"
    );
    let worker_size = std::fs::metadata(&worker).unwrap().len();
    let full_size = std::fs::metadata(deskbroker()).unwrap().len();
    println!("deskbroker-worker {worker_size} bytes, deskbroker {full_size} bytes");
    assert!(worker_size < full_size / 2, "{worker_size} vs {full_size}");
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn hold(file: &Path, missing: &str) -> std::process::Child {
    Command::new(worker_program())
        .args(["hold", "--every", "1", "--missing", missing])
        .arg(file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn exits_within(child: &mut std::process::Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn hold_keeps_the_deadline_and_gives_up_on_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deadline");
    // Passed: exits at its first read.
    std::fs::write(&file, "1\n").unwrap();
    let mut child = hold(&file, "120");
    assert!(exits_within(&mut child, Duration::from_secs(2)));
    assert!(child.wait().unwrap().success());
    // In the future: runs, until the file says otherwise.
    std::fs::write(&file, format!("{}\n", now() + 3600)).unwrap();
    let mut child = hold(&file, "120");
    assert!(!exits_within(&mut child, Duration::from_millis(1500)));
    std::fs::write(&file, "1\n").unwrap();
    assert!(exits_within(&mut child, Duration::from_secs(3)));
    // Missing (or not a number) for `--missing` seconds in a row: exits; not before.
    let gone = dir.path().join("never");
    let started = Instant::now();
    let mut child = hold(&gone, "3");
    assert!(exits_within(&mut child, Duration::from_secs(6)));
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    std::fs::write(&file, "soon\n").unwrap();
    let mut child = hold(&file, "2");
    assert!(exits_within(&mut child, Duration::from_secs(5)));
    // Bad arguments change nothing: refused with status 2.
    for args in [
        &["hold"][..],
        &["hold", "relative/deadline"],
        &["hold", "--every", "0", "/tmp/d"],
        &["hold", "--missing", "x", "/tmp/d"],
        &["hold", "/tmp/a", "/tmp/b"],
    ] {
        let (code, stderr) = run(&worker_program(), args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
    }
}
