//! The flags of `deskbroker load`, apart from the run (`load.rs`) so that the report names them
//! without naming the run.

use std::path::PathBuf;

use clap::Args;

use crate::cli::BrokerArgs;

/// `deskbroker load`.
#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// Concurrent sessions (the broker admits at most 8 unreleased sessions).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub(crate) sessions: u16,
    /// Actions per session.
    #[arg(long, default_value_t = 300)]
    pub(crate) actions: usize,
    /// The `desk-probe` binary [default: next to this executable, or in the parent directory].
    #[arg(long)]
    pub(crate) probe: Option<PathBuf>,
    /// Instead of the action mix: measure the watchdog alone. A `deskbroker serve` child runs
    /// `--sessions` probe sessions with a 9 s task limit and is SIGSTOPped once all are handed
    /// off; reports how long after its limit each session was stopped (target: within 1 s).
    #[arg(long)]
    pub(crate) frozen_kill: bool,
    /// Where to write the JSON report.
    #[arg(long, default_value = "load-report.json")]
    pub(crate) json: PathBuf,
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
}
