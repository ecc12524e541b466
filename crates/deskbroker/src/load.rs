//! `deskbroker load`: many concurrent sessions through the real API; p50/p95 per operation,
//! throughput and memory per session, then proof that nothing is left behind.
//!
//! A broker runs in this process on a private Unix socket with a `probe` profile (the
//! `desk-probe` window, which records every X input it receives in the session directory). Each
//! session, concurrently, leases, resets, runs a deterministic mix of actions through
//! `desk_client` (with screenshots, status reads and status long-polls in between), compares what
//! its probe recorded with exactly the acknowledged actions, measures its processes' memory and
//! releases. Checkpoints are skipped: the probe profile has no save chord. The run fails when a
//! request failed without a typed error, a probe log differs, or anything is left behind: a
//! recorded process alive, a display file, a session or temporary directory. `--frozen-kill`
//! measures the watchdog alone instead (`load/frozen.rs`); `--desktops librecad=16,freecad=4`
//! runs CAD desktops with scripts whose saved files are checked instead (`load/cad.rs`).
//!
//! Over 400 lines: one session's script, its probe check and the run's leftover check are one
//! flow read top to bottom; the numbers, the host readings and the script are split out.

mod args;
mod cad;
mod cad_report;
mod cad_script;
mod frozen;
mod host;
mod report;
mod script;

pub(crate) use args::LoadArgs;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use desk_client::{Client, ClientError};
use desk_contract::DisplaySize;
use desk_contract::api::{ActionRequest, LeaseRequest, ResetRequest, SessionState};
use desk_desktop::StateDir;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::local::LocalBroker;
use host::Footprint;
use report::{SessionResult, ms};
use script::Expected;

fn find_probe(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        if path.is_file() {
            return std::fs::canonicalize(&path)
                .with_context(|| format!("failed to resolve {}", path.display()));
        }
        bail!("probe binary {} not found", path.display());
    }
    let exe = std::env::current_exe().context("failed to locate the deskbroker executable")?;
    let dir = exe.parent().context("the executable has no directory")?;
    for candidate in [dir.join("desk-probe"), dir.join("../desk-probe")] {
        if candidate.is_file() {
            // Without `..`: the sandbox shows the profile's `read_only` paths as named.
            return std::fs::canonicalize(&candidate)
                .with_context(|| format!("failed to resolve {}", candidate.display()));
        }
    }
    bail!(
        "desk-probe not found next to {}; build it (`cargo build --release -p desk-test-support \
         --bin desk-probe`) or pass --probe",
        exe.display()
    )
}

/// The probe profile; the sandbox shows the probe binary itself (`read_only`), nothing else of
/// its directory.
fn probe_profile(probe: &Path) -> String {
    format!(
        r#"name = "probe"
command = ["{probe}", "--out", "{{attempt}}.probe.ndjson"]
read_only = ["{probe}"]
[attempt]
filename = "attempt.txt"
template = "fresh"
[window]
class = "deskprobe"
maximize = true
timeout_ms = 30000
"#,
        probe = probe.display()
    )
}

fn probe_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits (briefly) until the probe logged `n_button_events` button events; X delivery and the
/// probe's writes are asynchronous to the broker's answer.
async fn settled_probe_events(path: &Path, n_button_events: usize) -> Vec<Value> {
    let mut events = probe_events(path);
    for _ in 0..100 {
        let n_seen = events
            .iter()
            .filter(|event| {
                matches!(
                    event["type"].as_str(),
                    Some("button_press" | "button_release")
                )
            })
            .count();
        if n_seen >= n_button_events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        events = probe_events(path);
    }
    events
}

struct Plan {
    n_actions: usize,
    display: DisplaySize,
    state_dir: PathBuf,
    run_tag: String,
}

