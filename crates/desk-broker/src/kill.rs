//! The kill path: the one function the watchdog, `deskbroker kill` and
//! `POST /v1/sessions/{id}/kill` share ([`kill_session`]). It needs no broker: it reads the
//! store read-only and acts on the state directory, so it works with the broker hung, dead or
//! alive.
//!
//! In order, under the session's kill lock `<state_dir>/kills/<id>.lock` (held until the
//! receipt is spooled, released by the kernel if the killer dies; only killers wait on it) and
//! its fence `<state_dir>/kills/<id>.fence`, which the broker holds while it writes an action's
//! records and a kill waits for [`KILL_FENCE_BOUND`] (250 ms) at most before it goes on
//! without it (`kill/lock.rs`): (1) the session's tombstone
//! `<state_dir>/kills/<id>.json` is created exclusively (a second kill waits for the lock, finds
//! the tombstone and its receipt and is a no-op: idempotent) and fsynced: from then on the lease token
//! authorizes nothing (`auth.rs` answers `session_killed`); (2) the workspace's state becomes
//! `removal_pending` with what must go (`workspace.rs`), and the input logs are copied into the
//! session's evidence directory (`kill/keep.rs`); (3) the worker's process group is
//! SIGKILLed first (input frozen: no other process injects input), then every other recorded
//! group and the sandbox, then the workspace and the session directory are removed and the
//! removal is checked (`desk_desktop::destroy`); (4) the workspace becomes `destroyed` when
//! proven (else the reconciler retries); (5) a signed terminal receipt is appended to the spool
//! (append, fsync, read back), naming the action in flight (journaled, not complete) as
//! `action_in_doubt`: its outcome is unknown and it is never replayed (the broker, fenced off
//! or cut past the bound, closes it in doubt: `ledger.rs`). The broker, when it runs, marks the
//! session `killed` and replays the receipt into the session's evidence (`reconcile.rs`).
//!
//! A killer that dies (or fails) between its tombstone and its receipt leaves a tombstone
//! without a spooled receipt and a free kill lock: [`finish_interrupted_kills`] (the broker's
//! reconciler and the watchdog, every round) takes the lock, checks the spool again under it and
//! does steps (2) to (5), so the receipt is written exactly once. What the kill reads of a
//! session without the broker (the store opened read-only) is in `kill/facts.rs`.
//!
//! The receipt is signed by its killer's key into its killer's spool (`kill/receipts.rs`): the
//! watchdog's own key and spool for the watchdog, the broker's evidence key and
//! `<state_dir>/spool` for an operator or the broker. When the state directory cannot be
//! written the watchdog still kills, keeping its tombstone in its own directory and handing
//! the kill over later (`kill/place.rs`).
//!
//! The kill lock (`kill/lock.rs`) outlives a kill, and the broker's fence creates it for every
//! session that acts. A killed session keeps its lock file and its tombstone for good. Release
//! removes the lock file of a session that was never killed, once the session is stored
//! `released`: under the lock, taken exclusively without waiting, and only when no tombstone
//! exists; a held lock (a kill under way) or a tombstone leaves it.

use desk_desktop::{SessionDir, StateDir, destroy};
use desk_evidence::record::{KILL_CONTROL_ID, ProhibitedProcess, SessionKilled};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::util::now_ms;
use crate::workspace::{self, WorkspaceState};

mod facts;
mod files;
mod keep;
mod lock;
mod place;
mod receipts;

pub(crate) use facts::{SessionFacts, live_sessions, open_read_only, session_facts};
pub use files::Tombstone;
use files::{DESTROY_TIMEOUT, KillDir};
pub use lock::KILL_FENCE_BOUND;
pub(crate) use lock::{fence, remove_at_release};
use lock::{fence_for_kill, kill_lock};
pub(crate) use place::hand_over;
pub use place::read_tombstone;
pub(crate) use place::tombstones;
use place::{tombstones_in, write_tombstone};
pub use receipts::Signer;
pub(crate) use receipts::spooled_receipts;

/// Which limit the watchdog enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// `SessionLimits::max_task`, counted from the handoff.
    MaxTaskMinutes,
    /// `SessionLimits::max_refused_actions`.
    MaxRefusedActions,
    /// `SessionLimits::idle_limit`.
    IdleLimit,
    /// The lease expired (plus its grace) and no broker released it.
    LeaseExpiry,
    /// The census found a process its rules do not allow in the session's sandbox
    /// (`desk_desktop::census`).
    ProhibitedProcess,
}

impl Limit {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::MaxTaskMinutes => "max_task_minutes",
            Limit::MaxRefusedActions => "max_refused_actions",
            Limit::IdleLimit => "idle_limit",
            Limit::LeaseExpiry => "lease_expiry",
            Limit::ProhibitedProcess => "prohibited_process",
        }
    }
}

