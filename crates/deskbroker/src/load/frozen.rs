//! `deskbroker load --frozen-kill`: the watchdog stops sessions over their limits while the
//! broker is frozen. A `deskbroker serve` child (its own process, so it can be SIGSTOPped while
//! this one measures) runs `--sessions` probe sessions with a 9 s task limit; once every session
//! is handed off the broker is SIGSTOPped, and each session's lateness is measured: from its
//! limit (its handoff frame's time plus the limit, the moment the watchdog's rule makes it due)
//! to its workspace gone and every recorded process of it dead. The target (issue 26) is every
//! session stopped within 1 s of its limit; the run fails past 10 s.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use desk_client::Client;
use desk_contract::api::{LeaseRequest, ResetRequest};
use desk_desktop::StateDir;
use desk_desktop::launcher::{RecordedProcess, recorded_processes};
use serde_json::{Value, json};

use super::report::Summary;

/// The task limit the broker is started with (`--max-task-minutes 0.15`): long enough that
/// every session is handed off before the first is due even on a loaded machine (3 s was not:
/// two concurrent resets under load took longer).
const LIMIT: Duration = Duration::from_secs(9);

/// Past this after its limit a session still running fails the run.
const GIVE_UP: Duration = Duration::from_secs(10);

/// The target: every session stopped within this of its limit.
const TARGET: Duration = Duration::from_secs(1);

/// The `serve` child, SIGCONTed and stopped however the run ends.
struct ServeChild(Child);

impl Drop for ServeChild {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(pid: u32, name: &str) -> Result<()> {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .context("failed to run kill")?;
    if !status.success() {
        bail!("kill -{name} {pid} failed");
    }
    Ok(())
}

fn gone(dir: &Path, processes: &[RecordedProcess]) -> bool {
    !dir.exists() && processes.iter().all(|process| !process.is_alive())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Starts `deskbroker serve` on `work`'s socket, state directory and profiles, its log in
/// `log`.
fn start_serve(work: &Path, log: &Path, unsafe_no_limits: bool) -> Result<(ServeChild, PathBuf)> {
    let program = std::env::current_exe().context("failed to locate the deskbroker executable")?;
    let socket = work.join("frozen.sock");
    let mut command = Command::new(program);
    command
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--state-dir")
        .arg(work.join("frozen-state"))
        .arg("--profiles")
        .arg(work.join("profiles"))
        .args(["--default-profile", "probe", "--max-task-minutes", "0.15"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).context("failed to create the broker's log")?);
    if unsafe_no_limits {
        command.arg("--unsafe-no-limits");
    }
    let child = command
        .spawn()
        .context("failed to start deskbroker serve")?;
    Ok((ServeChild(child), socket))
}

/// Leases and resets one probe session; its id and handoff time (ms since the epoch).
async fn handed_off(client: &Client, index: usize) -> Result<(String, u64)> {
    let lease = client
        .lease(&LeaseRequest {
            task_id: "frozen-kill".into(),
            attempt_id: format!("frozen-{index}"),
            profile: Some("probe".into()),
        })
        .await
        .with_context(|| format!("lease {index}"))?;
    let reset = client
        .reset(
            &lease.session_id,
            &ResetRequest {
                request_id: "reset-1".into(),
            },
        )
        .await
        .with_context(|| format!("reset {index}"))?;
    Ok((lease.session_id, reset.screenshot.timestamp_ms))
}

/// Runs the measurement in `work` (which holds `profiles/probe.toml`) with `n` sessions; a
/// failure carries the end of the broker's log.
pub(super) async fn run(work: &Path, n: usize, unsafe_no_limits: bool) -> Result<Value> {
    let log = work.join("frozen-serve.log");
    measure(work, &log, n, unsafe_no_limits)
        .await
        .map_err(|error| {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            error.context(format!("the broker's log ended:\n{tail}"))
        })
}

async fn measure(work: &Path, log: &Path, n: usize, unsafe_no_limits: bool) -> Result<Value> {
    let (serve, socket) = start_serve(work, log, unsafe_no_limits)?;
    let client = Client::new(socket.clone());
    let ready_by = Instant::now() + Duration::from_secs(30);
    while !socket.exists() {
        if Instant::now() > ready_by {
            bail!("deskbroker serve did not open {}", socket.display());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("frozen kill: {n} probe sessions, task limit {LIMIT:?}, broker to be SIGSTOPped");
    let leases: Vec<_> = (0..n)
        .map(|index| {
            let client = client.clone();
            tokio::spawn(async move { handed_off(&client, index).await })
        })
        .collect();
    let mut sessions: Vec<(String, u64)> = Vec::with_capacity(n);
    for lease in leases {
        sessions.push(lease.await.context("a lease task panicked")??);
    }
    let state = StateDir::new(work.join("frozen-state"));
    let workspaces: Vec<_> = sessions
        .iter()
        .map(|(session, handoff_ms)| {
            let dir = state.session(session).path().to_path_buf();
            let processes = recorded_processes(&dir);
            (dir, processes, handoff_ms + LIMIT.as_millis() as u64)
        })
        .collect();
    if workspaces
        .iter()
        .any(|(_, processes, _)| processes.is_empty())
    {
        bail!("a handed-off session records no process");
    }
    signal(serve.0.id(), "STOP")?;
    let frozen_at_ms = now_ms();
    if workspaces
        .iter()
        .any(|(_, _, due_ms)| *due_ms <= frozen_at_ms)
    {
        bail!("a session reached its limit before the broker was frozen; use fewer sessions");
    }
    let mut lateness_ms: Vec<Option<f64>> = vec![None; n];
    loop {
        let now = now_ms();
        for (index, (dir, processes, due_ms)) in workspaces.iter().enumerate() {
            if lateness_ms[index].is_none() && gone(dir, processes) {
                lateness_ms[index] = Some(now.saturating_sub(*due_ms) as f64);
            }
        }
        let last_due = workspaces
            .iter()
            .map(|(_, _, due)| *due)
            .max()
            .unwrap_or(now);
        if lateness_ms.iter().all(Option::is_some)
            || now > last_due + u64::try_from(GIVE_UP.as_millis()).unwrap_or(u64::MAX)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(serve);
    let stopped: Vec<f64> = lateness_ms.iter().flatten().copied().collect();
    let all_stopped = stopped.len() == n;
    let summary = Summary::of(&stopped);
    let within_target = all_stopped && summary.max <= TARGET.as_secs_f64() * 1_000.0;
    eprintln!(
        "frozen kill: {} of {n} sessions stopped; after their limit p50 {:.0} ms, max {:.0} ms \
         (target ≤ {} ms{})",
        stopped.len(),
        summary.p50,
        summary.max,
        TARGET.as_millis(),
        if within_target { "" } else { ": MISSED" },
    );
    Ok(json!({
        "sessions": n,
        "limit_ms": LIMIT.as_millis() as u64,
        "stopped": stopped.len(),
        "after_limit_ms": {
            "p50": summary.p50,
            "max": summary.max,
            "each": lateness_ms,
        },
        "target_ms": TARGET.as_millis() as u64,
        "within_target": within_target,
    }))
}
