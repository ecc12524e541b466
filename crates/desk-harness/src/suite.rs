//! A benchmark run: rollouts of many tasks in sequence, one directory each, then
//! `summary.json`, `report.html` and a terminal table.
//!
//! Layout of the out directory: `rollouts/<task-id>/{rollout.json, frames/, events.json,
//! frame_events.json, attempt.dxf, reference.png, candidate.png}`, `summary.json`,
//! `report.html`. Gold files are read from the private gold directory for the scorer only;
//! agents that need gold (the oracle) get it through their factory. Each task is played in
//! the app profile it names and judged by its kind's judge (`desk_cad::score_task`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use desk_cad::corpus::GeneratedPart;
use desk_cad::{
    CorpusVersion, Gold, Task, generate_corpus_version, load_task_gold, load_task_list,
};
use desk_client::Client;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::agent::{Agent, AgentError};
use crate::error::{HarnessError, write_json};
use crate::oracle::OracleAgent;
use crate::plan::{RunInfo, RunPlan, speedup};
use crate::progress::RunProgress;
use crate::record::RolloutRecord;
use crate::rollout::{RolloutOptions, run_rollout};
use crate::summary::summarize;

/// Builds the agent for one task. Model adapters plug in here.
pub type AgentFactory<'a> = dyn FnMut(&Task) -> Result<Box<dyn Agent>, AgentError> + 'a;

/// Where a run reads and writes.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// Public corpus directory (`tasks.json`, `references/`).
    pub public_dir: PathBuf,
    /// Scorer-private gold directory.
    pub gold_dir: PathBuf,
    /// The run's out directory.
    pub out_dir: PathBuf,
    /// The deskbroker version.
    pub broker_version: String,
    /// App, X server, window manager, OS and deskbroker versions, recorded in every result.
    pub versions: crate::versions::SoftwareVersions,
    /// Attempt id of every lease of this run; rollout ids are `{task}-{attempt}`.
    pub attempt_id: String,
    /// App profile; the broker's default when `None`.
    pub profile: Option<String>,
    /// A lower action budget (tests).
    pub max_actions: Option<u64>,
    /// A lower wall time (tests).
    pub wall_time: Option<Duration>,
    /// See [`crate::RolloutOptions::require_sandbox`].
    pub require_sandbox: bool,
}

/// The oracle factory: reads each task's gold from `gold_dir`. A 3D task's oracle follows the
/// FreeCAD recipe for the part the corpus generator made for that task id; the task's prompt
/// must be the generator's, else the oracle fails at start rather than build another part.
pub fn oracle_factory(
    gold_dir: PathBuf,
) -> impl FnMut(&Task) -> Result<Box<dyn Agent>, AgentError> {
    let mut parts: Option<Vec<GeneratedPart>> = None;
    move |task: &Task| {
        let gold = load_task_gold(&gold_dir, task).map_err(|error| AgentError {
            agent: "oracle".to_owned(),
            message: format!("failed to read the gold of {}: {error}", task.id),
        })?;
        Ok(match gold {
            Gold::Drawing(model) => Box::new(OracleAgent::new(&model)) as Box<dyn Agent>,
            Gold::Part(_) => {
                let parts = parts
                    .get_or_insert_with(|| generate_corpus_version(CorpusVersion::default()).1);
                match parts
                    .iter()
                    .find(|item| item.task.id == task.id && item.task.prompt == task.prompt)
                {
                    Some(item) => Box::new(OracleAgent::for_part(&item.part)),
                    None => Box::new(OracleAgent::unsolved(
                        "the task is not a corpus part the FreeCAD recipe knows",
                    )),
                }
            }
        })
    }
}

/// Runs every task in order, one at a time, and writes the records, `summary.json` and
/// `report.html`.
pub async fn run_suite(
    client: &Client,
    tasks: &[Task],
    config: &SuiteConfig,
    factory: &mut AgentFactory<'_>,
) -> Result<(Summary, Vec<RolloutRecord>), HarnessError> {
    run_suite_with(client, tasks, config, &RunPlan::default(), factory).await
}