async fn run_session(
    client: Client,
    plan: Arc<Plan>,
    session_idx: usize,
    progress: ProgressBar,
) -> SessionResult {
    let mut result = SessionResult::default();
    let started = Instant::now();
    let lease = client
        .lease(&LeaseRequest {
            task_id: "load".to_string(),
            attempt_id: format!("{}-{session_idx}", plan.run_tag),
            profile: Some("probe".to_string()),
        })
        .await;
    result.samples.add("lease", ms(started.elapsed()));
    let session = match lease {
        Ok(lease) => lease.session_id,
        Err(error) => {
            result.failed("lease", &error);
            return result;
        }
    };
    let session_dir = StateDir::new(&plan.state_dir).session(&session);
    let started = Instant::now();
    let reset = client
        .reset(
            &session,
            &ResetRequest {
                request_id: "load-reset".to_string(),
            },
        )
        .await;
    result.samples.add("reset", ms(started.elapsed()));
    if let Err(error) = reset {
        result.failed("reset", &error);
    } else {
        result.footprint = Footprint::read(&session_dir);
        // The probe log is checked inside, before release deletes the session directory.
        drive(
            &client,
            &plan,
            session_idx,
            &session,
            &mut result,
            &progress,
        )
        .await;
    }
    let started = Instant::now();
    let released = client.release(&session).await;
    result.samples.add("release", ms(started.elapsed()));
    if let Err(error) = released {
        result.failed("release", &error);
    }
    result
}

/// The action phase of one session: actions with screenshots, status reads and long-polls in
/// between, then the probe comparison and the memory sample.
async fn drive(
    client: &Client,
    plan: &Plan,
    session_idx: usize,
    session: &str,
    result: &mut SessionResult,
    progress: &ProgressBar,
) {
    let probe_log = StateDir::new(&plan.state_dir)
        .session(session)
        .workspace()
        .join(desk_desktop::sandbox::workspace::ATTEMPT_DIR)
        .join("attempt.txt.probe.ndjson");
    let n_before = probe_events(&probe_log).len();
    let mut expected = Expected::default();
    let mut next_index = 0_u64;
    for (action_idx, action) in script::script(session_idx, plan.n_actions, plan.display)
        .into_iter()
        .enumerate()
    {
        // Every 10th action, a long-poll waits for it from a second connection.
        let poller = (action_idx % 10 == 5).then(|| {
            let client = client.clone();
            let session = session.to_string();
            tokio::spawn(async move {
                let started = Instant::now();
                let answer = client
                    .status_wait(
                        &session,
                        Duration::from_millis(5_000),
                        Some(SessionState::Ready),
                        Some(next_index),
                    )
                    .await;
                (answer, started.elapsed(), Instant::now())
            })
        });
        if poller.is_some() {
            // Lets the long-poll reach the broker first most of the time; either order is valid.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let request = ActionRequest {
            request_id: format!("load-{action_idx}"),
            expected_action_index: next_index,
            screenshot_id: None,
            action: action.clone(),
        };
        let started = Instant::now();
        let answer = client.act(session, &request).await;
        result.n_execute_requests += 1;
        let elapsed = ms(started.elapsed());
        let acked_at = Instant::now();
        result.samples.add("execute", elapsed);
        result
            .samples
            .add(&format!("execute:{}", action.type_name()), elapsed);
        let acked = match answer {
            Ok(response) => {
                result.n_acknowledged += 1;
                expected.acknowledged(&action);
                next_index = response.action_index + 1;
                true
            }
            Err(error) => {
                result.failed("execute", &error);
                false
            }
        };
        if let Some(poller) = poller {
            check_long_poll(poller.await, (acked, next_index), acked_at, result);
        }
        extras(client, session, action_idx, next_index, result).await;
        progress.inc(1);
    }
    let events = settled_probe_events(&probe_log, n_before + expected.n_button_events()).await;
    result.probe_mismatches = expected.check(events.get(n_before..).unwrap_or(&[]));
    result.rss_kib = result.footprint.rss_kib();
}

type PollOutcome = (
    std::result::Result<desk_contract::api::StatusResponse, ClientError>,
    Duration,
    Instant,
);

