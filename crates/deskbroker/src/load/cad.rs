//! `deskbroker load --desktops librecad=16,freecad=4`: CAD desktops at once through the real
//! API, in phases so that every number is taken with all of them up.
//!
//! 1. Admission: what the mix needs of the broker's memory budget (each desktop counts its
//!    profile's memory limit) is printed against the budget; the broker admits or refuses each
//!    lease itself, and a refusal is a failure of the run, never a smaller run.
//! 2. Every desktop is leased and reset at once; the time until the last reset answered is the
//!    time to reset all. Then the PSS of every desktop (its recorded processes and their
//!    descendants) is read in one pass.
//! 3. Every desktop runs its script (`cad_script.rs`) at once, checkpoints and retrieves its
//!    file; actions/s count acknowledged actions over this phase's wall time. PSS is read again
//!    with all of them still up, and a desktop's figure is the larger of the two readings.
//! 4. All are released at once, the broker stops, and each file's outcome is checked (desk-cad);
//!    then the leftover check: recorded processes, display files, session directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use desk_client::Client;
use desk_contract::DisplaySize;
use desk_contract::api::{ActionRequest, LeaseRequest, ResetRequest};
use desk_desktop::{ProfileSet, StateDir};
use serde_json::{Value, json};

use super::args::{DesktopMix, LoadArgs};
use super::cad_report::{self, Admission, Desk};
use super::host::{self, Footprint};
use super::report::ms;
use crate::cli::budget::{BROKER_RESERVE_MIB, cgroup_limit_mib};
use crate::local::LocalBroker;

