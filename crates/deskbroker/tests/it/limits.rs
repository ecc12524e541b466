//! Limits per session, by behaviour on a real sandbox: every process of the desktop is in the
//! session's own cgroups from its start, an app that forks and allocates without end is
//! stopped by the kernel (fork refused at `pids.max`, OOM kill at the memory limit), the next
//! operation fails with `ResourceLimit` naming the limit, and stopping the desktop removes the
//! groups with nothing left in them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use desk_desktop::launcher::recorded_processes;
use desk_desktop::sandbox::cgroup::{Limits, SessionCgroup};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, LocalDesktop};

use crate::support::{bare_desktop_config, xvfb_available};

/// Forks shells that each double a string forever.
const HOG: &str = r#"
name = "hog"
command = ["/bin/sh", "-c", "while :; do /bin/sh -c 'x=0123456789abcdef; while :; do x=$x$x; done' & done"]
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
timeout_ms = 3000
"#;

fn in_group(pid: u32, group: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .is_ok_and(|text| text.lines().any(|line| line.ends_with(group)))
}

#[test]
fn a_forking_allocating_app_is_stopped_and_named_a_resource_limit() {
    if !xvfb_available() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("s_limits");
    let mut config = bare_desktop_config(&session_dir);
    config.limits = Limits {
        memory_bytes: 256 << 20,
        pids: 160,
        cpu_percent: 100,
    };
    std::fs::create_dir_all(session_dir.path()).unwrap();
    let mut desktop = LocalDesktop::start(config.clone()).unwrap();
    // A sandboxed desktop without its groups is refused at start: they are recorded.
    let cgroup = SessionCgroup::load(&session_dir).expect("the session's cgroups");
    let groups: Vec<PathBuf> = cgroup
        .groups
        .iter()
        .map(|(_, group)| group.clone())
        .collect();
    assert!(
        cgroup.groups.iter().any(|(name, _)| name == "memory")
            && cgroup.groups.iter().any(|(name, _)| name == "pids"),
        "{cgroup:?}"
    );
    // Every recorded process (and so everything it forked) is in the session's groups.
    let name = groups[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("s_limits-"),
        "{name}: the session id and a path digest"
    );
    let suffix = format!("/deskbroker/{name}");
    for process in recorded_processes(session_dir.path()) {
        assert!(
            in_group(process.pid, &suffix),
            "{process:?} outside the session's cgroup"
        );
    }
    assert!(cgroup.verdict().is_none());

    let profile = AppProfile::from_toml("hog", HOG).unwrap();
    let prepared = profile.prepare(&session_dir, config.sandbox, &[]).unwrap();
    let started = Instant::now();
    let _ = desktop.start_app(&prepared.launch);
    let deadline = Instant::now() + Duration::from_secs(20);
    let verdict = loop {
        if let Some(verdict) = cgroup.verdict() {
            break verdict;
        }
        assert!(Instant::now() < deadline, "no limit enforced");
        std::thread::sleep(Duration::from_millis(50));
    };
    println!(
        "limit enforced after {} ms: {verdict}",
        started.elapsed().as_millis()
    );
    // The group never held more than its limits.
    let peak: u64 = std::fs::read_to_string(groups[0].join("memory.max_usage_in_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(peak <= 256 << 20, "peak {peak}");
    match desktop.facts() {
        Err(BackendError::ResourceLimit(reason)) => {
            assert!(reason.contains("limit"), "{reason}")
        }
        other => panic!("expected a resource limit, got {other:?}"),
    }
    drop(desktop);
    for group in &groups {
        assert!(!group.exists(), "{} left", group.display());
    }
}

/// A cgroup root where this process's v1 `memory` group exists but no group can be made in
/// it (`deskbroker` is a plain file there, so `mkdir` fails with `ENOTDIR`).
fn unusable_cgroup_root(root: &std::path::Path) -> PathBuf {
    let cgroups = root.join("cgroups");
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let own = text
        .lines()
        .find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names
                .split(',')
                .any(|name| name == "memory")
                .then(|| path.trim_start_matches('/').to_string())
        })
        .unwrap_or_default();
    let group = cgroups.join("memory").join(own);
    std::fs::create_dir_all(&group).unwrap();
    std::fs::write(group.join("tasks"), "").unwrap();
    std::fs::write(group.join("deskbroker"), "not a directory").unwrap();
    cgroups
}

