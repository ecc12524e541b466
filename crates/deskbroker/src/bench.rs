//! `deskbroker bench …`: the CAD benchmark. `run` starts an in-process broker and plays tasks
//! with an agent (each task in the app profile it names: LibreCAD for 2D, FreeCAD for 3D),
//! `score` scores any file against a task's gold with the judge of the task's kind (DXF: the
//! 2D judge; FCStd: the sandboxed 3D judge), `corpus` writes the corpus, `validity` checks both
//! judges against held-out perturbations of every task's gold (`bench/validity.rs`).
//!
//! The corpus (`--corpus-version v1|v2|v3`, default v3) is generated deterministically into a
//! cache (`$XDG_CACHE_HOME/deskbroker/corpus/<version>/{public,private}`, else `~/.cache/…`)
//! when absent. Gold (`private/`) is read only here for the scorer and the oracle; it is never
//! handed to the broker or the desktop.
//!
//! Spreading a run out: `--jobs N` plays N rollouts at once (one broker, N desktops; by
//! default what the machine holds, `bench/jobs.rs`),
//! `--shard I/N` plays one slice of the selection, `--broker-socket` plays against a running
//! broker, and `merge` joins out directories (`bench/multi.rs`).
//!
//! Plugging in a model agent: add a variant to [`AgentKind`] and an arm in [`agent_factory`]
//! returning a factory that builds a `Box<dyn desk_harness::Agent>` per task.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use desk_cad::{Split, Task, load_task_gold, load_tasks, score_task};
use desk_harness::suite::rollout_dir;
use desk_harness::{
    Agent, AgentError, AgentFactory, ReplayAgent, SuiteConfig, format_table, oracle_factory,
    run_suite_with,
};

mod corpus;
mod jobs;
pub(crate) mod memory;
mod multi;
mod policy;
mod settle_table;
mod validity;

use corpus::{CorpusArgs, CorpusLocation, SplitArg, corpus, corpus_dirs};

use crate::cli::BrokerArgs;
use crate::local::LocalBroker;
use crate::models::{ModelArgs, model_factory};

/// Benchmark subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Run an agent on tasks: in-process broker, one rollout per task, results in --out.
    Run(Box<RunArgs>),
    /// Score a file against a task's gold (DXF: 2D judge, FCStd: 3D judge); prints the report
    /// as JSON.
    Score(ScoreArgs),
    /// Write the public corpus (tasks.json, reference PNGs) and, with --gold-out, the gold DXFs.
    Corpus(CorpusArgs),
    /// Merge the out directories of shards or runs into one summary.json and report.html.
    Merge(multi::MergeArgs),
    /// Write a page comparing two runs task by task (status, score change, candidate renders).
    Compare(multi::CompareArgs),
    /// Check the judges: each task's gold must outscore held-out perturbations of itself.
    ///
    /// For every selected task, the gold is judged against itself (exactly 1, the same report
    /// twice), then perturbed copies of it must score strictly between 0 and the gold, and
    /// invalid files exactly 0 with the expected zero reason:
    ///
    /// 2D (DXF, written by desk-cad's writer, scored through the file path): a moved and a
    /// scaled entity (a circle where there is one), a removed entity, an extra line, a removed
    /// and a changed dimension, changed text and a wrong layer where the gold has them; an empty
    /// file, a non-DXF, a raster IMAGE, an xref and a missing file score 0.
    ///
    /// 3D (FCStd, made by trusted FreeCAD in the judge's sandbox; the gold is rebuilt from its
    /// spec): a moved, removed, extra and scaled hole or feature, a view missing from the
    /// sheet, the sheet under another name, the solid without its sheet; a mesh of the gold, a
    /// Part::FeaturePython trap, a lone face, the sheet alone, a shape member failing its CRC,
    /// a garbage zip, a non-zip, a symlink, an empty and a missing file score 0. About 10 s of
    /// freecadcmd per 3D task.
    ///
    /// Prints a table (task, kind, cases passed, gold score, min margin = the gold's score minus
    /// the best perturbed score, time) and writes --out/validity.json; exits non-zero when any
    /// case fails. Example: deskbroker bench validity --split all --jobs 2
    Validity(validity::ValidityArgs),
}

/// The agent that plays. Model adapters (crate `desk-models`) add variants here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AgentKind {
    /// Solves each task from its gold drawing through the GUI (proves solvability).
    Oracle,
    /// Re-runs recorded batches from --replay (a rollout.json, or a previous out directory).
    Replay,
    /// A model through one of the model APIs (--api, --model; key from the environment).
    Model,
}

