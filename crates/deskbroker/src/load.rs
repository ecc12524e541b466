//! `deskbroker load`: many concurrent sessions through the real API; p50/p95 per operation and
//! memory per session.

use clap::Args;

/// `deskbroker load`.
#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// Concurrent sessions.
    #[arg(long, default_value_t = 8)]
    pub(crate) sessions: usize,
}

pub(crate) async fn run(args: LoadArgs) -> anyhow::Result<()> {
    anyhow::bail!("load is not built yet ({} sessions)", args.sessions)
}