/// Runs every task with up to `plan.jobs` rollouts at once, each on its own session, and writes
/// the records, `summary.json` and `report.html`. Agents are built and rollouts started longest
/// budget first (`plan::start_order`), in task order within a budget; progress (`progress.rs`) reports each rollout as it ends, and results are summarized
/// in task order, so the records equal a sequential run's except for timings. A local failure stops new rollouts; those already
/// running finish (and release their sessions) before it is returned.
pub async fn run_suite_with(
    client: &Client,
    tasks: &[Task],
    config: &SuiteConfig,
    plan: &RunPlan,
    factory: &mut AgentFactory<'_>,
) -> Result<(Summary, Vec<RolloutRecord>), HarnessError> {
    let started = Instant::now();
    let corpus_version = load_task_list(&config.public_dir)?.corpus_version;
    let mut progress = RunProgress::new(tasks.len());
    let shared = Arc::new((config.clone(), corpus_version.clone()));
    let slots = Arc::new(Semaphore::new(plan.jobs.max(1) as usize));
    let mut running: Vec<Running> = Vec::new();
    let mut finished: Vec<Option<RolloutRecord>> = vec![None; tasks.len()];
    let mut failure = None;
    let order = crate::plan::start_order(tasks, |task| {
        crate::rollout::wall_time_ceiling_s(task.drawing_type)
    });
    // `order` is a permutation of the tasks' positions.
    for (task_idx, task) in order.into_iter().map(|idx| (idx, &tasks[idx])) {
        // A slot frees when a rollout ends; report every finished one meanwhile.
        let permit = loop {
            drain_finished(&mut running, &mut finished, &mut failure, &mut progress).await;
            if failure.is_some() {
                break None;
            }
            if let Ok(permit) = Arc::clone(&slots).try_acquire_owned() {
                break Some(permit);
            }
            // Every slot is busy: look again shortly (a rollout lasts seconds at least).
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let Some(permit) = permit else { break };
        let agent = match factory(task) {
            Ok(agent) => agent,
            Err(source) => {
                failure = Some(HarnessError::Agent {
                    task_id: task.id.to_string(),
                    source,
                });
                break;
            }
        };
        let (client, task_owned, config) = (client.clone(), task.clone(), Arc::clone(&shared));
        let handle = tokio::spawn(async move {
            let (config, corpus_version) = (&config.0, &config.1);
            let result = run_one(&client, &task_owned, config, corpus_version, agent).await;
            drop(permit);
            result
        });
        progress.started();
        tracing::debug!(task = %task.id, "rollout started");
        running.push((task_idx, task.id.to_string(), handle));
    }
    while !running.is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
        drain_finished(&mut running, &mut finished, &mut failure, &mut progress).await;
    }
    drop(progress);
    if let Some(error) = failure {
        return Err(error);
    }
    let records: Vec<RolloutRecord> = finished.into_iter().flatten().collect();
    let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut summary = summarize(&records, &config.broker_version, &config.versions, wall_ms);
    summary.corpus_version = corpus_version;
    summary.run = run_info(&summary, plan);
    write_json(&config.out_dir.join("summary.json"), &summary)?;
    crate::report::write_report(&config.out_dir, &summary, &records)?;
    Ok((summary, records))
}

/// A rollout being played: its task's position in the run, its id, its task.
type Running = (
    usize,
    String,
    JoinHandle<Result<RolloutRecord, HarnessError>>,
);

/// Collects every finished rollout of `running` as it finishes (so progress counts what is
/// done, whatever the order), keeping its record at its task's position in `finished`. The
/// first failure is kept; later results are still collected.
async fn drain_finished(
    running: &mut Vec<Running>,
    finished: &mut [Option<RolloutRecord>],
    failure: &mut Option<HarnessError>,
    progress: &mut RunProgress,
) {
    let mut idx = 0;
    while idx < running.len() {
        if !running[idx].2.is_finished() {
            idx += 1;
            continue;
        }
        let (task_idx, task_id, handle) = running.swap_remove(idx);
        let result = handle.await.unwrap_or_else(|error| {
            Err(HarnessError::RolloutTask {
                task_id,
                message: error.to_string(),
            })
        });
        match result {
            Ok(record) => {
                progress.finished(&record);
                if let Some(slot) = finished.get_mut(task_idx) {
                    *slot = Some(record);
                }
            }
            Err(error) => {
                progress.failed();
                failure.get_or_insert(error);
            }
        }
    }
}

async fn run_one(
    client: &Client,
    task: &Task,
    config: &SuiteConfig,
    corpus_version: &str,
    mut agent: Box<dyn Agent>,
) -> Result<RolloutRecord, HarnessError> {
    let reference_path = config.public_dir.join(&task.reference_image);
    let reference = std::fs::read(&reference_path).map_err(|source| HarnessError::Io {
        op: "read",
        path: reference_path.clone(),
        source,
    })?;
    let gold = load_task_gold(&config.gold_dir, task)?;
    let options = RolloutOptions {
        rollout_id: format!("{}-{}", task.id, config.attempt_id),
        attempt_id: config.attempt_id.clone(),
        dir: rollout_dir(&config.out_dir, task.id.as_str()),
        broker_version: config.broker_version.clone(),
        versions: match &task.profile {
            Some(profile) if config.profile.as_ref() != Some(profile) => {
                config.versions.for_app(profile)
            }
            _ => config.versions.clone(),
        },
        profile: config.profile.clone(),
        corpus_version: corpus_version.to_owned(),
        max_actions: config.max_actions,
        wall_time: config.wall_time,
        require_sandbox: config.require_sandbox,
    };
    run_rollout(client, task, &reference, &gold, agent.as_mut(), &options).await
}

/// How the run was spread out, from the plan and the finished summary.
fn run_info(summary: &Summary, plan: &RunPlan) -> RunInfo {
    let sum_rollout_ms: u64 = summary.rollouts.iter().map(|row| row.total_ms).sum();
    RunInfo {
        jobs: plan.jobs,
        jobs_reason: plan.jobs_reason.clone(),
        shard: plan.shard,
        broker: plan.broker.clone(),
        sum_rollout_ms,
        speedup: speedup(sum_rollout_ms, summary.total_ms),
        memory: plan.memory.as_ref().and_then(|read| read()),
        merged_from: Vec::new(),
    }
}

pub use crate::summary::{
    KindMean, Summary, SummaryRow, format_table, kind_means, kind_name, rollout_dir,
};