/// Who asks for a kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillSource {
    /// The watchdog, at `limit`.
    Watchdog(Limit),
    /// An operator (`deskbroker kill`, `POST /v1/sessions/{id}/kill`).
    Operator,
    /// A census found `process` prohibited ([`Limit::ProhibitedProcess`]): the watchdog's
    /// (`by` = `watchdog`) or the broker's before an action (`broker`).
    Census {
        /// `watchdog` or `broker`.
        by: &'static str,
        /// What it found.
        process: Box<ProhibitedProcess>,
    },
}

/// What [`kill_session`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillOutcome {
    /// The session was killed now; its terminal receipt is in the spool.
    Killed(SessionKilled),
    /// It had been killed before (nothing was done again).
    AlreadyKilled(Tombstone),
}

/// Checks an operator's reason: 1 to 256 bytes, no control characters.
pub fn check_reason(reason: &str) -> Result<(), BrokerError> {
    if reason.trim().is_empty() || reason.len() > 256 || reason.chars().any(char::is_control) {
        return Err(BrokerError::InvalidRequest(
            "reason must be 1 to 256 bytes of text without control characters".to_string(),
        ));
    }
    Ok(())
}

fn new_record_id() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| BrokerError::Internal(format!("failed to draw a record id: {error}")))?;
    Ok(format!("kill-{}", hex::encode(bytes)))
}

/// The record ids of every receipt of both spools, each verified.
fn spooled_ids(state: &StateDir) -> Result<Vec<String>, BrokerError> {
    Ok(spooled_receipts(state)?
        .into_iter()
        .map(|receipt| receipt.record_id)
        .collect())
}

/// Kills session `session_id` of the broker state at `state`: see the module documentation.
/// Refuses (changing nothing) an unknown session (`not_found`), a released one
/// (`invalid_state`) and a bad reason (`invalid_request`). A session whose earlier kill was
/// interrupted before its receipt is finished now, under its first reason. The watchdog's
/// kill of a state directory it cannot write keeps its files in its own directory
/// (`kill/place.rs`).
pub fn kill_session(
    state: &StateDir,
    signer: &Signer,
    session_id: &SessionId,
    reason: &str,
    source: &KillSource,
) -> Result<KillOutcome, BrokerError> {
    check_reason(reason)?;
    let kills = if signer.watchdog && !place::writable(state) {
        tracing::warn!(%session_id, "the state directory cannot be written; the watchdog kills from its own directory");
        KillDir::watchdog(state)
    } else {
        KillDir::state(state)
    };
    let Some(_lock) = kill_lock(&kills, session_id, true)? else {
        return Err(BrokerError::Internal(
            "a blocking lock was not taken".to_string(),
        ));
    };
    if let Some(tombstone) = read_tombstone(state, session_id) {
        if spooled_ids(state)?.contains(&tombstone.record_id) {
            return Ok(KillOutcome::AlreadyKilled(tombstone));
        }
        return finish_kill(state, signer, &kills, &tombstone).map(KillOutcome::Killed);
    }
    let torn = kills.record(session_id);
    if torn.exists() {
        // Unreadable under the lock: its killer died while writing it, before the kill began
        // (a tombstone counts once it is complete and fsynced). It is written again below.
        tracing::warn!(%session_id, "removing a torn tombstone");
        std::fs::remove_file(&torn).map_err(BrokerError::io("remove a torn tombstone", &torn))?;
    }
    let facts = session_facts(&open_read_only(&state.database())?, session_id)?
        .ok_or_else(|| BrokerError::NotFound("session".to_string()))?;
    if facts.state == "released" {
        return Err(BrokerError::InvalidState {
            operation: "kill_session",
            reason: "the session was released; nothing is left to kill".to_string(),
        });
    }
    // The broker's hold on the fence (an action's records being written) is waited for
    // KILL_FENCE_BOUND at most; past it the kill goes on and that action is in doubt.
    let _fence = (!kills.is_watchdog())
        .then(|| fence_for_kill(state, session_id))
        .flatten();
    let tombstone = Tombstone {
        session_id: session_id.clone(),
        reason: reason.to_string(),
        record_id: new_record_id()?,
        killed_at_ms: now_ms(),
        source: match source {
            KillSource::Watchdog(_) => "watchdog",
            KillSource::Operator => "operator",
            KillSource::Census { by, .. } => by,
        }
        .to_string(),
        limit: match source {
            KillSource::Watchdog(limit) => Some(limit.as_str().to_string()),
            KillSource::Operator => None,
            KillSource::Census { .. } => Some(Limit::ProhibitedProcess.as_str().to_string()),
        },
        process: match source {
            KillSource::Census { process, .. } => Some(process.as_ref().clone()),
            _ => None,
        },
    };
    if !write_tombstone(&kills, &tombstone)? {
        return read_tombstone(state, session_id)
            .map(KillOutcome::AlreadyKilled)
            .ok_or_else(|| BrokerError::Internal("a tombstone cannot be read".to_string()));
    }
    crate::fault::FaultHook::from_env().fire(crate::fault::FaultHook::KillAfterTombstone);
    finish_kill(state, signer, &kills, &tombstone).map(KillOutcome::Killed)
}

