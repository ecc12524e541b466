//! `deskbroker evidence …`: export a session's signed evidence bundle and verify one.
//!
//! `export` reads the broker's state directory only (safe while the broker runs) and signs the
//! bundle's manifest with the broker's evidence key. `verify` needs nothing but the bundle and
//! the public key; it prints `OK` with counts, or names the first bad record or file and fails.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

/// `deskbroker evidence`.
#[derive(Debug, Subcommand)]
pub(crate) enum EvidenceCommand {
    /// Export a session's evidence (journal, logs, artifact, frames) into a new bundle directory.
    Export {
        /// The session id.
        session: String,
        /// The broker's state directory.
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// The bundle directory to create (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// The broker's signing key, if not `<state_dir>/evidence/signing.key`.
        #[arg(long)]
        signing_key: Option<PathBuf>,
    },
    /// Verify a bundle's signatures, hash chain and digests; names the first bad record.
    Verify {
        /// The bundle directory.
        bundle: PathBuf,
        /// The broker's evidence public key file (`<state_dir>/evidence/evidence.pub`).
        #[arg(long)]
        key: PathBuf,
        /// The watchdog's public key file (`<state_dir>.watchdog/watchdog.pub`): the manifest
        /// must name exactly this key, and every `watchdog` terminal receipt verifies under it.
        #[arg(long)]
        watchdog_key: Option<PathBuf>,
        /// The observer's public key file (`<state_dir>.observer/observer.pub`): every signed
        /// observation the bundle carries must verify under it and be the one its
        /// `observer_observation` record names (without it: checked against the record's
        /// digest only).
        #[arg(long)]
        observer_key: Option<PathBuf>,
    },
}

pub(crate) async fn run(command: EvidenceCommand) -> anyhow::Result<()> {
    match command {
        EvidenceCommand::Export {
            session,
            state_dir,
            out,
            signing_key,
        } => {
            let state_dir = state_dir.unwrap_or_else(crate::paths::default_state_dir);
            let session = desk_broker::SessionId::parse(&session).with_context(|| {
                format!("evidence export failed: {session:?} is not a session id")
            })?;
            let manifest = tokio::task::spawn_blocking({
                let out = out.clone();
                move || {
                    desk_broker::export_evidence(&state_dir, &session, signing_key.as_deref(), &out)
                }
            })
            .await?
            .context("evidence export failed")?;
            outln!(
                "exported {} to {}: {} records, {} files, {} not retained (deleted at release), \
                 released: {}, signer {}",
                manifest.session_id,
                out.display(),
                manifest.journal.n_records,
                manifest.files.len(),
                manifest.not_retained.len(),
                manifest.journal.released,
                manifest.signer_fingerprint
            );
            Ok(())
        }
        EvidenceCommand::Verify {
            bundle,
            key,
            watchdog_key,
            observer_key,
        } => {
            let report = tokio::task::spawn_blocking({
                let bundle = bundle.clone();
                move || {
                    desk_broker::verify_evidence_observed(
                        &bundle,
                        &key,
                        watchdog_key.as_deref(),
                        observer_key.as_deref(),
                    )
                }
            })
            .await?
            .with_context(|| format!("evidence verify FAILED for {}", bundle.display()))?;
            let artifacts: Vec<String> = report
                .artifacts
                .iter()
                .map(|(name, sha256)| format!("{name} sha256:{sha256}"))
                .collect();
            outln!(
                "OK {}: session {}, {} records, {} actions, {} receipts, {} frames, {} files, \
                 released: {}, artifacts: [{}], not retained: [{}], terminal receipts: {}, \
                 observations: {} ({} signatures checked, observer {}), signer {}, watchdog {}",
                bundle.display(),
                report.session_id,
                report.n_records,
                report.n_actions,
                report.n_receipts,
                report.n_frames,
                report.n_files,
                report.released,
                artifacts.join(", "),
                report.not_retained.join(", "),
                report.n_terminal_receipts,
                report.n_observations,
                report.n_observation_signatures,
                report.observer_fingerprint.as_deref().unwrap_or("none"),
                report.signer_fingerprint,
                report.watchdog_fingerprint.as_deref().unwrap_or("none")
            );
            Ok(())
        }
    }
}
