//! `LocalDesktop` against the desktop conformance suite (`desk_desktop::conformance`), the
//! same cases `FakeDesktop` passes in desk-desktop's tests: a sandboxed Xvfb desktop. Its first
//! app is the GTK accessible fixture (`tests/fixtures/ax-fixture.py`: the accessibility
//! snapshot and truncation cases), its second the probe window, whose NDJSON log is the
//! witness of what X really delivered (every other case: observations, actions, Stop,
//! clipboard, rejections, detach and reattach, shutdown). One desktop runs every case in turn
//! to stay lean; the suite's report, printed, lists what was skipped and why.

use std::path::Path;
use std::time::{Duration, Instant};

use desk_contract::{DisplaySize, SettlePolicy};
use desk_desktop::conformance::{self, Report};
use desk_desktop::launcher::recorded_processes;
use desk_desktop::{AppProfile, DesktopBackend, LocalDesktop, LocalDesktopConfig};

use crate::ax_fixture::gtk_installed;
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

/// The GTK fixture's profile (recording into the attempt directory), or `None` when python3-gi
/// with GTK 3 is missing (a failure under `DESK_REQUIRE_XVFB=1`, as CI installs it).
fn fixture_profile() -> Option<AppProfile> {
    if !gtk_installed() {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "python3-gi with GTK 3 (gir1.2-gtk-3.0) is required (DESK_REQUIRE_XVFB=1)"
        );
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ax-fixture.py");
    let text = format!(
        "name = \"axfixture\"\ncommand = [\"/usr/bin/python3\", {script:?}, \"--out\", \
         \"{{attempt}}.ax.ndjson\"]\nread_only = [{dir:?}]\n\
         [env]\nLANG = \"C.UTF-8\"\nLC_ALL = \"C.UTF-8\"\n\
         [attempt]\nfilename = \"attempt.txt\"\ntemplate = \"fresh\"\n[window]\n\
         class = \"deskaxfixture\"\nmaximize = true\ntimeout_ms = 20000\n",
        script = script.display().to_string(),
        dir = script.parent().unwrap().display().to_string(),
    );
    Some(AppProfile::from_toml("axfixture", &text).unwrap())
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
    let probe = AppProfile::from_toml("probe", &text).unwrap();
    let fixture = fixture_profile();
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
    config.read_only = probe.read_only.clone();
    if let Some(fixture) = &fixture {
        config.read_only.extend(fixture.read_only.iter().cloned());
    }
    std::fs::create_dir_all(session_dir.path()).unwrap();
    let mut report = Report::new();

    let started = Instant::now();
    let mut desktop: Box<dyn DesktopBackend> =
        Box::new(LocalDesktop::start(config.clone()).unwrap());
    // The accessible app first: its tree's shape and truncation.
    let first = fixture.as_ref().unwrap_or(&probe);
    let prepared = first.prepare(&session_dir, config.sandbox, &[]).unwrap();
    conformance::check_handoff(
        desktop.as_mut(),
        &prepared.launch,
        conformance::HANDOFF,
        &mut report,
    )
    .unwrap();
    let ready_ms = started.elapsed().as_millis();
    if fixture.is_some() {
        conformance::check_accessibility(desktop.as_mut(), &mut report).unwrap();
    } else {
        for case in ["accessibility snapshot", "accessibility truncation"] {
            report.skip(case, "python3-gi with GTK 3 is missing: no accessible app");
        }
    }

    // The probe next, after a reset as the broker's (the attempt directory emptied).
    let prepared = probe.prepare(&session_dir, config.sandbox, &[]).unwrap();
    conformance::check_stop_app(desktop.as_mut(), &prepared.launch, &mut report).unwrap();
    // The app's home is in memory inside the sandbox: the probe writes to the attempt directory.
    let log = prepared.attempt_path.with_extension("txt.probe.ndjson");
    let mut witness = || settled_count(&log);
    conformance::check_observations(desktop.as_mut(), &mut witness, &mut report).unwrap();
    conformance::check_accessibility_refused(desktop.as_mut(), &mut report).unwrap();

    let started = Instant::now();
    conformance::check_actions(desktop.as_mut(), POLICY, &mut witness, &mut report).unwrap();
    let actions_ms = started.elapsed().as_millis();
    conformance::check_stop(desktop.as_mut(), POLICY, &mut witness, &mut report).unwrap();
    conformance::check_clipboard(desktop.as_mut(), &mut witness, &mut report).unwrap();

    // Detached, the desktop keeps running; a reattached backend drives the same probe.
    let reattach_config = config.clone();
    let mut desktop = conformance::check_detach(
        desktop,
        POLICY,
        move || match LocalDesktop::reattach(reattach_config) {
            Ok(Some(desktop)) => Ok(Box::new(desktop) as Box<dyn DesktopBackend>),
            Ok(None) => Err("no desktop to reattach".to_string()),
            Err(error) => Err(error.to_string()),
        },
        &mut report,
    )
    .unwrap();

    conformance::check_rejections(desktop.as_mut(), POLICY, &mut witness, &mut report).unwrap();

    let recorded = recorded_processes(&session_dir);
    assert!(!recorded.is_empty());
    conformance::check_shutdown(desktop.as_mut(), POLICY, &mut witness, &mut report).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while recorded.iter().any(|process| process.is_alive()) {
        assert!(Instant::now() < deadline, "left running: {recorded:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    report.check_complete().unwrap();
    println!(
        "conformance: desktop and first app ready in {ready_ms} ms; {} action cases in \
         {actions_ms} ms\n{report}",
        conformance::action_cases(display).len()
    );
}
