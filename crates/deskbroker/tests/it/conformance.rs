//! `LocalDesktop` against the desktop conformance suite (`desk_desktop::conformance`), the
//! same table `FakeDesktop` passes in desk-desktop's tests: a sandboxed Xvfb desktop with the
//! probe window, whose NDJSON log is the witness of what X really delivered. One desktop runs
//! every check in turn (actions, detach and reattach, rejections, shutdown) to stay lean.

use std::path::Path;
use std::time::{Duration, Instant};

use desk_contract::{DisplaySize, SettlePolicy};
use desk_desktop::conformance;
use desk_desktop::launcher::recorded_processes;
use desk_desktop::{AppProfile, DesktopBackend, LocalDesktop, LocalDesktopConfig};

use crate::support::{probe_binary, worker_program, write_probe_profile, xvfb_available};

/// Short settle times: the probe's screen never changes, so every wait is the idle rule's or
/// the quiet time.
const POLICY: SettlePolicy = SettlePolicy {
    quiet_after_change_ms: 60,
    quiet_without_change_ms: 100,
    max_ms: 1_000,
    validate_ms: 0,
    validate_every: 0,
};

/// Counts the probe's recorded events once they stop arriving (X delivery is asynchronous).
fn settled_count(log: &Path) -> Result<usize, String> {
    let count = || {
        std::fs::read_to_string(log)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut last = count();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(150) {
        if Instant::now() > deadline {
            return Err(format!("{} kept growing", log.display()));
        }
        std::thread::sleep(Duration::from_millis(25));
        let now = count();
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
    }
    Ok(last)
}

#[test]
fn a_local_desktop_passes_the_conformance_suite() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let profiles = tmp.path().join("profiles");
    write_probe_profile(
        &profiles,
        "probe",
        &probe_binary(),
        "{attempt}.probe.ndjson",
        &[&probe_binary()],
    );
    let text = std::fs::read_to_string(profiles.join("probe.toml")).unwrap();
    let profile = AppProfile::from_toml("probe", &text).unwrap();
    let display = DisplaySize {
        width: 640,
        height: 400,
    };
    // The broker's layout (the state directory is hidden from the app).
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("conformance");
    let mut config = LocalDesktopConfig::new(
        display,
        vec![worker_program().display().to_string()],
        session_dir.clone(),
    );
    config.read_only = profile.read_only.clone();
    std::fs::create_dir_all(session_dir.path()).unwrap();
    let prepared = profile.prepare(&session_dir, config.sandbox, &[]).unwrap();
    // The app's home is in memory inside the sandbox: the probe writes to the attempt directory.
    let log = prepared.attempt_path.with_extension("txt.probe.ndjson");
    let mut witness = || settled_count(&log);

    let started = Instant::now();
    let mut desktop = LocalDesktop::start(config.clone()).unwrap();
    desktop.start_app(&prepared.launch).unwrap();
    let ready_ms = started.elapsed().as_millis();

    let started = Instant::now();
    conformance::check_actions(&mut desktop, POLICY, &mut witness).unwrap();
    let actions_ms = started.elapsed().as_millis();

    // Detached, the desktop keeps running; a reattached backend drives the same probe.
    let pids = desktop.process_ids();
    desktop.detach();
    drop(desktop);
    let mut desktop = LocalDesktop::reattach(config).unwrap().unwrap();
    assert_eq!(desktop.process_ids(), pids, "the same processes");
    conformance::check_first_case(&mut desktop, POLICY, "after reattaching").unwrap();

    conformance::check_rejections(&mut desktop, POLICY, &mut witness).unwrap();

    let recorded = recorded_processes(&session_dir);
    assert!(!recorded.is_empty());
    conformance::check_shutdown(&mut desktop, POLICY, &mut witness).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while recorded.iter().any(|process| process.is_alive()) {
        assert!(Instant::now() < deadline, "left running: {recorded:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "conformance: desktop ready in {ready_ms} ms; {} action cases in {actions_ms} ms",
        conformance::action_cases(display).len()
    );
}
