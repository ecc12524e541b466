//! Signed, hash-chained evidence per session (issue 3), written with `desk-evidence`.
//!
//! Layout: `<state_dir>/evidence/signing.key` (0600) and `evidence.pub` (the broker's Ed25519
//! key pair, created on first start unless [`crate::EvidenceConfig::signing_key`] names a key), and per
//! session `<state_dir>/evidence/<session_id>/` holding `evidence.ndjson` (the journal),
//! `frames/<sequence>.png` (reset and screenshot frames) and `artifact/<name>` (the last
//! checkpointed bytes) while the session lives. Release deletes all but the journal (its
//! records keep every digest), so a bundle exported after release verifies the journal and
//! lists the deleted files as `not_retained`; a killed session keeps its logs (`kill/keep.rs`).
//!
//! The broker calls the hooks here at each point docs/evidence.md names. Every hook returns
//! only after its record was written, fsynced, read back and verified; the caller sends the
//! response that depends on it afterwards. Invariants: `action_accepted` is written before any
//! input of its action is sent, and a failure to write it refuses the action; a failed write
//! evicts the session's cached writer, so the next operation reopens (and re-verifies) the
//! journal from disk or is refused too.
//!
//! The in-memory state (the loaded key and one open writer per session) is [`Journals`], held
//! by the broker beside its settings; every hook takes an [`Evidence`] (settings + journals), so
//! this module depends on no broker internals.
//!
//! Over 400 lines: one hook per signed record kind, side by side, so their order and shape compare
//! at a glance; the key, journal, export and the other record families are already in `evidence/`.

use std::path::{Path, PathBuf};

use desk_evidence::record::{
    ActionAccepted, Artifact, Checkpoint, LogDigest, NOT_INJECTED, Screenshot, SessionReleased,
};
use desk_evidence::{RecordBody, SigningKey};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::logs::{EVENTS_FILE, FRAME_EVENTS_FILE};
use crate::store::SessionRow;
use crate::util::now_ms;

mod clipboard;
mod containment;
mod export;
mod gate;
mod journal;
mod keys;
mod launch;
mod shared;

pub(crate) use clipboard::clipboard_access;
pub(crate) use containment::{action_refused, session_killed};
pub use export::{export_evidence, verify_evidence, verify_evidence_observed};
pub(crate) use gate::{gate_decision, review_decision};
pub(crate) use journal::{Evidence, Journals};
use journal::{signing_key, with_journal};
pub(crate) use launch::{launch_receipt, workspace_launched};
pub(crate) use shared::evidence_dir;
use shared::{JOURNAL_FILE, io_error, lock, session_evidence_dir};
pub use shared::{PUBLIC_KEY_FILE, SIGNING_KEY_FILE};

/// `<state_dir>/evidence/evidence.pub`, the public key of the broker's evidence.
pub fn public_key_path(state_dir: &Path) -> PathBuf {
    evidence_dir(state_dir).join(PUBLIC_KEY_FILE)
}

/// Loads (or on first start creates) the signing key and publishes `evidence.pub`, so a broker
/// with an unusable key refuses to start instead of refusing every lease.
pub(crate) fn load_key(evidence: Evidence<'_>) -> Result<(), BrokerError> {
    signing_key(evidence)
        .map(|_| ())
        .map_err(|source| BrokerError::Evidence {
            operation: "open the broker",
            source: Box::new(source),
        })
}

/// The evidence signing key of the broker state at `state_dir` (`configured`, or
/// `<state_dir>/evidence/signing.key`, created on first use): what the watchdog and the kill
/// switch sign terminal receipts with.
pub fn load_signing_key(
    state_dir: &Path,
    configured: Option<&Path>,
) -> Result<SigningKey, BrokerError> {
    keys::load_or_create_key(state_dir, configured).map_err(|source| BrokerError::Evidence {
        operation: "load the signing key",
        source: Box::new(source),
    })
}

/// A lease was granted: the session's evidence journal starts with `session_started`, which
/// names the workspace policy the session was leased under.
pub(crate) fn session_started(
    evidence: Evidence<'_>,
    session: &SessionRow,
    policy_sha256: &str,
) -> Result<(), BrokerError> {
    journal::start_journal(evidence, session, policy_sha256)
}

