//! `deskbroker certs …`: a local CA, server and client identities, and orchestration credentials
//! for a first TLS setup.

use clap::Subcommand;

/// `deskbroker certs`.
#[derive(Debug, Subcommand)]
pub(crate) enum CertsCommand {
    /// Create a local CA, a server identity and a client identity in a directory.
    Init {
        /// Directory to write the PEM files into.
        #[arg(long)]
        dir: std::path::PathBuf,
    },
}

pub(crate) async fn run(command: CertsCommand) -> anyhow::Result<()> {
    match command {
        CertsCommand::Init { dir } => {
            anyhow::bail!(
                "certs init is not built yet (would write {})",
                dir.display()
            )
        }
    }
}