fn check_long_poll(
    joined: std::result::Result<PollOutcome, tokio::task::JoinError>,
    (acked, next_index): (bool, u64),
    acked_at: Instant,
    result: &mut SessionResult,
) {
    let (answer, elapsed, returned_at) = match joined {
        Ok(outcome) => outcome,
        Err(error) => {
            result
                .long_poll_errors
                .push(format!("long-poll task failed: {error}"));
            return;
        }
    };
    result.samples.add("status_wait", ms(elapsed));
    if !acked {
        // The action was refused: what the poll saw depends on why; only its latency counts.
        return;
    }
    match answer {
        Ok(status) if status.next_action_index == next_index => {
            result.long_polls_woken += 1;
            let after_ack = ms(returned_at.saturating_duration_since(acked_at))
                - ms(acked_at.saturating_duration_since(returned_at));
            result.wake_after_ack_ms.push(after_ack);
        }
        Ok(status) => result.long_poll_errors.push(format!(
            "long-poll answered next_action_index {} (state {}), expected {next_index}",
            status.next_action_index,
            status.state.as_str()
        )),
        Err(error) => {
            result.failed("status_wait", &error);
            result
                .long_poll_errors
                .push(format!("long-poll failed: {error}"));
        }
    }
}

/// Screenshots, status reads and a long-poll that must time out, between actions.
async fn extras(
    client: &Client,
    session: &str,
    action_idx: usize,
    next_index: u64,
    result: &mut SessionResult,
) {
    if action_idx % 15 == 14 {
        let started = Instant::now();
        let shot = client.screenshot(session).await;
        result.samples.add("screenshot", ms(started.elapsed()));
        if let Err(error) = shot {
            result.failed("screenshot", &error);
        }
    }
    if action_idx % 25 == 12 {
        let started = Instant::now();
        let status = client.status(session).await;
        result.samples.add("status", ms(started.elapsed()));
        if let Err(error) = status {
            result.failed("status", &error);
        }
    }
    if action_idx % 50 == 19 {
        // Nothing changes while this waits: it must time out with the same view.
        let started = Instant::now();
        let answer = client
            .status_wait(
                session,
                Duration::from_millis(200),
                Some(SessionState::Ready),
                Some(next_index),
            )
            .await;
        let elapsed = started.elapsed();
        result.samples.add("status_wait_timeout", ms(elapsed));
        match answer {
            Ok(status)
                if status.next_action_index == next_index
                    && elapsed >= Duration::from_millis(190) =>
            {
                result.long_polls_timed_out += 1;
            }
            Ok(status) => result.long_poll_errors.push(format!(
                "an idle long-poll answered after {elapsed:?} with next_action_index {}",
                status.next_action_index
            )),
            Err(error) => result.failed("status_wait", &error),
        }
    }
}

/// `GET /v1/metrics` over the socket, as plain HTTP/1.1 (the typed client has no such call).
async fn scrape_metrics(socket: &Path) -> Result<String> {
    let mut stream = tokio::net::UnixStream::connect(socket)
        .await
        .with_context(|| format!("failed to connect to {}", socket.display()))?;
    stream
        .write_all(b"GET /v1/metrics HTTP/1.1\r\nHost: deskbroker\r\nConnection: close\r\n\r\n")
        .await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("malformed metrics response")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!(
            "metrics answered {}",
            head.lines().next().unwrap_or_default()
        );
    }
    Ok(body.to_string())
}