/// `action_accepted`, before any input of the action is sent. An accepted action left open by a
/// refused attempt at the same index (its input was never sent) is first withdrawn.
pub(crate) fn action_accepted(
    evidence: Evidence<'_>,
    session: &SessionRow,
    index: u64,
    request_id: &str,
    request: &serde_json::Value,
    action_type: &str,
    intent: &str,
) -> Result<(), BrokerError> {
    let request_sha256 =
        desk_evidence::canonical_sha256(request).map_err(|source| BrokerError::Evidence {
            operation: "execute_action",
            source: Box::new(source),
        })?;
    with_journal(evidence, session, "execute_action", |journal| {
        if journal.open_actions.last() == Some(&index) {
            journal.receipt(index, NOT_INJECTED, Some("internal"), None)?;
        }
        journal.append(RecordBody::ActionAccepted(ActionAccepted {
            index,
            request_id: request_id.to_string(),
            action_type: action_type.to_string(),
            intent: (!intent.is_empty()).then(|| intent.to_string()),
            request_sha256,
        }))
    })
}

/// How an accepted action ended, for its receipt.
pub(crate) enum ActionEnd<'a> {
    /// Its input was delivered; the response carries the screenshot with this digest.
    Delivered {
        /// The settle outcome (`stable`, `still_changing`, ...).
        settle_outcome: &'a str,
        /// SHA-256 of the screenshot in the response; `None` when it has none.
        screenshot_sha256: Option<&'a str>,
    },
    /// Input may have reached the desktop; the outcome is unknown.
    InDoubt,
    /// Nothing reached the desktop; the index is handed to the next action.
    NotInjected {
        /// The error code the client gets.
        error_code: &'a str,
    },
}

/// `action_receipt`: closes an accepted action, recording the input logs as of now.
pub(crate) fn action_receipt(
    evidence: Evidence<'_>,
    session: &SessionRow,
    index: u64,
    end: ActionEnd<'_>,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "execute_action", |journal| match end {
        ActionEnd::Delivered {
            settle_outcome,
            screenshot_sha256,
        } => journal.receipt(index, settle_outcome, None, screenshot_sha256),
        ActionEnd::InDoubt => {
            journal.receipt(index, "in_doubt", Some("input_outcome_unknown"), None)
        }
        ActionEnd::NotInjected { error_code } => {
            journal.receipt(index, NOT_INJECTED, Some(error_code), None)
        }
    })
}

/// [`action_receipt`] for a delivered action whose input logs were written but not yet
/// flushed (`logs`, `logs::Written::durable`): the receipt digests them, and they and the
/// receipt are flushed in one durable batch. Every file of `logs` is flushed whatever happens
/// to the receipt; the second value is whether they all reached the disk.
pub(crate) fn action_receipt_alongside(
    evidence: Evidence<'_>,
    session: &SessionRow,
    index: u64,
    end: ActionEnd<'_>,
    logs: &[desk_evidence::durable::Durable<'_>],
) -> (
    Result<(), BrokerError>,
    Result<(), desk_evidence::EvidenceError>,
) {
    let mut flushed = None;
    let receipt = with_journal(evidence, session, "execute_action", |journal| {
        let (settle_outcome, error_code, screenshot_sha256) = match end {
            ActionEnd::Delivered {
                settle_outcome,
                screenshot_sha256,
            } => (settle_outcome, None, screenshot_sha256),
            ActionEnd::InDoubt => ("in_doubt", Some("input_outcome_unknown"), None),
            ActionEnd::NotInjected { error_code } => (NOT_INJECTED, Some(error_code), None),
        };
        let (receipt, others) =
            journal.receipt_alongside(index, settle_outcome, error_code, screenshot_sha256, logs);
        flushed = Some(others.into_iter().collect());
        receipt
    });
    // The journal could not even be opened: the logs are still flushed before the answer.
    let flushed = flushed.unwrap_or_else(|| desk_evidence::durable::sync_all(logs));
    (receipt, flushed)
}

/// `screenshot`: the frame handed out by a reset or a screenshot, written as
/// `frames/<sequence>.png` (staged, renamed) before its record is written; the frame, its
/// directory entry and the record are flushed in one durable batch (`desk_evidence::durable`),
/// so all three are durable before this returns (one disk wait instead of three). A frame whose
/// flush failed fails the hook after its record was written, like a crash after the record: the
/// answer is not sent. `sha256` is the digest the frame came with (the worker's, hashed during
/// its encode, as in the action's receipt; a zoom's, taken once by the broker), not taken again.
pub(crate) fn screenshot(
    evidence: Evidence<'_>,
    session: &SessionRow,
    sequence: u64,
    png: &[u8],
    sha256: &str,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "screenshot", |journal| {
        let name = format!("{sequence}.png");
        let placed = journal.place_unsynced(desk_evidence::bundle::FRAMES_DIR, &name, png)?;
        let (appended, frame) = journal.append_alongside(
            RecordBody::Screenshot(Screenshot {
                sequence,
                sha256: sha256.to_string(),
                size: png.len() as u64,
            }),
            &placed.durable(),
        );
        appended?;
        frame.into_iter().collect()
    })
}