impl AgentKind {
    fn name(self) -> &'static str {
        match self {
            AgentKind::Oracle => "oracle",
            AgentKind::Replay => "replay",
            AgentKind::Model => "model",
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Which split to run.
    #[arg(long, value_enum, default_value = "dev")]
    pub(crate) split: SplitArg,
    /// Run only these task ids (repeatable); overrides --split.
    #[arg(long = "task")]
    pub(crate) tasks: Vec<String>,
    /// The agent.
    #[arg(long, value_enum, default_value = "oracle")]
    pub(crate) agent: AgentKind,
    /// For --agent replay: a rollout.json, or an out directory of an earlier run.
    #[arg(long)]
    pub(crate) replay: Option<PathBuf>,
    /// Out directory: rollouts/, summary.json, report.html.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Attempt id of the leases. [default: <agent>-<unix ms>]
    #[arg(long)]
    pub(crate) attempt_id: Option<String>,
    #[command(flatten)]
    pub(crate) policy: policy::PolicyArgs,
    #[command(flatten)]
    pub(crate) corpus: CorpusLocation,
    #[command(flatten)]
    pub(crate) spread: multi::SpreadArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    /// The task id, e.g. task-004.
    #[arg(long)]
    pub(crate) task: String,
    /// The candidate file (any file; one that is not the task's kind, DXF or FCStd, scores 0).
    #[arg(long)]
    pub(crate) candidate: PathBuf,
    #[command(flatten)]
    pub(crate) corpus: CorpusLocation,
}

pub(crate) async fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Run(args) => run_bench(*args).await,
        BenchCommand::Score(args) => score(&args),
        BenchCommand::Corpus(args) => corpus(&args),
        BenchCommand::Merge(args) => multi::merge(&args),
        BenchCommand::Compare(args) => multi::compare(&args),
        BenchCommand::Validity(args) => validity::validity(&args),
    }
}

fn select_tasks(all: Vec<Task>, args: &RunArgs, replay_task: Option<&str>) -> Result<Vec<Task>> {
    let mut wanted: Vec<String> = args.tasks.clone();
    if wanted.is_empty()
        && let Some(task) = replay_task
    {
        wanted.push(task.to_owned());
    }
    if !wanted.is_empty() {
        for id in &wanted {
            if !all.iter().any(|task| task.id.as_str() == id) {
                bail!("unknown task {id}");
            }
        }
        return Ok(all
            .into_iter()
            .filter(|task| wanted.iter().any(|id| id == task.id.as_str()))
            .collect());
    }
    Ok(all
        .into_iter()
        .filter(|task| match args.split {
            SplitArg::All => true,
            SplitArg::Dev => task.split == Split::Dev,
            SplitArg::Eval => task.split == Split::Eval,
        })
        .collect())
}

/// The hook for agents: one factory per run, called once per task.
pub(crate) fn agent_factory(
    kind: AgentKind,
    replay: Option<&Path>,
    model: &ModelArgs,
    gold_dir: &Path,
) -> Result<Box<AgentFactory<'static>>> {
    Ok(match kind {
        AgentKind::Model => Box::new(model_factory(model.config()?)),
        AgentKind::Oracle => Box::new(oracle_factory(gold_dir.to_owned())),
        AgentKind::Replay => {
            let source = replay
                .context("--agent replay needs --replay FILE|DIR")?
                .to_owned();
            Box::new(move |task: &Task| {
                let file = if source.is_dir() {
                    rollout_dir(&source, task.id.as_str()).join(desk_harness::record::ROLLOUT_FILE)
                } else {
                    source.clone()
                };
                let agent = ReplayAgent::from_file(&file).map_err(|error| AgentError {
                    agent: "replay".to_owned(),
                    message: format!("{:#}", anyhow::Error::from(error)),
                })?;
                Ok(Box::new(agent) as Box<dyn Agent>)
            })
        }
    })
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

async fn run_bench(args: RunArgs) -> Result<()> {
    let (public_dir, gold_dir) = corpus_dirs(&args.corpus)?;
    let all = load_tasks(&public_dir).context("failed to load tasks.json")?;
    let replay_task = match (&args.replay, args.agent) {
        (Some(file), AgentKind::Replay) if file.is_file() => {
            Some(ReplayAgent::from_file(file)?.task_id().to_owned())
        }
        _ => None,
    };
    let mut tasks = select_tasks(all, &args, replay_task.as_deref())?;
    if tasks.is_empty() {
        bail!("no task selected");
    }
    if let Some(shard) = args.spread.shard {
        tasks = shard.select(&tasks);
        if tasks.is_empty() {
            bail!("shard {shard} of the selection holds no task");
        }
    }
    let mut factory = agent_factory(args.agent, args.replay.as_deref(), &args.model, &gold_dir)?;
    let attempt_id = args
        .attempt_id
        .clone()
        .unwrap_or_else(|| format!("{}-{}", args.agent.name(), unix_ms()));
    run_with_factory(
        &args,
        &public_dir,
        &gold_dir,
        &tasks,
        attempt_id,
        factory.as_mut(),
    )
    .await
}