/// Limits are never silently off. A sandboxed broker whose cgroups cannot be made refuses the
/// lease with `sandbox_unavailable` naming the controller and teaching `--unsafe-no-limits`,
/// and creates no session. With the flag the same broker leases and resets, makes no cgroup,
/// and the workspace facts, the action receipt and every signed evidence record say
/// `"limits": "off"`; a broker with usable cgroups says nothing of limits (enforced).
#[tokio::test(flavor = "multi_thread")]
async fn limits_that_cannot_be_applied_refuse_the_lease_unless_turned_off() {
    use crate::probe::{act, leased_probe};
    use crate::support::Broker;
    use desk_contract::desktop::LimitsMode;

    if !xvfb_available() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cgroup_root = unusable_cgroup_root(tmp.path());
    let root_arg = cgroup_root.display().to_string();

    let refusing_dir = tmp.path().join("refusing");
    std::fs::create_dir_all(&refusing_dir).unwrap();
    let log = refusing_dir.join("probe.ndjson");
    let broker = Broker::start_with(&refusing_dir, None, &log, &["--cgroup-root", &root_arg]);
    let error = broker
        .client()
        .lease(&desk_contract::api::LeaseRequest {
            task_id: "t".into(),
            attempt_id: "a1".into(),
            profile: Some("probe".into()),
        })
        .await
        .expect_err("no limits, no lease");
    match &error {
        desk_client::ClientError::Api(body) => {
            assert_eq!(
                body.code,
                desk_contract::ErrorCode::SandboxUnavailable,
                "{body:?}"
            );
            assert!(body.message.contains("memory"), "{body:?}");
            assert!(body.message.contains("--unsafe-no-limits"), "{body:?}");
            println!("refused: {}", body.message);
        }
        other => panic!("expected sandbox_unavailable, got {other}"),
    }
    let sessions = std::fs::read_dir(broker.state_dir.join("sessions"))
        .map(|dir| dir.count())
        .unwrap_or(0);
    assert_eq!(sessions, 0, "a refused lease creates no session");
    drop(broker);

    let unlimited_dir = tmp.path().join("unlimited");
    std::fs::create_dir_all(&unlimited_dir).unwrap();
    let log = unlimited_dir.join("probe.ndjson");
    let broker = Broker::start_with(
        &unlimited_dir,
        None,
        &log,
        &["--cgroup-root", &root_arg, "--unsafe-no-limits"],
    );
    let session = leased_probe(&broker, "unlimited").await;
    let client = broker.client();
    let facts = client.status(&session).await.unwrap().workspace.unwrap();
    assert_eq!(facts.limits, LimitsMode::Off, "{facts:?}");
    assert!(facts.failures.is_empty(), "{facts:?}");
    let session_dir = broker.session_dir(&session);
    assert!(
        !session_dir.join("cgroup.json").exists(),
        "no cgroup is made with --unsafe-no-limits"
    );
    let moved = act(
        &client,
        &session,
        "m1",
        0,
        serde_json::json!({"type": "move", "x": 5, "y": 5, "intent": "a move"}),
    )
    .await
    .unwrap();
    assert_eq!(moved.receipt.limits, LimitsMode::Off);
    client.release(&session).await.unwrap();
    let journal = broker
        .state_dir
        .join("evidence")
        .join(&session)
        .join("evidence.ndjson");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.lines().count() >= 4, "{text}");
    for line in text.lines() {
        assert!(line.contains(r#""limits":"off""#), "{line}");
    }
    // The stamp is signed: the exported bundle verifies, and without the stamp it does not.
    let bundle = unlimited_dir.join("bundle");
    crate::evidence::export(&broker.state_dir, &session, &bundle);
    let key = broker.state_dir.join("evidence").join("evidence.pub");
    let (ok, output) = crate::evidence::verify(&bundle, &key);
    assert!(ok, "{output}");
    let exported = bundle.join("evidence.ndjson");
    let mut unstamped = std::fs::read_to_string(&exported).unwrap();
    let stamp = r#""limits":"off","#;
    let at = unstamped.find(stamp).unwrap();
    unstamped.replace_range(at..at + stamp.len(), "");
    std::fs::write(&exported, unstamped).unwrap();
    let (ok, output) = crate::evidence::verify(&bundle, &key);
    assert!(!ok, "a record without its stamp must not verify: {output}");
    drop(broker);

    // Usable cgroups, no flag: the limits are applied and nothing says otherwise.
    let enforced_dir = tmp.path().join("enforced");
    std::fs::create_dir_all(&enforced_dir).unwrap();
    let log = enforced_dir.join("probe.ndjson");
    let broker = Broker::start(&enforced_dir, None, &log);
    let session = leased_probe(&broker, "enforced").await;
    let client = broker.client();
    let facts = client.status(&session).await.unwrap().workspace.unwrap();
    if SessionCgroup::load(&desk_desktop::SessionDir::from(
        broker.session_dir(&session),
    ))
    .is_none()
    {
        panic!("a sandboxed session without --unsafe-no-limits has its cgroups");
    }
    assert_eq!(facts.limits, LimitsMode::Enforced, "{facts:?}");
    let moved = act(
        &client,
        &session,
        "m1",
        0,
        serde_json::json!({"type": "move", "x": 5, "y": 5, "intent": "a move"}),
    )
    .await
    .unwrap();
    assert_eq!(moved.receipt.limits, LimitsMode::Enforced);
    let text = std::fs::read_to_string(
        broker
            .state_dir
            .join("evidence")
            .join(&session)
            .join("evidence.ndjson"),
    )
    .unwrap();
    assert!(!text.contains(r#""limits""#), "{text}");
    client.release(&session).await.unwrap();
}
