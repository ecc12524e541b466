//! `deskbroker evidence …`: export a session's signed evidence bundle and verify one.

use std::path::PathBuf;

use clap::Subcommand;

/// `deskbroker evidence`.
#[derive(Debug, Subcommand)]
pub(crate) enum EvidenceCommand {
    /// Verify a bundle's signatures, hash chain and digests; names the first bad record.
    Verify {
        /// The bundle directory.
        bundle: PathBuf,
        /// The broker's evidence public key file.
        #[arg(long)]
        key: PathBuf,
    },
}

pub(crate) async fn run(command: EvidenceCommand) -> anyhow::Result<()> {
    match command {
        EvidenceCommand::Verify { bundle, key } => anyhow::bail!(
            "evidence verify is not built yet ({} with {})",
            bundle.display(),
            key.display()
        ),
    }
}
