//! The ledger's records of a session's operations other than actions: each writes its signed
//! evidence first and the session row last (through [`Door::commit`]), the order an action's
//! records keep (journal, evidence, row). A failed evidence record leaves the row as it was.
//! Kept by the same rule: a kill's `session_killed` before the row says `killed`.

use crate::broker::Inner;
use crate::door::Door;
use crate::error::BrokerError;
use crate::evidence;
use crate::session::Lifecycle;
use desk_evidence::record::SessionKilled;

/// A frame handed out by a screenshot or a zoom (`png`, as handed out): the next sequence, the
/// lease renewed, its `screenshot` record, then the row. Returns the frame's sequence.
pub(crate) fn screenshot(
    inner: &Inner,
    door: &mut Door<'_>,
    png: &[u8],
) -> Result<u64, BrokerError> {
    let sequence = door.session().last_sequence + 1;
    door.session_mut().last_sequence = sequence;
    door.renew();
    evidence::screenshot(inner.evidence(), door.session(), sequence, png)?;
    door.commit()?;
    Ok(sequence)
}

/// What a checkpoint kept.
pub(crate) struct Checkpointed<'b> {
    /// The copy's file name in the evidence (`artifact/<file_name>`).
    pub(crate) file_name: &'b str,
    pub(crate) bytes: &'b [u8],
    pub(crate) sha256: &'b str,
    pub(crate) size: u64,
    /// `controller_save` or `already_saved`.
    pub(crate) method: &'b str,
}

/// A checkpoint: its `checkpoint` record, then the row with its digest, size and method and
/// the lease renewed.
pub(crate) fn checkpoint(
    inner: &Inner,
    door: &mut Door<'_>,
    kept: Checkpointed<'_>,
) -> Result<(), BrokerError> {
    evidence::checkpoint(
        inner.evidence(),
        door.session(),
        kept.file_name,
        kept.bytes,
        kept.method,
    )?;
    let session = door.session_mut();
    session.checkpoint_sha = Some(kept.sha256.to_string());
    session.checkpoint_size = Some(kept.size);
    session.checkpoint_method = Some(kept.method.to_string());
    door.renew();
    door.commit()
}

/// A release: its `session_released` record, then `teardown` (the session's files), then the
/// row `released`.
pub(crate) fn released(
    inner: &Inner,
    door: &mut Door<'_>,
    released: Lifecycle,
    teardown: impl FnOnce() -> Result<(), BrokerError>,
) -> Result<(), BrokerError> {
    evidence::session_released(inner.evidence(), door.session())?;
    teardown()?;
    door.session_mut().lifecycle = released;
    door.commit()
}

/// A kill the broker learns of (`reconcile.rs`): the `session_killed` record (the kill's
/// receipt replayed into the session's evidence), then the row `killed`.
pub(crate) fn killed(
    inner: &Inner,
    door: &mut Door<'_>,
    killed: Lifecycle,
    receipt: &SessionKilled,
) -> Result<(), BrokerError> {
    evidence::session_killed(inner.evidence(), door.session(), receipt)?;
    door.session_mut().lifecycle = killed;
    door.commit()
}
