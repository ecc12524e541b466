//! The broker's reconciler, run at start and by the reaper on every tick: it compares records
//! with reality.
//!
//! Kills: every tombstone (`kill.rs`) whose terminal receipt is in the spool and whose session
//! the store does not yet hold as `killed` is applied in the session's turn (so an action in
//! flight ends first, as `input_outcome_unknown` or with its receipt): the receipt is replayed
//! into the session's journal with its original id (once: a journal that ended takes nothing),
//! the desktop handle is dropped, the session becomes `killed`.
//!
//! Workspaces (`workspace.rs`): a `removal_pending` workspace is checked and destroyed again
//! until its removal is proven, then `destroyed`; a `launching` or `running` one whose session
//! is gone (released, killed, unknown) is removed the same way.

use desk_desktop::{SessionDir, destroy};
use desk_evidence::record::SessionKilled;

use crate::broker::{Broker, Inner};
use crate::error::BrokerError;
use crate::kill::{Tombstone, read_tombstone};
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
        let slot = self.slot(id);
        let mut runtime = slot.lock();
        let Some(mut session) = self.store.session(id)? else {
            return Ok(false);
        };
        let Some(killed) = session.lifecycle.kill(&tombstone.reason) else {
            return Ok(false);
        };
        if let Some(mut backend) = runtime.backend.take() {
            // Its processes were killed; nothing of it is to be reaped or waited for.
            backend.detach();
        }
        crate::evidence::session_killed(self.evidence(), &session, receipt)?;
        session.lifecycle = killed;
        self.store.save_session(&session)?;
        drop(runtime);
        self.forget_slot(id);
        tracing::warn!(
            session_id = id,
            reason = tombstone.reason,
            "session marked killed"
        );
        Ok(true)
    }

    fn reconcile_workspaces(&self) -> Reconciled {
        let layout = self.config.layout();
        let mut done = Reconciled::default();
        for (id, record) in workspace::all(&layout) {
            let remains = match record.state {
                WorkspaceState::Destroyed => continue,
                WorkspaceState::RemovalPending => record.remains,
                WorkspaceState::Launching | WorkspaceState::Running => {
                    let gone = match self.store.session(&id) {
                        Ok(Some(session)) => matches!(
                            session.state(),
                            desk_contract::api::SessionState::Released
                                | desk_contract::api::SessionState::Killed
                        )
                        .then(|| session.dir()),
                        Ok(None) => Some(SessionDir::at(layout.sessions().join(&id))),
                        Err(error) => {
                            tracing::warn!(session_id = id, error = %error, "reconciler cannot read a session");
                            None
                        }
                    };
                    let Some(dir) = gone else { continue };
                    let remains = destroy::remains(&dir);
                    if let Err(error) =
                        workspace::record(&layout, &id, WorkspaceState::RemovalPending, &remains)
                    {
                        tracing::warn!(session_id = id, error = %error, "reconciler cannot record");
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
                tracing::info!(session_id = id, "workspace removal proven");
                done.destroyed += 1;
            } else {
                tracing::warn!(session_id = id, left = ?removal, "workspace removal not proven yet");
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
        session_id: &str,
        reason: &str,
    ) -> Result<desk_contract::api::KillResponse, BrokerError> {
        let config = self.config().clone();
        let id = session_id.to_string();
        let reason = reason.to_string();
        let outcome = tokio::task::spawn_blocking(move || {
            let key = crate::evidence::load_signing_key(
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
        let state = desk_contract::api::SessionState::Killed;
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
        let layout = config.layout();
        let key = crate::evidence::load_signing_key(
            &config.state_dir,
            config.evidence.signing_key.as_deref(),
        )?;
        let spool = desk_evidence::spool::read(&layout.spool(), &key.verifying_key()).map_err(
            |source| BrokerError::Evidence {
                operation: "read the spool",
                source: Box::new(source),
            },
        )?;
        let mut done = Reconciled::default();
        let tombstones: Vec<Tombstone> = std::fs::read_dir(layout.kills())
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|entry| {
                        let name = entry.file_name().into_string().ok()?;
                        read_tombstone(&layout, name.strip_suffix(".json")?)
                    })
                    .collect()
            })
            .unwrap_or_default();
        for tombstone in tombstones {
            let Some(spooled) = spool
                .iter()
                .find(|spooled| spooled.receipt.record_id == tombstone.record_id)
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
                .is_some_and(|session| session.state() == desk_contract::api::SessionState::Killed);
            if killed {
                continue;
            }
            let receipt = spooled.receipt.clone();
            let applied = self
                .run_unbounded(tombstone.session_id.clone(), move |inner| {
                    inner.apply_kill(&tombstone, &receipt)
                })
                .await?;
            done.kills_applied += usize::from(applied);
        }
        let workspaces = self
            .run(None, |inner| Ok(inner.reconcile_workspaces()))
            .await?;
        done.destroyed = workspaces.destroyed;
        done.pending = workspaces.pending;
        Ok(done)
    }
}