fn admission(args: &LoadArgs, mix: &DesktopMix) -> Result<Admission> {
    let profiles = ProfileSet::builtin()?;
    let mut per_profile_mib = BTreeMap::new();
    let mut needed_mib = 0;
    for (name, count) in &mix.0 {
        let mib = profiles.get(name)?.limits().memory_bytes.div_ceil(1 << 20);
        per_profile_mib.insert(name.clone(), mib);
        needed_mib += mib * *count as u64;
    }
    let (budget_mib, budget_source) = match args.memory_budget_mib {
        Some(mib) => (mib, "--memory-budget-mib"),
        None => {
            let host = host::host_memory_mib().map_or(0, |(total, _)| total);
            let cgroup = cgroup_limit_mib(Path::new("/")).unwrap_or(u64::MAX);
            (
                host.min(cgroup).saturating_sub(BROKER_RESERVE_MIB),
                "host memory less the broker's 512 MiB",
            )
        }
    };
    let max_sessions = args
        .max_sessions
        .map_or(mix.total(), |n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(Admission {
        needed_mib,
        budget_mib,
        budget_source,
        max_sessions,
        per_profile_mib,
    })
}

pub(super) async fn run(args: &LoadArgs, mix: &DesktopMix, work: &Path) -> Result<Value> {
    let admit = admission(args, mix)?;
    let display = DisplaySize {
        width: args.broker.display.0,
        height: args.broker.display.1,
    };
    anyhow::ensure!(
        display == super::cad_script::FREECAD_DISPLAY
            || mix.0.iter().all(|(name, _)| name != "freecad"),
        "--desktops freecad=N needs --display 1920x1080: the FreeCAD script clicks positions \
         measured there (got {display})"
    );
    let needs: Vec<String> = mix
        .0
        .iter()
        .map(|(name, count)| format!("{count} × {name} {} MiB", admit.per_profile_mib[name]))
        .collect();
    eprintln!(
        "load: {} desktops ({}) on {display}; they need {} MiB of the memory budget ({}); \
         budget {} MiB ({}), at most {} sessions",
        mix.total(),
        mix.0
            .iter()
            .map(|(name, count)| format!("{name}={count}"))
            .collect::<Vec<_>>()
            .join(","),
        admit.needed_mib,
        needs.join(" + "),
        admit.budget_mib,
        admit.budget_source,
        admit.max_sessions,
    );
    if admit.needed_mib > admit.budget_mib || admit.max_sessions < mix.total() {
        eprintln!(
            "load: the broker will refuse some leases and the run will fail; to admit all, pass \
             --memory-budget-mib {} --max-sessions {} (the budget counts each desktop's memory \
             limit, not what it uses: the report's PSS says what they use)",
            admit.needed_mib,
            mix.total()
        );
    }
    let mut broker_args = args.broker.clone();
    broker_args.state_dir = Some(work.join("state"));
    broker_args.profiles = Some(work.join("profiles"));
    let load_before = host::load_average();
    let mem_before = host::host_memory_mib();
    let own_before_kib = host::own_rss_kib();
    let socket = work.join("broker.sock");
    let broker = LocalBroker::start_with_capacity(
        &broker_args,
        socket,
        (admit.max_sessions, Some(admit.budget_mib)),
    )
    .await?;
    let client = broker.client();
    let state_dir = work.join("state");
    let run_tag = format!("cad{}", std::process::id());
    let mut index = 0;
    let mut desks = Vec::new();
    for (profile, count) in &mix.0 {
        for _ in 0..*count {
            desks.push(Desk::new(index, profile));
            index += 1;
        }
    }

    let started = Instant::now();
    let desks = phase(desks, |desk| {
        lease_and_reset(client.clone(), desk, state_dir.clone(), run_tag.clone())
    })
    .await?;
    let reset_all = started.elapsed();
    eprintln!(
        "load: {} of {} desktops reset in {:.1} s; running their scripts",
        desks.iter().filter(|desk| desk.session.is_some()).count(),
        desks.len(),
        reset_all.as_secs_f64()
    );
    let mut desks = desks;
    read_memory(&mut desks);
    let mem_after_reset = host::host_memory_mib();

    let started = Instant::now();
    let mut desks = phase(desks, |desk| drive(client.clone(), desk, display)).await?;
    let script_wall = started.elapsed();
    read_memory(&mut desks);
    let mem_after_scripts = host::host_memory_mib();
    let own_peak_kib = host::own_rss_kib();
    let load_at_peak = host::load_average();

    let started = Instant::now();
    let mut desks = phase(desks, |desk| release(client.clone(), desk)).await?;
    let release_all = started.elapsed();
    broker.stop().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    eprintln!("load: released; checking the saved files");
    let outcomes = work.join("outcomes");
    std::fs::create_dir_all(&outcomes)?;
    for desk in &mut desks {
        check_outcome(desk, &outcomes).await;
    }
    Ok(cad_report::build(&cad_report::Run {
        mix,
        admission: &admit,
        display,
        desks: &desks,
        reset_all,
        script_wall,
        release_all,
        state_dir: &state_dir,
        host: json!({
            "cores": std::thread::available_parallelism().map_or(0, usize::from),
            "load_average_before": load_before,
            "load_average_after_scripts": load_at_peak,
            "load_average_after_release": host::load_average(),
            "mem_total_mib": mem_before.map(|(total, _)| total),
            "mem_available_mib_before": mem_before.map(|(_, available)| available),
            "mem_available_mib_after_reset": mem_after_reset.map(|(_, available)| available),
            "mem_available_mib_after_scripts": mem_after_scripts.map(|(_, available)| available),
            "broker_process_rss_mib_before": own_before_kib / 1024,
            "broker_process_rss_mib_after_scripts": own_peak_kib / 1024,
        }),
    }))
}

/// Runs `step` on every desk at once and gives them back in order.
async fn phase<F, Fut>(desks: Vec<Desk>, step: F) -> Result<Vec<Desk>>
where
    F: Fn(Desk) -> Fut,
    Fut: std::future::Future<Output = Desk> + Send + 'static,
{
    let tasks: Vec<_> = desks
        .into_iter()
        .map(|desk| tokio::spawn(step(desk)))
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(task.await.context("a load desktop's task panicked")?);
    }
    Ok(out)
}

async fn lease_and_reset(client: Client, mut desk: Desk, state_dir: PathBuf, tag: String) -> Desk {
    let started = Instant::now();
    let lease = client
        .lease(&LeaseRequest {
            task_id: "load-cad".to_string(),
            attempt_id: format!("{tag}-{}", desk.index),
            profile: Some(desk.profile.clone()),
        })
        .await;
    desk.add("lease", ms(started.elapsed()));
    let session = match lease {
        Ok(lease) => lease.session_id,
        Err(error) => {
            desk.failed("lease", &error);
            return desk;
        }
    };
    let session_dir = StateDir::new(&state_dir).session(&session);
    desk.session = Some(session.clone());
    let started = Instant::now();
    let reset = client
        .reset(
            &session,
            &ResetRequest {
                request_id: "load-reset".to_string(),
            },
        )
        .await;
    desk.add("reset", ms(started.elapsed()));
    // Read even after a failed reset: whatever it started must be gone after release.
    desk.footprint = Footprint::read(&session_dir);
    match reset {
        Ok(_) => desk.ready = true,
        Err(error) => desk.failed("reset", &error),
    }
    desk
}

