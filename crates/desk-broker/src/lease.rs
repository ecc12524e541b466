//! Leases: creation (idempotent on `(task_id, attempt_id)`), status, release and the reaper
//! that releases expired leases.
//!
//! Invariants: one session per `(task_id, attempt_id)` ever (a released identity is not leased
//! again: `lease_conflict`); at most `max_sessions` unreleased sessions whose memory estimates
//! fit the budget, none while draining (`health.rs`); release is idempotent and
//! deletes the session directory. Every lease answer carries a freshly minted lease token
//! whose SHA-256 is stored before the answer is sent (see `auth.rs`).

use std::path::Path;

use desk_contract::ErrorBody;
use desk_contract::api::{
    CheckpointStatus, LeaseRequest, LeaseResponse, LeaseToken, ReleaseResponse, SessionState,
    StatusResponse,
};

use crate::broker::{Broker, Inner};
use crate::door::Need;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::journal::store_unavailable;
use crate::session::Lifecycle;
use crate::store::SessionRow;
use crate::util::{check_identifier, now_ms, rfc3339};

fn lease_response(
    session: &SessionRow,
    idempotent_replay: bool,
    lease_token: LeaseToken,
    policy_sha256: Option<String>,
) -> LeaseResponse {
    LeaseResponse {
        session_id: session.id.to_string(),
        state: session.state(),
        expires_at: rfc3339(session.expires_at_ms),
        task_id: session.task_id.clone(),
        attempt_id: session.attempt_id.clone(),
        profile: session.profile.clone(),
        idempotent_replay,
        lease_token,
        policy_sha256,
    }
}

impl Inner {
    fn lease(&self, request: LeaseRequest) -> Result<LeaseResponse, BrokerError> {
        check_identifier("task_id", &request.task_id)?;
        check_identifier("attempt_id", &request.attempt_id)?;
        let profile = request
            .profile
            .unwrap_or_else(|| self.config.default_profile.clone());
        if self.config.profiles.get(&profile).is_err() {
            return Err(BrokerError::NotFound(format!("profile {profile:?}")));
        }
        // The workspace policy decides first: under a policy that fails, nothing is leased.
        let policy_sha256 = self
            .policy
            .for_lease(&profile, crate::policy::now_unix())?
            .sha256()
            .to_string();
        let _leasing = self
            .lease_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(existing) = self
            .store
            .session_by_identity(&request.task_id, &request.attempt_id)?
        {
            if existing.profile != profile {
                return Err(BrokerError::LeaseConflict(format!(
                    "task {:?} attempt {:?} is leased with profile {:?}, not {profile:?}",
                    request.task_id, request.attempt_id, existing.profile
                )));
            }
            if existing.state() == SessionState::Released {
                return Err(BrokerError::LeaseConflict(format!(
                    "task {:?} attempt {:?} was already released; use a new attempt_id",
                    request.task_id, request.attempt_id
                )));
            }
            self.check_live(&existing, "lease")?;
            // The broker keeps only token hashes, so a replay mints a fresh token; the earlier
            // ones stay valid until release.
            let token = self.mint_lease_token(&existing.id)?;
            let leased_under = self.store.session_policy(&existing.id)?;
            return Ok(lease_response(&existing, true, token, leased_under));
        }
        // Draining, the session cap and the memory budget (`health.rs`).
        self.admit_lease(&profile)?;
        // A machine that cannot contain a desktop refuses the lease, not its first reset.
        self.factory
            .check_available()
            .map_err(BrokerError::desktop("lease"))?;
        let session_id = SessionId::generate()?;
        let session_dir = self.config.layout().session(session_id.as_str());
        let mut session = SessionRow {
            id: session_id,
            task_id: request.task_id,
            attempt_id: request.attempt_id,
            profile,
            lifecycle: Lifecycle::leased(),
            created_at_ms: now_ms(),
            expires_at_ms: 0,
            last_sequence: 0,
            reset_request_id: None,
            reset_response: None,
            reset_sha: None,
            attempt_path: None,
            handoff_ms: None,
            last_frame_ms: None,
            checkpoint_sha: None,
            checkpoint_size: None,
            checkpoint_method: None,
            session_dir: session_dir.path().display().to_string(),
        };
        self.renew(&mut session);
        self.store
            .record_session_policy(&session.id, &policy_sha256)?;
        self.store.insert_session(&session)?;
        let token = self.mint_lease_token(&session.id)?;
        crate::evidence::session_started(self.evidence(), &session, &policy_sha256)?;
        tracing::info!(
            session_id = %session.id,
            task_id = session.task_id,
            "lease granted"
        );
        Ok(lease_response(&session, false, token, Some(policy_sha256)))
    }

    fn status(&self, session_id: &SessionId) -> Result<StatusResponse, BrokerError> {
        let session = self.load(session_id)?;
        let last_error = session
            .lifecycle
            .last_error()
            .map(|failure| ErrorBody::new(failure.code, failure.message.clone()));
        let checkpoint = match (&session.checkpoint_sha, session.checkpoint_size) {
            (Some(sha256), Some(size)) => Some(CheckpointStatus {
                sha256: sha256.clone(),
                size,
            }),
            _ => None,
        };
        Ok(StatusResponse {
            session_id: session.id.to_string(),
            state: session.state(),
            task_id: session.task_id.clone(),
            attempt_id: session.attempt_id.clone(),
            profile: session.profile.clone(),
            action_count: session.next_action_index(),
            next_action_index: session.next_action_index(),
            checkpoint,
            last_error,
            expires_at: rfc3339(session.expires_at_ms),
            // Cached with the reset answer (see `reset`); only that field is built from it.
            workspace: session.reset_response.as_deref().and_then(|text| {
                #[derive(serde::Deserialize)]
                struct Cached {
                    workspace: Option<desk_contract::desktop::WorkspaceFacts>,
                }
                serde_json::from_str::<Cached>(text).ok()?.workspace
            }),
            policy_sha256: self.store.session_policy(&session.id)?,
            workspace_state: crate::workspace::read(&self.config.layout(), &session.id)
                .map(|record| record.state),
            control: match session.state() {
                SessionState::Released => None,
                _ => self.controls.status(&session.id, &session.dir()).ok(),
            },
        })
    }