/// `checkpoint`: the checkpointed bytes, kept as `artifact/<file_name>` (staged before the
/// record, renamed into place after it).
pub(crate) fn checkpoint(
    evidence: Evidence<'_>,
    session: &SessionRow,
    file_name: &str,
    bytes: &[u8],
    method: &str,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "checkpoint", |journal| {
        let staged = journal.stage(file_name, bytes)?;
        journal.append(RecordBody::Checkpoint(Checkpoint {
            file_name: file_name.to_string(),
            sha256: desk_evidence::sha256_hex(bytes),
            size: bytes.len() as u64,
            method: method.to_string(),
        }))?;
        journal.commit_staged(&staged, desk_evidence::bundle::ARTIFACT_DIR, file_name)
    })
}

/// `artifact`: the checkpointed bytes were handed out.
pub(crate) fn artifact(
    evidence: Evidence<'_>,
    session: &SessionRow,
    name: &str,
    sha256: &str,
    size: u64,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "retrieve_artifact", |journal| {
        journal.append(RecordBody::Artifact(Artifact {
            name: name.to_string(),
            sha256: sha256.to_string(),
            size,
        }))
    })
}

fn release_reason(session: &SessionRow) -> String {
    match session.lifecycle.phase() {
        crate::session::Phase::Error(failure) => format!("error: {}", failure.code.as_str()),
        _ if session.expires_at_ms < now_ms() => "expired".to_string(),
        _ => "released".to_string(),
    }
}

/// The session is about to be released (before its directory is deleted): writes
/// `session_released` with the digests of both logs as they are and the policy's frame
/// retention, then deletes the attempt data the evidence directory held (frames unless the
/// policy says `retention: {frames: keep}`, artifact, staged files), so only the signed
/// journal with its digests (and kept frames) remains: the broker contract's release "deletes attempt data"
/// (a bundle exported afterwards lists them as `not_retained`). A failure is logged, never
/// returned: release must still clean up, and the journal then simply stays open (a bundle
/// shows `released: false`) with its files kept, since nothing signed their final digests.
pub(crate) fn session_released(
    evidence: Evidence<'_>,
    session: &SessionRow,
) -> Result<(), BrokerError> {
    let released = with_journal(evidence, session, "release_session", |journal| {
        if journal.released {
            return Ok(());
        }
        let mut digests = Vec::new();
        let logs = [
            (EVENTS_FILE, journal.session_dir.events_file()),
            (FRAME_EVENTS_FILE, journal.session_dir.frame_events_file()),
        ];
        for (_, source) in logs {
            let bytes = match std::fs::read(&source) {
                Ok(bytes) => bytes,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(error) => return Err(io_error("read", &source)(error)),
            };
            digests.push(LogDigest::of(&bytes));
        }
        let frame_events = digests.pop().unwrap_or_else(|| LogDigest::of(b""));
        let events = digests.pop().unwrap_or_else(|| LogDigest::of(b""));
        let n_actions = journal.n_actions;
        journal.append(RecordBody::SessionReleased(SessionReleased {
            reason: release_reason(session),
            n_actions,
            events,
            frame_events,
            frame_retention: Some(evidence.frames.as_str().to_string()),
        }))
    });
    lock(&evidence.journals.open).remove(&session.id);
    match released {
        Ok(()) => delete_attempt_data(
            &session_evidence_dir(&evidence.config.state_dir, &session.id),
            evidence.frames,
        ),
        Err(error) => tracing::error!(
            session_id = %session.id,
            error = %error_chain(&error),
            "failed to close the session's evidence journal; releasing anyway"
        ),
    }
    Ok(())
}

