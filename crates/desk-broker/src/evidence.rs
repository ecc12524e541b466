//! Signed, hash-chained evidence per session (issue 3), written with `desk-evidence`.
//!
//! The broker calls the hooks here at each point the evidence plan (docs/evidence.md) names.

use crate::broker::Inner;
use crate::error::BrokerError;
use crate::store::SessionRow;

/// Where evidence is kept and which key signs it. Part of [`crate::BrokerConfig`].
#[derive(Debug, Clone, Default)]
pub struct EvidenceConfig {}

/// A lease was granted: the session's evidence journal starts.
pub(crate) fn session_started(_inner: &Inner, _session: &SessionRow) -> Result<(), BrokerError> {
    Ok(())
}

/// The session is about to be released (before its directory is deleted).
pub(crate) fn session_released(_inner: &Inner, _session: &SessionRow) -> Result<(), BrokerError> {
    Ok(())
}