pub(crate) async fn run(args: LoadArgs) -> Result<()> {
    let work = std::env::temp_dir().join(format!("deskbroker-load-{}", std::process::id()));
    if let Some(mix) = args.desktops.clone() {
        // The built-in profiles only: no probe.
        std::fs::create_dir_all(work.join("profiles"))?;
        return run_desktops(&args, &mix, &work).await;
    }
    let probe = find_probe(args.probe.clone())?;
    std::fs::create_dir_all(work.join("profiles"))?;
    std::fs::write(work.join("profiles/probe.toml"), probe_profile(&probe))?;
    if args.frozen_kill {
        return run_frozen(&args, &work).await;
    }
    let outcome = run_in(&args, &work).await;
    let _ = std::fs::remove_dir_all(&work);
    let mut report = outcome?;
    let mut leftovers: Vec<String> = report["leftovers"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if work.exists() {
        leftovers.push(format!("temporary directory {} left", work.display()));
    }
    report["leftovers"] = json!(leftovers);
    let ok = report["untyped_failures"]
        .as_array()
        .is_some_and(Vec::is_empty)
        && report["probe_mismatches"]
            .as_array()
            .is_some_and(Vec::is_empty)
        && report["long_poll"]["errors"]
            .as_array()
            .is_some_and(Vec::is_empty)
        && report["broker_metrics_mismatch"].is_null()
        && leftovers.is_empty();
    report["ok"] = json!(ok);
    std::fs::write(&args.json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("failed to write {}", args.json.display()))?;
    outln!("report written to {}", args.json.display());
    if !ok {
        bail!("load run failed; see {}", args.json.display());
    }
    Ok(())
}

/// `--frozen-kill`: the watchdog's measurement alone (`load/frozen.rs`).
async fn run_frozen(args: &LoadArgs, work: &Path) -> Result<()> {
    let outcome = frozen::run(
        work,
        usize::from(args.sessions),
        args.broker.unsafe_no_limits,
    )
    .await;
    let _ = std::fs::remove_dir_all(work);
    let report = json!({ "frozen_kill": outcome? });
    std::fs::write(&args.json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("failed to write {}", args.json.display()))?;
    outln!("report written to {}", args.json.display());
    if report["frozen_kill"]["within_target"] != json!(true) {
        bail!(
            "a session was not stopped within 1 s of its limit; see {}",
            args.json.display()
        );
    }
    Ok(())
}

/// `--desktops`: CAD desktops at once (`load/cad.rs`); any failure, a refused lease included,
/// fails the run.
async fn run_desktops(args: &LoadArgs, mix: &args::DesktopMix, work: &Path) -> Result<()> {
    let outcome = cad::run(args, mix, work).await;
    let _ = std::fs::remove_dir_all(work);
    let mut report = outcome?;
    if work.exists()
        && let Some(leftovers) = report["leftovers"].as_array_mut()
    {
        leftovers.push(json!(format!(
            "temporary directory {} left",
            work.display()
        )));
    }
    cad_report::print_summary(&report)?;
    let ok = cad_report::passed(&report, mix.total());
    report["ok"] = json!(ok);
    std::fs::write(&args.json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("failed to write {}", args.json.display()))?;
    outln!("report written to {}", args.json.display());
    if !ok {
        bail!("load run failed; see {}", args.json.display());
    }
    Ok(())
}

async fn run_in(args: &LoadArgs, work: &Path) -> Result<Value> {
    let mut broker_args = args.broker.clone();
    broker_args.state_dir = Some(work.join("state"));
    broker_args.profiles = Some(work.join("profiles"));
    broker_args.default_profile = "probe".to_string();
    let display = DisplaySize {
        width: broker_args.display.0,
        height: broker_args.display.1,
    };
    let n_sessions = usize::from(args.sessions);
    let rss_before_kib = host::own_rss_kib();
    let socket = work.join("broker.sock");
    let broker = LocalBroker::start(&broker_args, socket.clone()).await?;
    let plan = Arc::new(Plan {
        n_actions: args.actions,
        display,
        state_dir: work.join("state"),
        run_tag: format!("run{}", std::process::id()),
    });
    let progress = ProgressBar::new((n_sessions * args.actions) as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} actions {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    eprintln!(
        "load: {n_sessions} sessions × {} actions on {display}",
        args.actions
    );
    let started = Instant::now();
    let tasks: Vec<_> = (0..n_sessions)
        .map(|session_idx| {
            tokio::spawn(run_session(
                broker.client(),
                Arc::clone(&plan),
                session_idx,
                progress.clone(),
            ))
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.context("a load session panicked")?);
    }
    let wall = started.elapsed();
    progress.finish_and_clear();
    let rss_peak_kib = host::own_rss_kib();
    let metrics = scrape_metrics(&socket).await;
    broker.stop().await;
    // Give the released desktops' processes a moment to be reaped before looking for them.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let report = report::build(
        args,
        display,
        &results,
        wall,
        (rss_before_kib, rss_peak_kib),
        metrics,
        &plan.state_dir,
    );
    report::print_summary(&report)?;
    Ok(report)
}
