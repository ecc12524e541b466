//! The flags that spread a `bench run` out (`--jobs`, `--shard`, `--broker-socket`,
//! `--allow-unsandboxed`), `bench merge` and `bench compare`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use desk_client::Client;
use desk_harness::plan::{BrokerStamp, RunPlan, Shard, parse_jobs};
use desk_harness::{format_table, merge_runs};

fn jobs_value(text: &str) -> Result<u32, String> {
    parse_jobs(text).map_err(|error| error.to_string())
}

fn shard_value(text: &str) -> Result<Shard, String> {
    Shard::parse(text).map_err(|error| error.to_string())
}

#[derive(Debug, Args)]
pub(crate) struct SpreadArgs {
    /// Rollouts played at once, each on its own desktop of the one broker (1 to 32). Results
    /// equal a sequential run's except timings: same records, same order.
    /// [default: what this machine holds: min(cores, available memory / one desktop's memory
    /// limit (LibreCAD 1 GiB, FreeCAD 2 GiB; the largest profile among the tasks), tasks, the
    /// broker's 8 sessions); the summary prints the number chosen and why]
    #[arg(long, value_parser = jobs_value)]
    pub(crate) jobs: Option<u32>,
    /// Play only shard I of N (1-based, 1 <= I <= N): the selected tasks at 0-based positions
    /// p with p % N == I-1. Recorded in summary.json; join shards with `bench merge`.
    #[arg(long, value_name = "I/N", value_parser = shard_value)]
    pub(crate) shard: Option<Shard>,
    /// Play against this running broker (`deskbroker serve`) instead of an in-process one; the
    /// broker flags below are then ignored. The operator must have started it with
    /// `--private-path GOLD` (the gold directory this run scores with): bench cannot see the
    /// broker's flags, so summary.json records the gold's privacy as the operator's.
    /// Each rollout still needs a verified sandbox at its handoff unless --allow-unsandboxed.
    #[arg(long, value_name = "PATH")]
    pub(crate) broker_socket: Option<PathBuf>,
    /// Play on desktops that hand off no verified sandbox (a `serve --backend fake` broker,
    /// or `serve --unsafe-no-sandbox`); recorded in summary.json as sandbox_required=false.
    #[arg(long)]
    pub(crate) allow_unsandboxed: bool,
}

impl SpreadArgs {
    /// The run plan these flags describe, with the broker's stamp, playing `jobs` at once
    /// (chosen for `jobs_reason`).
    pub(crate) fn plan(&self, jobs: u32, jobs_reason: &str) -> RunPlan {
        let (mode, gold) = match &self.broker_socket {
            Some(_) => ("external", "operator"),
            None => ("in_process", "checked_at_each_handoff"),
        };
        RunPlan {
            jobs,
            jobs_reason: Some(jobs_reason.to_owned()),
            shard: self.shard,
            broker: BrokerStamp {
                mode: mode.to_owned(),
                socket: self
                    .broker_socket
                    .as_ref()
                    .map(|path| path.display().to_string()),
                sandbox_required: !self.allow_unsandboxed,
                gold_private_path: gold.to_owned(),
            },
            memory: None,
        }
    }
}

/// A client of the running broker at `socket`, after checking that it answers as a broker.
pub(crate) async fn external_client(socket: &std::path::Path) -> Result<Client> {
    let client = Client::new(socket);
    client
        .openapi()
        .await
        .with_context(|| format!("no deskbroker answers on {}", socket.display()))?;
    Ok(client)
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// Out directories of `bench run` (shards or whole runs), in any order.
    #[arg(required = true, value_name = "DIR")]
    pub(crate) dirs: Vec<PathBuf>,
    /// Where to write the merged summary.json, report.html and rollouts/ (new or empty).
    #[arg(long)]
    pub(crate) out: PathBuf,
}

/// `bench merge DIR... --out DIR`.
pub(crate) fn merge(args: &MergeArgs) -> Result<()> {
    let (summary, _) = merge_runs(&args.dirs, &args.out)?;
    out!("{}", format_table(&summary));
    outln!(
        "merged {} runs into {} (summary.json, report.html, rollouts/)",
        args.dirs.len(),
        args.out.display()
    );
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The first run's out directory (A).
    pub(crate) a: PathBuf,
    /// The second run's out directory (B).
    pub(crate) b: PathBuf,
    /// The page to write. [default: B/compare.html]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// `bench compare A B [--out FILE]`.
pub(crate) fn compare(args: &CompareArgs) -> Result<()> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.b.join("compare.html"));
    desk_harness::report::write_compare(&args.a, &args.b, &out)?;
    outln!("comparison: {}", out.display());
    Ok(())
}
