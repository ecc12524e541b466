//! The ledger's records of a session's operations other than actions: each writes its signed
//! evidence first and the session row last (through [`Door::commit`]), the order an action's
//! records keep (journal, evidence, row). A failed evidence record leaves the row as it was.
//! Kept by the same rule: a kill's `session_killed` before the row says `killed`, and a reset's
//! handoff frame file, launch receipt and first `screenshot` before the row says `ready`.
//! A clipboard access changes no row: its `clipboard_access` records are all it leaves.

use desk_contract::api::ResetResponse;

use crate::broker::Inner;
use crate::door::Door;
use crate::error::BrokerError;
use crate::evidence;
use crate::frames;
use crate::session::{Failure, Lifecycle};
use crate::store::SessionRow;
use desk_evidence::record::{ClipboardAccess, SessionKilled};

/// A frame handed out by a screenshot or a zoom (`png`, as handed out, and its `sha256`): the
/// next sequence, the lease renewed, its `screenshot` record, then the row. Returns the frame's
/// sequence.
pub(crate) fn screenshot(
    inner: &Inner,
    door: &mut Door<'_>,
    png: &[u8],
    sha256: &str,
) -> Result<u64, BrokerError> {
    let sequence = door.session().last_sequence + 1;
    door.session_mut().last_sequence = sequence;
    door.renew();
    evidence::screenshot(inner.evidence(), door.session(), sequence, png, sha256)?;
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

/// A reset that failed at the handoff: the session stays `leased` with the reason (status shows
/// it as `last_error`). Only the row: nothing was handed out.
pub(crate) fn reset_failed(door: &mut Door<'_>, failure: Failure) -> Result<(), BrokerError> {
    let failed = door.session().lifecycle.reset_failed(failure)?;
    door.session_mut().lifecycle = failed;
    door.commit()
}

/// What a reset handed off.
pub(crate) struct HandedOff<'b> {
    /// The answer, whose screenshot (sequence, workspace facts) is the handoff's.
    pub(crate) response: &'b ResetResponse,
    /// The handoff frame's bytes.
    pub(crate) png: &'b [u8],
    /// Their SHA-256, as the frame came with it.
    pub(crate) sha256: &'b str,
    pub(crate) captured_at_ms: u64,
    pub(crate) request_id: String,
    pub(crate) reset_sha: String,
    pub(crate) attempt_path: String,
}

/// A verified handoff: the frame file, the launch receipt (what runs in the workspace, signed
/// before the agent's first screenshot is), the `screenshot` record, then the row `ready` with
/// the reset cached (without the screenshot bytes, which live in the frame file) and the lease
/// renewed.
pub(crate) fn handed_off(
    inner: &Inner,
    door: &mut Door<'_>,
    handed: HandedOff<'_>,
) -> Result<(), BrokerError> {
    let sequence = handed.response.screenshot.sequence;
    let session_dir = door.session().dir();
    let mut session = door.session().clone();
    session.lifecycle = session.lifecycle.reset_done()?;
    session.last_sequence = sequence;
    session.reset_request_id = Some(handed.request_id);
    frames::store(&session_dir, sequence, handed.png)?;
    let launched = evidence::launch_receipt(
        &session_dir,
        inner.config.sandbox,
        handed.response.workspace.as_ref(),
    )?;
    if launched.prohibited > 0 {
        tracing::warn!(session_id = %session.id, prohibited = launched.prohibited, "prohibited processes at handoff");
    }
    evidence::workspace_launched(inner.evidence(), &session, launched)?;
    evidence::screenshot(
        inner.evidence(),
        &session,
        sequence,
        handed.png,
        handed.sha256,
    )?;
    let mut stored = handed.response.clone();
    stored.screenshot.png_base64 = String::new();
    session.reset_response =
        Some(serde_json::to_string(&stored).map_err(BrokerError::json("cache the reset"))?);
    session.reset_sha = Some(handed.reset_sha);
    session.attempt_path = Some(handed.attempt_path);
    session.handoff_ms = Some(handed.captured_at_ms);
    session.last_frame_ms = Some(handed.captured_at_ms);
    *door.session_mut() = session;
    door.renew();
    door.commit()
}

/// A clipboard write about to be asked of the desktop: its `requested` record first, so a write
/// the journal cannot record is never asked.
pub(crate) fn clipboard_requested(
    inner: &Inner,
    session: &SessionRow,
    record: ClipboardAccess,
) -> Result<(), BrokerError> {
    evidence::clipboard_access(inner.evidence(), session, record)
}

/// A finished or refused clipboard access (`error`: the refusal or failure, whose code the
/// record names): logged and recorded; a failed record fails the request.
pub(crate) fn clipboard(
    inner: &Inner,
    session: &SessionRow,
    mut record: ClipboardAccess,
    error: Option<&BrokerError>,
) -> Result<(), BrokerError> {
    if let Some(error) = error {
        record.error_code = Some(error.code().as_str().to_string());
    }
    // The target it always had, so log filters keep working.
    tracing::info!(
        target: "desk_broker::clipboard",
        session_id = %session.id,
        direction = %record.direction,
        outcome = %record.outcome,
        code = record.error_code.as_deref(),
        byte_length = record.byte_length,
        truncated = record.truncated,
        "clipboard"
    );
    evidence::clipboard_access(inner.evidence(), session, record)
}
