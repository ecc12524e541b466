//! The watchdog keeps killing when the broker's state directory cannot be written: a real
//! probe session over a 3 s task time limit, the broker SIGSTOPped and its state directory
//! bound read-only over itself, is killed by the watchdog within the bound of its turn (every
//! recorded process gone), and its terminal receipt is in the watchdog's own spool, signed
//! with the watchdog's key (not the evidence key), with its tombstone in the watchdog's
//! directory. Once the state directory is writable again and the broker resumes, the
//! watchdog hands the kill over (tombstone, workspace destroyed, session directory removed)
//! and the broker replays the receipt into the journal, whose exported bundle verifies with
//! the watchdog's key pinned. Needs root (the bind mount); skipped otherwise.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use desk_desktop::launcher::recorded_processes;
use desk_evidence::VerifyingKey;

use crate::kill_frozen_broker::{Resume, watchdog_pid};
use crate::probe::leased_probe;
use crate::support::{Broker, xvfb_available};
use crate::watchdog::{signal, spooled_receipts, wait_replayed};

const LIMIT: Duration = Duration::from_secs(3);
/// From the watchdog's turn to every process gone, on a loaded machine (1 s is the target;
/// the measured time is printed).
const BOUND: Duration = Duration::from_secs(4);

/// The state directory bound read-only over itself; unmounted on drop.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn mount(dir: &Path) -> Option<ReadOnly> {
        let run = |args: &[&str]| {
            std::process::Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .is_ok_and(|status| status.success())
        };
        if !run(&["--bind"]) {
            return None;
        }
        let guard = ReadOnly(dir.to_path_buf());
        let remounted = std::process::Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(dir)
            .status()
            .is_ok_and(|status| status.success());
        remounted.then_some(guard)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watchdog_kills_and_signs_when_the_state_directory_is_read_only() {
    if !xvfb_available() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: a read-only bind mount needs root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let broker = Broker::start_with(root.path(), None, &log, &["--max-task-minutes", "0.05"]);
    let watchdog = watchdog_pid(&broker.state_dir);
    let _resume = Resume(vec![broker.pid(), watchdog]);
    signal(watchdog, "STOP");
    let session = leased_probe(&broker, "read-only").await;
    let dir = broker.session_dir(&session);
    let processes = recorded_processes(&dir);
    assert!(!processes.is_empty());

    signal(broker.pid(), "STOP");
    let read_only = ReadOnly::mount(&broker.state_dir).expect("a read-only bind mount (root)");
    assert!(
        std::fs::write(broker.state_dir.join("probe-write"), b"x").is_err(),
        "the state directory is writable"
    );
    std::thread::sleep(LIMIT + Duration::from_millis(300));
    let turn = Instant::now();
    signal(watchdog, "CONT");
    while processes.iter().any(|process| process.is_alive()) {
        assert!(
            turn.elapsed() < BOUND,
            "processes left {BOUND:?} after the watchdog's turn"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let gone = turn.elapsed();
    let receipt = loop {
        if let Some(spooled) = spooled_receipts(&broker.state_dir)
            .into_iter()
            .find(|spooled| spooled.session_id == session)
        {
            break spooled.receipt;
        }
        assert!(turn.elapsed() < BOUND, "no receipt in the watchdog's spool");
        std::thread::sleep(Duration::from_millis(5));
    };
    eprintln!(
        "read-only state directory: processes gone {} ms after the watchdog's turn, receipt after {} ms",
        gone.as_millis(),
        turn.elapsed().as_millis()
    );
    assert_eq!(receipt.source, "watchdog");
    assert_eq!(receipt.limit.as_deref(), Some("max_task_minutes"));
    assert!(receipt.state_destroyed, "{receipt:?}");
    // Its directory is on the read-only mount: not removed, so the removal is unproven.
    assert_eq!(receipt.outcome, "removal_unproven");
    assert!(!receipt.storage_destroyed);
    // Signed by the watchdog's key into its own spool; tombstone in its own directory.
    let watchdog_dir = desk_broker::watchdog::key::watchdog_dir(&broker.state_dir);
    let watchdog_key = VerifyingKey::read(&desk_broker::watchdog::key::public_key_path(
        &broker.state_dir,
    ))
    .unwrap();
    let spool = desk_broker::watchdog::key::spool_path(&broker.state_dir);
    assert!(
        desk_evidence::spool::read(&spool, &watchdog_key)
            .unwrap()
            .iter()
            .any(|spooled| spooled.receipt == receipt)
    );
    let evidence_key =
        VerifyingKey::read(&broker.state_dir.join("evidence").join("evidence.pub")).unwrap();
    assert!(desk_evidence::spool::read(&spool, &evidence_key).is_err());
    assert!(
        watchdog_dir
            .join("kills")
            .join(format!("{session}.json"))
            .is_file()
    );
    assert!(
        !broker
            .state_dir
            .join("kills")
            .join(format!("{session}.json"))
            .exists()
    );

    // Writable again and the broker back: the kill is handed over and replayed.
    drop(read_only);
    signal(broker.pid(), "CONT");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !broker
        .state_dir
        .join("kills")
        .join(format!("{session}.json"))
        .is_file()
        || dir.exists()
    {
        assert!(
            Instant::now() < deadline,
            "the kill was not handed over to the state directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_replayed(&broker.state_dir, &session, &receipt);
}