/// Steps (2) to (5) of a kill whose tombstone is durable in `kills`; the caller holds its kill
/// lock and checked that no receipt is spooled for it. From the watchdog's directory (the
/// state directory unwritable) nothing is written to the state directory.
fn finish_kill(
    state: &StateDir,
    signer: &Signer,
    kills: &KillDir,
    tombstone: &Tombstone,
) -> Result<SessionKilled, BrokerError> {
    let writes_state = !kills.is_watchdog();
    let session_id = &tombstone.session_id;
    let facts = session_facts(&open_read_only(&state.database())?, session_id)?
        .ok_or_else(|| BrokerError::NotFound("session".to_string()))?;
    let session_dir = SessionDir::at(&facts.session_dir);
    let remains = destroy::remains(&session_dir);
    if writes_state {
        workspace::record(state, session_id, WorkspaceState::RemovalPending, &remains)?;
        keep::keep_logs(state, session_id, &session_dir);
    }
    let destroying = std::time::Instant::now();
    let removal = destroy::destroy(&remains, DESTROY_TIMEOUT);
    let destroy_ms = destroying.elapsed().as_millis();
    if writes_state && removal.proven() {
        workspace::record(state, session_id, WorkspaceState::Destroyed, &remains)?;
    }
    let receipt = SessionKilled {
        record_id: tombstone.record_id.clone(),
        control_id: KILL_CONTROL_ID.to_string(),
        stage: "terminal".to_string(),
        outcome: if removal.proven() {
            "contained"
        } else {
            "removal_unproven"
        }
        .to_string(),
        recorded_at_ms: now_ms(),
        source: tombstone.source.clone(),
        reason: tombstone.reason.clone(),
        signer_identity: signer
            .identity
            .map(|identity| identity.as_str().to_string()),
        limit: tombstone.limit.clone(),
        last_action_index: facts.next_action_index.checked_sub(1),
        state_destroyed: removal.processes_left.is_empty(),
        lease_revoked: true,
        storage_destroyed: !removal.directory_left && !removal.workspace_left,
        process: tombstone.process.clone().map(Box::new),
        action_in_doubt: facts.pending_action,
        signed_receipt: None,
    };
    desk_evidence::spool::append(&signer.spool, &signer.key, session_id.as_str(), &receipt)
        .map_err(|source| BrokerError::Evidence {
            operation: "kill_session",
            source: Box::new(source),
        })?;
    tracing::warn!(
        %session_id,
        reason = tombstone.reason,
        outcome = receipt.outcome,
        action_in_doubt = ?receipt.action_in_doubt,
        destroy_ms,
        "session killed"
    );
    Ok(receipt)
}

/// Finishes every kill whose killer died or failed between its tombstone and its receipt (its
/// kill lock is free and the spool has no receipt for it): destroys what is left and spools the
/// receipt, exactly once. Returns the receipts written; a kill that fails again is logged and
/// retried on the next call. The watchdog's own kills (source `watchdog`) and those in its
/// directory are finished by the watchdog alone: their receipt needs its key.
pub fn finish_interrupted_kills(
    state: &StateDir,
    signer: &Signer,
) -> Result<Vec<SessionKilled>, BrokerError> {
    let mut finished = Vec::new();
    let spooled = spooled_ids(state)?;
    let mut places = vec![KillDir::state(state)];
    if signer.watchdog {
        places.push(KillDir::watchdog(state));
    }
    for kills in places {
        let unfinished = tombstones_in(&kills).into_iter().filter(|tombstone| {
            !spooled.contains(&tombstone.record_id)
                && (signer.watchdog || tombstone.source != desk_evidence::record::WATCHDOG_SOURCE)
        });
        for tombstone in unfinished {
            if let Some(receipt) = finish_interrupted(state, signer, &kills, &tombstone)? {
                finished.push(receipt);
            }
        }
    }
    Ok(finished)
}

fn finish_interrupted(
    state: &StateDir,
    signer: &Signer,
    kills: &KillDir,
    tombstone: &Tombstone,
) -> Result<Option<SessionKilled>, BrokerError> {
    let Some(_lock) = kill_lock(kills, &tombstone.session_id, false)? else {
        return Ok(None);
    };
    // Read again under the lock: a killer may have spooled it since.
    if spooled_ids(state)?.contains(&tombstone.record_id) {
        return Ok(None);
    }
    tracing::warn!(
        session_id = %tombstone.session_id,
        "finishing a kill interrupted before its receipt"
    );
    match finish_kill(state, signer, kills, tombstone) {
        Ok(receipt) => Ok(Some(receipt)),
        Err(error) => {
            tracing::error!(
                session_id = %tombstone.session_id,
                error = %error,
                "failed to finish an interrupted kill"
            );
            Ok(None)
        }
    }
}