/// Starts a broker, runs `tasks` with agents from `factory`, prints the table.
pub(crate) async fn run_with_factory(
    args: &RunArgs,
    public_dir: &Path,
    gold_dir: &Path,
    tasks: &[Task],
    attempt_id: String,
    factory: &mut AgentFactory<'_>,
) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("failed to create {}", args.out.display()))?;
    let out = args.out.canonicalize()?;
    let mut broker_args = args.broker.clone();
    // The scorer's gold must be invisible to every desktop, and checked to be at each handoff.
    broker_args.private_paths.push(gold_dir.to_owned());
    if broker_args.state_dir.is_none() {
        broker_args.state_dir = Some(out.join("state"));
    }
    let config = SuiteConfig {
        public_dir: public_dir.to_owned(),
        gold_dir: gold_dir.to_owned(),
        out_dir: out.clone(),
        broker_version: env!("CARGO_PKG_VERSION").to_owned(),
        // The profile name is the app's Debian package for the built-in profiles.
        versions: desk_harness::SoftwareVersions::probe(
            &broker_args.default_profile,
            env!("CARGO_PKG_VERSION"),
            env!("DESKBROKER_COMMIT"),
        ),
        attempt_id,
        profile: Some(broker_args.default_profile.clone()),
        max_actions: None,
        wall_time: None,
        // Every desktop must hand off a verified sandbox: a rollout whose workspace is not
        // verified is not played (`--allow-unsandboxed` lifts this for fake brokers).
        require_sandbox: !args.spread.allow_unsandboxed,
    };
    let (mut plan, jobs) = jobs::plan(&args.spread, tasks, &broker_args.default_profile)?;
    let summary = match &args.spread.broker_socket {
        Some(socket) => {
            // An external broker: its flags (the gold's --private-path) are the operator's.
            let client = multi::external_client(socket).await?;
            run_suite_with(&client, tasks, &config, &plan, factory)
                .await?
                .0
        }
        None => {
            let mut socket = out.join("broker.sock");
            if socket.as_os_str().len() > 100 {
                socket = std::env::temp_dir()
                    .join(format!("deskbroker-bench-{}.sock", std::process::id()));
            }
            let policy = crate::local::read_policy(args.policy.signed(), args.policy.public())?;
            let broker = LocalBroker::start_with_policy(&broker_args, socket, true, policy).await?;
            let sampler = broker_args.state_dir.as_deref().map(memory::Sampler::start);
            plan.memory = sampler.as_ref().map(memory::Sampler::reading);
            // An interrupted run (SIGINT, SIGTERM) still stops its desktops, rather than
            // leaving them to the lease expiry.
            let client = broker.client();
            let result = tokio::select! {
                result = run_suite_with(&client, tasks, &config, &plan, factory) => {
                    result.map_err(anyhow::Error::from)
                }
                () = crate::local::shutdown_signal() => Err(anyhow::anyhow!(
                    "interrupted by a signal: the run stopped and its desktops were shut down; \
                     rollouts finished so far are in {}",
                    out.display()
                )),
            };
            if let Some(sampler) = sampler {
                sampler.stop();
            }
            broker.stop().await;
            result?.0
        }
    };
    out!("{}", format_table(&summary));
    settle_table::print(&out, &summary, broker_args.settle_validate_every)?;
    outln!("jobs: {} ({})", jobs.jobs, jobs.reason);
    outln!(
        "results: {} (summary.json, report.html, rollouts/)",
        out.display()
    );
    Ok(())
}

fn score(args: &ScoreArgs) -> Result<()> {
    let (public_dir, gold_dir) = corpus_dirs(&args.corpus)?;
    let tasks = load_tasks(&public_dir)?;
    let task = tasks
        .iter()
        .find(|task| task.id.as_str() == args.task)
        .with_context(|| format!("unknown task {}", args.task))?;
    let gold = load_task_gold(&gold_dir, task)?;
    let report = score_task(&gold, &args.candidate)?;
    outln!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