/// Deletes a released session's attempt data from its evidence directory `directory`: every
/// entry but the journal (frames unless `frames` keeps them, the artifact, staged files, log
/// copies an earlier version kept). Failures are logged: the journal already holds every
/// digest.
fn delete_attempt_data(directory: &Path, frames: desk_policy::FrameRetention) {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) => {
            tracing::warn!(directory = %directory.display(), %error, "failed to list the evidence directory at release");
            return;
        }
    };
    for entry in entries.flatten() {
        if entry.file_name() == JOURNAL_FILE
            || (frames == desk_policy::FrameRetention::Keep
                && entry.file_name() == desk_evidence::bundle::FRAMES_DIR)
        {
            continue;
        }
        let path = entry.path();
        let removed = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if let Err(error) = removed {
            tracing::warn!(path = %path.display(), %error, "failed to delete attempt data at release");
        }
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

/// After a restart: the action `action_index` of `session_id` was pending, so its input may
/// have reached the desktop. Closes it with an `in_doubt` receipt if the journal still has it
/// open. Failures are logged; the action fails closed either way.
pub(crate) fn action_in_doubt(
    evidence: Evidence<'_>,
    store: &crate::store::Store,
    session_id: &SessionId,
    action_index: u64,
) {
    let session = match store.session(session_id) {
        Ok(Some(session)) => session,
        Ok(None) => return,
        Err(error) => {
            tracing::error!(%session_id, error = %error_chain(&error), "failed to load a session for its in-doubt receipt");
            return;
        }
    };
    let session = &session;
    let result = with_journal(evidence, session, "recover_pending", |journal| {
        if journal.released || !journal.open_actions.contains(&action_index) {
            return Ok(false);
        }
        journal.receipt(
            action_index,
            "in_doubt",
            Some("input_outcome_unknown"),
            None,
        )?;
        Ok(true)
    });
    match result {
        Ok(true) => tracing::info!(
            session_id = %session.id,
            action_index,
            "in-doubt receipt written"
        ),
        Ok(false) => {}
        Err(error) => tracing::error!(
            session_id = %session.id,
            action_index,
            error = %error_chain(&error),
            "failed to write the in-doubt receipt"
        ),
    }
}

/// An approver's receipt was issued (`docs/approvals.md`): `approval_issued`, written before the
/// receipt is stored (an issue whose record could not be written is not issued).
pub(crate) fn approval_issued(
    evidence: Evidence<'_>,
    session: &SessionRow,
    body: desk_evidence::record::ApprovalIssued,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "record an approval", |journal| {
        journal.append(RecordBody::ApprovalIssued(body))
    })
}

/// An approved action reached a state (`approved_action`); the `PENDING_INVOCATION` record is
/// written before the invocation, or there is none.
pub(crate) fn approved_action(
    evidence: Evidence<'_>,
    session: &SessionRow,
    body: desk_evidence::record::ApprovedAction,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "record an approved action", |journal| {
        journal.append(RecordBody::ApprovedAction(body))
    })
}

/// The broker accepted an observation the observer signed (`observer_observation`,
/// `docs/observer.md`): written before the observation is used or answered; one whose record
/// could not be written is neither.
pub(crate) fn observer_observation(
    evidence: Evidence<'_>,
    session: &SessionRow,
    body: desk_evidence::record::ObserverObservation,
) -> Result<(), BrokerError> {
    with_journal(
        evidence,
        session,
        "record an observer observation",
        |journal| journal.append(RecordBody::ObserverObservation(body)),
    )
}

#[cfg(test)]
mod tests;
