//! `deskbroker bench …`: the CAD benchmark (to be filled in).

use anyhow::Result;
use clap::Subcommand;

/// Benchmark subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Score a DXF against a task's gold drawing.
    Score,
}

pub(crate) async fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Score => anyhow::bail!("not implemented yet"),
    }
}
