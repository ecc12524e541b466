//! The broker's reconciler, run at start and by the reaper on every tick: it compares records
//! with reality.
//!
//! Kills: first every kill interrupted between its tombstone and its receipt is finished
//! ([`crate::kill::finish_interrupted_kills`]); then every tombstone (`kill.rs`) whose terminal
//! receipt is in the spool and whose session
//! the store does not yet hold as `killed` is applied in the session's turn (so an action in
//! flight ends first, as `input_outcome_unknown` or with its receipt): the receipt is replayed
//! into the session's journal with its original id (once: a journal that ended takes nothing),
//! the desktop handle is dropped, anything written in the session directory after the kill
//! removed it is removed, the session becomes `killed`.
//!
//! Workspaces (`workspace.rs`): a `removal_pending` workspace is checked and destroyed again
//! until its removal is proven, then `destroyed`; a `launching`, `running` or `stopped` one
//! whose session is gone (released, killed, unknown) is removed the same way. A `launching` or
//! `running` one whose session is in `error` (it can take no input, observation or checkpoint
//! again) has every process of its desktop stopped in the session's turn, and becomes
//! `stopped` once none is left; its directory (logs, attempt file) stays for release.

use desk_contract::api::SessionState;
use desk_desktop::{SessionDir, destroy};
use desk_evidence::record::SessionKilled;

use crate::broker::{Broker, Inner};
use crate::door::Need;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::kill::Tombstone;
use crate::workspace::{self, WorkspaceState};

/// How long one retry waits for processes it killed.
const RETRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// What one reconciliation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Sessions marked `killed` (receipt replayed into their evidence).
    pub kills_applied: usize,
    /// Workspaces proven removed in this round.
    pub destroyed: usize,
    /// Workspaces whose removal is still not proven.
    pub pending: usize,
}

impl Inner {
    fn apply_kill(
        &self,
        tombstone: &Tombstone,
        receipt: &SessionKilled,
    ) -> Result<bool, BrokerError> {
        let id = &tombstone.session_id;
        // An unknown session has nothing to mark (and gets no slot).
        if self.store.session(id)?.is_none() {
            return Ok(false);
        }
        let applied = self.enter(id, "kill", Need::Unchecked, |mut door| {
            let Some(killed) = door.session().lifecycle.kill(&tombstone.reason) else {
                return Ok(false);
            };
            if let Some(mut backend) = door.runtime().backend.take() {
                // Its processes were killed; nothing of it is to be reaped or waited for.
                backend.detach();
            }
            // The kill removed the directory before its receipt. A broker it did not wait for
            // (stopped past kill::KILL_FENCE_BOUND inside an action's records) may have written
            // a frame or log rows since: in the session's turn nothing writes, so they go too.
            let dir = door.session().dir();
            if dir.path().exists() && receipt.storage_destroyed {
                tracing::warn!(session_id = %id, "removing what was written after the kill");
                if let Err(error) = std::fs::remove_dir_all(dir.path()) {
                    tracing::error!(session_id = %id, %error, "failed to remove the killed directory");
                }
            }
            crate::ledger::records::killed(self, &mut door, killed, receipt)?;
            Ok(true)
        })?;
        if !applied {
            return Ok(false);
        }
        self.forget_slot(id);
        tracing::warn!(
            session_id = %id,
            reason = tombstone.reason,
            "session marked killed"
        );
        Ok(true)
    }

    /// Stops every process of the desktop of failed session `id` (keeping its directory) and
    /// records its workspace `stopped` once none is left. `Ok(false)` when the session is not
    /// (or no longer) in `error`, or a process is still there (retried on the next round).
    fn stop_failed(&self, id: &SessionId) -> Result<bool, BrokerError> {
        if self.store.session(id)?.is_none() {
            return Ok(false);
        }
        self.enter(id, "stop_failed", Need::Unchecked, |mut door| {
            let session = door.session().clone();
            if session.state() != SessionState::Error {
                return Ok(false);
            }
            match door.runtime().backend.take() {
                Some(mut backend) => {
                    if let Err(error) = backend.shutdown() {
                        tracing::warn!(session_id = %id, %error, "failed to stop a failed session's desktop");
                    }
                }
                None => {
                    self.factory.reap_orphans(&session.dir());
                }
            }
            let remains = destroy::remains(&session.dir());
            let left = destroy::check(&remains).processes_left;
            if !left.is_empty() {
                tracing::warn!(
                    session_id = %id,
                    ?left,
                    "a failed session's desktop is not stopped yet"
                );
                return Ok(false);
            }
            workspace::record(&self.config.layout(), id, WorkspaceState::Stopped, &remains)?;
            tracing::info!(session_id = %id, "failed session's desktop stopped");
            Ok(true)
        })
    }

    /// The `launching`/`running` workspaces whose session is in `error`.
    fn failed_workspaces(&self) -> Vec<SessionId> {
        workspace::all(&self.config.layout())
            .into_iter()
            .filter(|(_, record)| {
                matches!(
                    record.state,
                    WorkspaceState::Launching | WorkspaceState::Running
                )
            })
            .filter(|(id, _)| {
                matches!(self.store.session(id), Ok(Some(session)) if session.state() == SessionState::Error)
            })
            .map(|(id, _)| id)
            .collect()
    }

