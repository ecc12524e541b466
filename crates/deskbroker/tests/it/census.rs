//! The census of what runs in a sandbox, on real desktops (Xvfb, openbox, the AT-SPI bus, the
//! probe window): a clean session passes every census and keeps acting; a prohibited process
//! started inside the sandbox ends the session within 1 s through the watchdog, and with the
//! watchdog stopped, through the broker's census before the next action, each with a signed
//! terminal receipt naming the process; the census's cost per pass is measured.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use desk_client::ClientError;
use desk_contract::ErrorCode;
use desk_desktop::SessionDir;
use desk_desktop::census::{CensusRules, scan, scan_full};
use desk_desktop::sandbox::Sandbox;
use desk_evidence::record::SessionKilled;
use serde_json::json;

use crate::probe::{ProbeSession, act};
use crate::support::xvfb_available;

fn session_dir(probe: &ProbeSession) -> SessionDir {
    SessionDir::at(probe.broker.state_dir.join("sessions").join(&probe.session))
}

fn sandbox_of(dir: &SessionDir) -> Sandbox {
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.desktop_file()).unwrap()).unwrap();
    serde_json::from_value(record["sandbox"].clone()).expect("a sandboxed desktop")
}

/// Starts `argv` inside the session's sandbox, from outside, as the tests' stand-in for a
/// process the app started.
fn start_inside(dir: &SessionDir, argv: &[&str]) -> Child {
    let argv: Vec<String> = argv.iter().map(|arg| arg.to_string()).collect();
    let env = [("PATH".to_string(), "/usr/bin:/bin".to_string())];
    sandbox_of(dir)
        .command(&argv, Path::new("/"), &env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// The spooled terminal receipt of `session`, verified, waited for up to `timeout` (both
/// spools: the watchdog signs its receipts with its own key into its own spool).
pub(crate) fn receipt(state_dir: &Path, session: &str, timeout: Duration) -> Option<SessionKilled> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = crate::watchdog::spooled_receipts(state_dir)
            .into_iter()
            .find(|s| s.session_id == session)
        {
            return Some(found.receipt);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub(crate) fn watchdog_pid(state_dir: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(state_dir.join("watchdog.lock"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no watchdog");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn resolved(program: &str) -> String {
    desk_desktop::census::resolve_program(program)
        .map(|path: PathBuf| path.display().to_string())
        .unwrap()
}

fn click(x: u32, y: u32) -> serde_json::Value {
    json!({"type": "click", "x": x, "y": y, "button": "left", "intent": "census click"})
}

/// Checks the receipt of a census kill of `sleep 60` started from outside.
fn assert_census_receipt(receipt: &SessionKilled, source: &str) {
    assert_eq!(receipt.limit.as_deref(), Some("prohibited_process"));
    assert_eq!(receipt.source, source);
    assert_eq!(receipt.outcome, "contained");
    let process = receipt.process.as_ref().expect("the process is recorded");
    assert_eq!(process.exe, resolved("sleep"));
    assert_eq!(process.cmdline, "sleep 60");
    assert_eq!(
        process.parent_exe, None,
        "started from outside: {process:?}"
    );
    assert!(process.why.contains("from outside"), "{process:?}");
    assert!(
        receipt.reason.contains(&resolved("sleep")) && receipt.reason.contains("sleep 60"),
        "{}",
        receipt.reason
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clean_session_passes_every_census_and_a_pass_is_cheap() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("census-clean").await;
    let dir = session_dir(&probe);
    let rules = CensusRules::read(&dir).expect("reset records the census rules");
    assert_eq!(rules.app.len(), 1, "the probe profile's command alone");
    let census = scan(&dir, &rules).unwrap();
    let programs: Vec<&str> = census
        .processes
        .iter()
        .filter_map(|seen| seen.exe.as_deref())
        .collect();
    eprintln!("census of a probe session: {programs:?}");
    assert!(census.violations.is_empty(), "{:?}", census.violations);
    assert!(
        programs.contains(&rules.app[0].path.as_str()),
        "{programs:?}"
    );
    assert!(
        programs.contains(&resolved("Xvfb").as_str()),
        "{programs:?}"
    );

    // Actions and time pass: no census kills the session.
    for index in 0..5u64 {
        act(
            &probe.client,
            &probe.session,
            &format!("c{index}"),
            index,
            click(100 + 10 * index as u32, 200),
        )
        .await
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(1200));
    let status = probe.client.status(&probe.session).await.unwrap();
    assert_eq!(
        status.state,
        desk_contract::api::SessionState::Ready,
        "{status:?}"
    );
    assert!(receipt(&probe.broker.state_dir, &probe.session, Duration::ZERO).is_none());

    // Its cost: CPU time of 200 passes, against 1% of a core at 4 passes a second (2.5 ms).
    let cpu = || {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|field| field.parse().unwrap())
            .collect();
        Duration::from_millis((fields[0] + fields[1]) * 10)
    };
    let passes = 200u32;
    let (cpu_before, wall_before) = (cpu(), Instant::now());
    let mut processes = 0;
    for _ in 0..passes {
        let census = scan(&dir, &rules).unwrap();
        assert!(census.violations.is_empty());
        processes = census.processes.len();
    }
    let per_pass_cpu = (cpu() - cpu_before) / passes;
    let per_pass_wall = wall_before.elapsed() / passes;
    let host_processes = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .count();
    eprintln!(
        "census pass: {per_pass_cpu:?} CPU, {per_pass_wall:?} wall ({processes} processes in \
         the sandbox, {host_processes} on the host); at 4 passes/s: {:.2}% of a core",
        per_pass_cpu.as_secs_f64() * 4.0 * 100.0
    );
    assert!(
        per_pass_cpu < Duration::from_micros(2500),
        "a census pass costs {per_pass_cpu:?} of CPU"
    );

    // The tracked way finds what the full scan of the host's /proc (the authority) finds.
    let full = scan_full(&dir, &rules).unwrap();
    assert_eq!(scan(&dir, &rules).unwrap().processes, full.processes);
    let wall_full = Instant::now();
    for _ in 0..passes {
        scan_full(&dir, &rules).unwrap();
    }
    eprintln!(
        "census pass by the full scan: {:?} wall",
        wall_full.elapsed() / passes
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prohibited_process_ends_the_session_within_a_second_through_the_watchdog() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("census-watchdog").await;
    let dir = session_dir(&probe);
    let started = Instant::now();
    let mut child = start_inside(&dir, &["sleep", "60"]);
    let receipt = receipt(
        &probe.broker.state_dir,
        &probe.session,
        Duration::from_secs(5),
    )
    .expect("the session was killed");
    let elapsed = started.elapsed();
    eprintln!("census kill through the watchdog: {elapsed:?} after the process started");
    // The 1 s target is measured here and reported (docs/security.md); the test holds the
    // kill to a bound that a loaded CI machine keeps (a timed test is no benchmark).
    assert!(elapsed < Duration::from_secs(4), "killed after {elapsed:?}");
    assert_census_receipt(&receipt, "watchdog");
    // The prohibited process went with the sandbox.
    let waited = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            waited.elapsed() < Duration::from_secs(3),
            "sleep outlived the kill"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let refused = act(&probe.client, &probe.session, "after", 0, click(5, 5)).await;
    match refused {
        Err(ClientError::Api(body)) => assert_eq!(body.code, ErrorCode::SessionKilled),
        other => panic!("expected session_killed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_watchdog_stopped_the_census_before_an_action_ends_the_session() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("census-action").await;
    let dir = session_dir(&probe);
    act(&probe.client, &probe.session, "a0", 0, click(50, 50))
        .await
        .unwrap();
    let watchdog = watchdog_pid(&probe.broker.state_dir);
    signal(watchdog, "STOP");
    let mut child = start_inside(&dir, &["sleep", "60"]);
    // Until the process runs inside (nsenter, then env, then sleep).
    let deadline = Instant::now() + Duration::from_secs(5);
    let rules = CensusRules::read(&dir).unwrap();
    while scan(&dir, &rules)
        .unwrap()
        .violations
        .iter()
        .all(|v| v.cmdline != "sleep 60")
    {
        assert!(Instant::now() < deadline, "sleep never ran inside");
        std::thread::sleep(Duration::from_millis(5));
    }
    let refused = act(&probe.client, &probe.session, "a1", 1, click(60, 60)).await;
    signal(watchdog, "CONT");
    match refused {
        Err(ClientError::Api(body)) => {
            assert_eq!(body.code, ErrorCode::SessionKilled, "{body:?}");
            assert!(body.message.contains("prohibited process"), "{body:?}");
        }
        other => panic!("expected session_killed, got {other:?}"),
    }
    let receipt = receipt(
        &probe.broker.state_dir,
        &probe.session,
        Duration::from_secs(2),
    )
    .expect("a terminal receipt");
    assert_census_receipt(&receipt, "broker");
    // The census ran beside the action's acceptance; the accepted action was withdrawn
    // before the kill, so the kill names no action in flight.
    assert_eq!(receipt.action_in_doubt, None, "{receipt:?}");
    // The census ran beside the action's acceptance; the accepted action was withdrawn
    // before the kill, so the kill names no action in flight.
    assert_eq!(receipt.action_in_doubt, None, "{receipt:?}");
    let _ = child.kill();
    let _ = child.wait();
}