    pub(crate) fn release(
        &self,
        session_id: &SessionId,
        expired: bool,
    ) -> Result<ReleaseResponse, BrokerError> {
        let released_now = self.enter(session_id, "release", Need::Unchecked, |mut door| {
            let Some(released) = door.session().lifecycle.release(expired) else {
                return Ok(false);
            };
            let layout = self.config.layout();
            let session_dir = door.session().dir();
            let remains = desk_desktop::destroy::remains(&session_dir);
            // Release goes on if the record cannot be written: the reconciler then finds the
            // workspace `running` with its session released, and proves its removal.
            if let Err(error) = crate::workspace::record(
                &layout,
                session_id,
                crate::workspace::WorkspaceState::RemovalPending,
                &remains,
            ) {
                tracing::warn!(%session_id, error = %error, "failed to record removal_pending");
            }
            match door.runtime().backend.take() {
                Some(mut backend) => {
                    if let Err(error) = backend.shutdown() {
                        tracing::warn!(%session_id, error = %error, "failed to shut down a desktop on release");
                    }
                }
                None => {
                    let n_reaped = self.factory.reap_orphans(&session_dir);
                    if n_reaped > 0 {
                        tracing::info!(
                            %session_id,
                            n_reaped,
                            "reaped processes left by an earlier broker run"
                        );
                    }
                }
            }
            let teardown = || {
                remove_dir(session_dir.path())?;
                if desk_desktop::destroy::check(&remains).proven()
                    && let Err(error) = crate::workspace::record(
                        &layout,
                        session_id,
                        crate::workspace::WorkspaceState::Destroyed,
                        &remains,
                    )
                {
                    tracing::warn!(%session_id, error = %error, "failed to record destroyed");
                }
                Ok(())
            };
            crate::ledger::records::released(self, &mut door, released, teardown)?;
            // After the row says `released`: a kill that comes now refuses it.
            crate::kill::remove_at_release(&layout, session_id);
            Ok(true)
        })?;
        if released_now {
            self.forget_slot(session_id);
            tracing::info!(%session_id, expired, "session released");
        }
        Ok(ReleaseResponse {
            session_id: session_id.to_string(),
            state: SessionState::Released,
            released_now,
        })
    }

    /// The unreleased sessions whose lease expired.
    fn expired_sessions(&self) -> Result<Vec<SessionId>, BrokerError> {
        let now = now_ms();
        Ok(self
            .store
            .unreleased_sessions()?
            .into_iter()
            .filter(|session| session.expires_at_ms < now)
            .map(|session| session.id)
            .collect())
    }
}

fn remove_dir(dir: &Path) -> Result<(), BrokerError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(BrokerError::io("delete the session directory", dir)(error)),
    }
}

impl Broker {
    /// `lease_session`: reserves a desktop, or replays the active lease of the same identity.
    pub async fn lease(&self, request: LeaseRequest) -> Result<LeaseResponse, BrokerError> {
        self.run(None, move |inner| inner.lease(request))
            .await
            .map_err(store_unavailable("lease_session"))
    }

    /// `get_status`.
    pub async fn status(&self, session_id: &SessionId) -> Result<StatusResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(None, move |inner| inner.status(&session_id)).await
    }

    /// `release_session`: idempotent; shuts the desktop down and deletes the session directory.
    pub async fn release(&self, session_id: &SessionId) -> Result<ReleaseResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.release(&session_id, false)
        })
        .await
        .map_err(store_unavailable("release_session"))
    }

    /// Releases expired leases once; returns how many were released.
    pub async fn release_expired(&self) -> Result<usize, BrokerError> {
        let expired = self.run(None, |inner| inner.expired_sessions()).await?;
        let n_released = expired.len();
        for session_id in expired {
            // Like every session operation, in the session's turn (never `session_busy`).
            self.run_unbounded(session_id.clone(), move |inner| {
                inner.release(&session_id, true)
            })
            .await?;
        }
        Ok(n_released)
    }

    /// Spawns the reaper: every `reaper_interval`, releases expired leases. Abort the handle to
    /// stop it.
    pub fn spawn_reaper(&self) -> tokio::task::JoinHandle<()> {
        let broker = self.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(broker.inner.config.reaper_interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                match broker.release_expired().await {
                    Ok(0) => {}
                    Ok(n_released) => tracing::info!(n_released, "reaper released expired leases"),
                    Err(error) => tracing::error!(error = %error, "reaper failed"),
                }
                // The first tick is at once: the reconciler runs at start, then on every tick.
                match broker.reconcile().await {
                    Ok(done) if done == crate::Reconciled::default() => {}
                    Ok(done) => tracing::info!(?done, "reconciler"),
                    Err(error) => tracing::error!(error = %error, "reconciler failed"),
                }
            }
        })
    }
}