/// Reads every desktop's PSS and RSS in one pass; keeps each one's larger reading.
fn read_memory(desks: &mut [Desk]) {
    let children = crate::bench::memory::child_map();
    for desk in desks.iter_mut().filter(|desk| desk.ready) {
        let (pss, rss) = desk.footprint.memory_kib(&children);
        desk.pss_kib = desk.pss_kib.max(pss);
        desk.rss_kib = desk.rss_kib.max(rss);
    }
}

async fn drive(client: Client, mut desk: Desk, display: DisplaySize) -> Desk {
    let Some(session) = desk.session.clone().filter(|_| desk.ready) else {
        return desk;
    };
    let started = Instant::now();
    for (action_idx, action) in super::cad_script::script(&desk.profile, display)
        .into_iter()
        .enumerate()
    {
        let request = ActionRequest {
            request_id: format!("load-{action_idx}"),
            expected_action_index: action_idx as u64,
            screenshot_id: None,
            action,
        };
        let sent = Instant::now();
        let answer = client.act(&session, &request).await;
        let elapsed = ms(sent.elapsed());
        desk.add("execute", elapsed);
        match answer {
            Ok(_) => desk.n_acknowledged += 1,
            Err(error) => {
                // The script is a sequence: what follows a refused step means nothing.
                desk.failed("execute", &error);
                return desk;
            }
        }
    }
    desk.script_ms = ms(started.elapsed());
    let started = Instant::now();
    let checkpoint = client.checkpoint(&session).await;
    desk.add("checkpoint", ms(started.elapsed()));
    if let Err(error) = checkpoint {
        desk.failed("checkpoint", &error);
        return desk;
    }
    let started = Instant::now();
    let artifact = client.artifact(&session).await;
    desk.add("artifact", ms(started.elapsed()));
    match artifact.map(|artifact| desk_contract::b64::decode(&artifact.bytes_base64)) {
        Ok(Some(bytes)) => desk.artifact = Some(bytes),
        Ok(None) => desk
            .untyped_failures
            .push("artifact: its bytes are not base64".to_string()),
        Err(error) => desk.failed("artifact", &error),
    }
    desk
}

async fn release(client: Client, mut desk: Desk) -> Desk {
    let Some(session) = desk.session.clone() else {
        return desk;
    };
    let started = Instant::now();
    let released = client.release(&session).await;
    desk.add("release", ms(started.elapsed()));
    if let Err(error) = released {
        desk.failed("release", &error);
    }
    desk
}

/// Checks the saved file with desk-cad: LibreCAD's DXF in here, FreeCAD's FCStd by the
/// sandboxed inspector (a headless FreeCAD of its own, one at a time).
async fn check_outcome(desk: &mut Desk, dir: &Path) {
    let Some(bytes) = desk.artifact.take() else {
        if desk.ready {
            desk.outcome_problems.push("no saved file".to_string());
        }
        return;
    };
    desk.outcome_problems = match desk.profile.as_str() {
        "freecad" => match inspect(bytes, dir.join(format!("{}.FCStd", desk.index))).await {
            Ok(facts) => super::cad_script::check_fcstd(&facts),
            Err(error) => vec![format!("the inspector failed: {error:#}")],
        },
        _ => super::cad_script::check_dxf(&bytes),
    };
    desk.outcome_checked = true;
}

async fn inspect(bytes: Vec<u8>, path: PathBuf) -> Result<desk_cad::solid::FcstdFacts> {
    tokio::task::spawn_blocking(move || {
        std::fs::write(&path, &bytes).context("failed to write the FCStd")?;
        Ok(desk_cad::solid::inspect_fcstd(&path)?)
    })
    .await
    .context("the inspector's task panicked")?
}
