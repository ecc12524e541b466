//! Who signs a kill's terminal receipt and where it is spooled ([`Signer`]), and reading every
//! spooled receipt back verified ([`spooled_receipts`]).
//!
//! Two signers, two spools: the watchdog signs with its own key (`watchdog/key.rs`) into
//! `<state_dir>.watchdog/spool/terminal.ndjson`; an operator's kill (`deskbroker kill`, the
//! broker's kill route) and the broker's census before an action sign with the broker's
//! evidence key into `<state_dir>/spool/terminal.ndjson`. Invariant: a receipt whose source is
//! `watchdog` is accepted only from the watchdog's spool under the watchdog's key; one in the
//! broker's spool claiming to be the watchdog's is refused (logged, never replayed), and
//! `evidence verify` refuses it too (`desk-evidence` `bundle/terminal.rs`).

use std::path::{Path, PathBuf};

use desk_desktop::StateDir;
use desk_evidence::record::{SessionKilled, WATCHDOG_SOURCE};
use desk_evidence::{SigningKey, VerifyingKey};

use crate::error::BrokerError;

/// The key a kill signs its terminal receipt with and the spool the receipt goes to.
#[derive(Clone)]
pub struct Signer {
    pub(crate) key: SigningKey,
    pub(crate) spool: PathBuf,
    pub(crate) watchdog: bool,
    /// The watchdog's identity, stamped on its receipts; `None` for the broker's key.
    pub(crate) identity: Option<crate::watchdog::identity::WatchdogIdentity>,
}

impl Signer {
    /// The broker's evidence key (`configured`, or `<state_dir>/evidence/signing.key`),
    /// spooling into `<state_dir>/spool`: an operator's kill or the broker's census.
    pub fn evidence(state_dir: &Path, configured: Option<&Path>) -> Result<Self, BrokerError> {
        Ok(Self {
            key: crate::evidence::load_signing_key(state_dir, configured)?,
            spool: StateDir::new(state_dir).spool(),
            watchdog: false,
            identity: None,
        })
    }

    /// The watchdog's own key, spooling into its own directory; its receipts name `identity`.
    pub(crate) fn watchdog(
        state_dir: &Path,
        key: SigningKey,
        identity: crate::watchdog::identity::WatchdogIdentity,
    ) -> Self {
        Self {
            key,
            spool: crate::watchdog::key::spool_path(state_dir),
            watchdog: true,
            identity: Some(identity),
        }
    }

    /// Whether this is the watchdog's key.
    pub fn is_watchdog(&self) -> bool {
        self.watchdog
    }
}

fn read(path: &Path, key: Option<VerifyingKey>) -> Result<Vec<SessionKilled>, BrokerError> {
    let evidence_error = |source| BrokerError::Evidence {
        operation: "read the spool",
        source: Box::new(source),
    };
    if !path.exists() {
        return Ok(Vec::new());
    }
    let key = key.ok_or_else(|| {
        BrokerError::Watchdog(format!(
            "{} exists but no public key to verify it with",
            path.display()
        ))
    })?;
    Ok(desk_evidence::spool::read_signed(path, &key)
        .map_err(evidence_error)?
        .into_iter()
        .map(|(spooled, envelope)| SessionKilled {
            signed_receipt: Some(envelope),
            ..spooled.receipt
        })
        .collect())
}

/// Every receipt of both spools, verified, each with its spool envelope as
/// `signed_receipt`; a `watchdog` receipt from the broker's spool is dropped and logged.
pub(crate) fn spooled_receipts(state: &StateDir) -> Result<Vec<SessionKilled>, BrokerError> {
    let evidence_public = || {
        let path = crate::evidence::public_key_path(state.path());
        if !path.exists() {
            return Ok(None);
        }
        VerifyingKey::read(&path)
            .map(Some)
            .map_err(|source| BrokerError::Evidence {
                operation: "read the evidence public key",
                source: Box::new(source),
            })
    };
    let mut receipts: Vec<SessionKilled> = read(&state.spool(), evidence_public()?)?
        .into_iter()
        .filter(|receipt| {
            let forged = receipt.source == WATCHDOG_SOURCE;
            if forged {
                tracing::error!(
                    record_id = receipt.record_id,
                    "a watchdog receipt signed by the evidence key is refused"
                );
            }
            !forged
        })
        .collect();
    receipts.extend(read(
        &crate::watchdog::key::spool_path(state.path()),
        crate::watchdog::key::read_public_key(state.path())?,
    )?);
    Ok(receipts)
}