    fn reconcile_workspaces(&self) -> Reconciled {
        let layout = self.config.layout();
        let mut done = Reconciled::default();
        for (id, record) in workspace::all(&layout) {
            let remains = match record.state {
                WorkspaceState::Destroyed => continue,
                WorkspaceState::RemovalPending => record.remains,
                WorkspaceState::Launching | WorkspaceState::Running | WorkspaceState::Stopped => {
                    let gone = match self.store.session(&id) {
                        Ok(Some(session)) => matches!(
                            session.state(),
                            SessionState::Released | SessionState::Killed
                        )
                        .then(|| session.dir()),
                        Ok(None) => Some(SessionDir::at(layout.sessions().join(id.as_str()))),
                        Err(error) => {
                            tracing::warn!(session_id = %id, error = %error, "reconciler cannot read a session");
                            None
                        }
                    };
                    let Some(dir) = gone else { continue };
                    let remains = destroy::remains(&dir);
                    if let Err(error) =
                        workspace::record(&layout, &id, WorkspaceState::RemovalPending, &remains)
                    {
                        tracing::warn!(session_id = %id, error = %error, "reconciler cannot record");
                        continue;
                    }
                    remains
                }
            };
            let mut removal = destroy::check(&remains);
            if !removal.proven() {
                removal = destroy::destroy(&remains, RETRY_TIMEOUT);
            }
            if removal.proven()
                && workspace::record(&layout, &id, WorkspaceState::Destroyed, &remains).is_ok()
            {
                tracing::info!(session_id = %id, "workspace removal proven");
                done.destroyed += 1;
            } else {
                tracing::warn!(session_id = %id, left = ?removal, "workspace removal not proven yet");
                done.pending += 1;
            }
        }
        done
    }
}

impl Broker {
    /// The kill switch (`POST /v1/sessions/{id}/kill`): kills at once, outside the session's
    /// queue ([`crate::kill::kill_session`]), then applies the kill in the session's turn.
    pub async fn kill(
        &self,
        session_id: &SessionId,
        reason: &str,
    ) -> Result<desk_contract::api::KillResponse, BrokerError> {
        let config = self.config().clone();
        let id = session_id.clone();
        let reason = reason.to_string();
        let outcome = tokio::task::spawn_blocking(move || {
            let key = crate::kill::Signer::evidence(
                &config.state_dir,
                config.evidence.signing_key.as_deref(),
            )?;
            crate::kill::kill_session(
                &config.layout(),
                &key,
                &id,
                &reason,
                &crate::kill::KillSource::Operator,
            )
        })
        .await
        .map_err(|error| BrokerError::Internal(format!("kill panicked: {error}")))??;
        self.reconcile().await?;
        let state = SessionState::Killed;
        Ok(match outcome {
            crate::kill::KillOutcome::Killed(receipt) => desk_contract::api::KillResponse {
                session_id: session_id.to_string(),
                state,
                killed_now: true,
                reason: receipt.reason,
                record_id: receipt.record_id,
                outcome: Some(receipt.outcome),
            },
            crate::kill::KillOutcome::AlreadyKilled(tombstone) => {
                desk_contract::api::KillResponse {
                    session_id: session_id.to_string(),
                    state,
                    killed_now: false,
                    reason: tombstone.reason,
                    record_id: tombstone.record_id,
                    outcome: None,
                }
            }
        })
    }

    /// Applies every finished kill and retries every unproven workspace removal once.
    pub async fn reconcile(&self) -> Result<Reconciled, BrokerError> {
        let config = self.config().clone();
        let (spool, tombstones) = tokio::task::spawn_blocking(move || {
            let layout = config.layout();
            let key = crate::kill::Signer::evidence(
                &config.state_dir,
                config.evidence.signing_key.as_deref(),
            )?;
            if let Err(error) = crate::kill::finish_interrupted_kills(&layout, &key) {
                tracing::error!(%error, "reconciler cannot finish interrupted kills");
            }
            // Both spools: the watchdog's (its key) and the broker's (the evidence key).
            let spool = crate::kill::spooled_receipts(&layout)?;
            Ok::<_, BrokerError>((spool, crate::kill::tombstones(&layout)))
        })
        .await
        .map_err(|error| BrokerError::Internal(format!("reconcile panicked: {error}")))??;
        let mut done = Reconciled::default();
        for tombstone in tombstones {
            let Some(spooled) = spool
                .iter()
                .find(|spooled| spooled.record_id == tombstone.record_id)
            else {
                // The kill is still under way (its receipt comes last).
                continue;
            };
            let killed = self
                .run(None, {
                    let id = tombstone.session_id.clone();
                    move |inner| inner.store.session(&id)
                })
                .await?
                .is_some_and(|session| session.state() == SessionState::Killed);
            if killed {
                continue;
            }
            let receipt = spooled.clone();
            let applied = self
                .run_unbounded(tombstone.session_id.clone(), move |inner| {
                    inner.apply_kill(&tombstone, &receipt)
                })
                .await?;
            done.kills_applied += usize::from(applied);
        }
        let failed = self
            .run(None, |inner| Ok(inner.failed_workspaces()))
            .await?;
        for id in failed {
            let session_id = id.clone();
            if let Err(error) = self
                .run_unbounded(id, move |inner| inner.stop_failed(&session_id))
                .await
            {
                tracing::warn!(%error, "reconciler cannot stop a failed session's desktop");
            }
        }
        let workspaces = self
            .run(None, |inner| Ok(inner.reconcile_workspaces()))
            .await?;
        done.destroyed = workspaces.destroyed;
        done.pending = workspaces.pending;
        Ok(done)
    }
}
