//! [`Broker`]: the lease manager. Owns the store, the per-session runtimes (each holding its
//! session's backend behind a per-session lock) and the async facade over the blocking core.
//!
//! Concurrency: every operation runs on tokio's blocking pool. Operations that touch a desktop or
//! a session's files take the session's lock for their whole duration, so they are serialized per
//! session; `status` reads only the store. Before such an operation goes to the pool it waits
//! for its session's turn on the async runtime (`admission.rs`, a bounded queue per session), so
//! no pool thread ever waits for a session's lock. Lock order: session turn, then session lock,
//! then the store's connection lock (held only per statement or transaction), never the reverse.
//!
//! Panics: a panic inside an operation marks its session `error` and answers `internal`; it
//! never takes the daemon down.
//!
//! Just over 400 lines: the runtime slots and the facade's entry points are one piece (the reaper
//! and `Broker::run` are already apart).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use desk_contract::api::{Screenshot, SessionState};
use desk_contract::desktop::Frame;
use desk_contract::{DisplaySize, ErrorCode};
use desk_desktop::SessionControl;
use desk_desktop::{BackendError, BackendFactory, BackendRequest, DesktopBackend, SessionDir};

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::evidence::{Evidence, Journals};
use crate::ids::SessionId;
use crate::journal::recovered_message;
use crate::session::Failure;
use crate::store::{SessionRow, Store};
use crate::util::now_ms;

mod reap;
mod run;
mod signal;

/// The in-memory part of a session: its desktop, when one was created.
pub(crate) struct Runtime {
    pub(crate) backend: Option<Box<dyn DesktopBackend>>,
    /// The display actions are validated against: the backend's, or the configured one before
    /// the backend exists.
    pub(crate) display: DisplaySize,
}

pub(crate) struct Slot {
    runtime: Mutex<Runtime>,
    /// The desktop's out-of-band control, kept outside `runtime` so that Stop and the lease
    /// deadline never wait for a step in progress (`broker/signal.rs`); `None` before the
    /// session's first desktop.
    control: Mutex<Option<Arc<dyn SessionControl>>>,
}

impl Slot {
    fn new(backend: Option<Box<dyn DesktopBackend>>, configured: DisplaySize) -> Arc<Slot> {
        let display = backend
            .as_ref()
            .map_or(configured, |backend| backend.display_size());
        let control = backend.as_ref().map(|backend| backend.control());
        Arc::new(Slot {
            runtime: Mutex::new(Runtime { backend, display }),
            control: Mutex::new(control),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Runtime> {
        // A panic while holding the lock already marked the session `error`; what is left is
        // still safe to shut down.
        self.runtime
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub(crate) struct Inner {
    pub(crate) config: BrokerConfig,
    pub(crate) factory: Arc<dyn BackendFactory>,
    pub(crate) store: Store,
    slots: Mutex<HashMap<SessionId, Arc<Slot>>>,
    /// Serializes lease creation so identity checks and capacity counts are race-free.
    pub(crate) lease_lock: Mutex<()>,
    /// Request metrics and the change counter the status long-poll waits on.
    pub(crate) observability: crate::metrics::Observability,
    /// The per-session queues operations wait in before they take a session's lock.
    pub(crate) admission: Arc<crate::admission::Admission>,
    /// The signing key and the open evidence journals.
    journals: Journals,
    /// The workspace policy every lease is checked against.
    pub(crate) policy: crate::policy::PolicyInForce,
    /// Every session's control state (owner, generation, Stop) and screenshot geometry.
    pub(crate) controls: crate::control::Controls,
    /// Set by `POST /v1/drain`: no new lease until the broker restarts (`health.rs`).
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// The screenshot gate of the policy in force, when it has one (`shot_gate.rs`).
    pub(crate) shot_gates: crate::shot_gate::ShotGates,
    /// The high-risk controls of the policy in force, when it has some (`approval.rs`).
    pub(crate) approvals: crate::approval::ApprovalGate,
}

/// The broker. Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct Broker {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("state_dir", &self.inner.config.state_dir)
            .finish()
    }
}

impl Broker {
    /// Opens the store below `config.state_dir` (creating it), and recovers from a previous run
    /// (a crash, or a stop for an upgrade):
    /// - every `pending` action becomes `unknown` and its session `error` with
    ///   `input_outcome_unknown`; that session's desktop is reaped (only the action in doubt
    ///   fails closed);
    /// - every other `leased`, `ready` or `done` session whose desktop is still running is
    ///   reattached through [`BackendFactory::reattach`] and continues in its state;
    /// - a `ready` or `running` session whose desktop cannot be reattached becomes `error` with
    ///   `desktop_failed` (the message says why) and whatever is left of its desktop is reaped.
    ///
    /// Blocking.
    pub fn open(config: BrokerConfig, factory: impl BackendFactory) -> Result<Broker, BrokerError> {
        let layout = config.layout();
        let sessions_dir = layout.sessions();
        crate::private::ensure_private_dir(&config.state_dir, crate::private::DirUse::State)?;
        crate::private::ensure_private_dir(&sessions_dir, crate::private::DirUse::State)?;
        crate::fault::survive_file_size_limit();
        let store = Store::open(&layout.database())?;
        let journals = Journals::default();
        let evidence = Evidence {
            config: &config,
            journals: &journals,
            frames: desk_policy::FrameRetention::DeleteAtRelease,
        };
        crate::evidence::load_key(evidence)?;
        let policy = crate::policy::load(&config)?;
        // The watchdog enforces the policy's limits (or the operator's stricter flags).
        let limits = match policy.limits() {
            Some(limits) => config.limits.tightened_by(&limits),
            None => config.limits,
        };
        let mut in_doubt = HashSet::new();
        for (session_id, action_index) in store.recover_pending()? {
            tracing::warn!(
                %session_id,
                action_index,
                "{}",
                recovered_message(action_index)
            );
            crate::evidence::action_in_doubt(evidence, &store, &session_id, action_index);
            in_doubt.insert(session_id);
        }
        let mut slots = HashMap::new();
        let unreleased = store.unreleased_sessions()?;
        let known: HashSet<SessionDir> = unreleased.iter().map(SessionRow::dir).collect();
        reap::reap_unknown_desktops(&sessions_dir, &known, &factory);
        for mut session in unreleased {
            let session_dir = session.dir();
            let adoptable = !in_doubt.contains(&session.id)
                && matches!(
                    session.state(),
                    SessionState::Leased | SessionState::Ready | SessionState::Done
                );
            let mut lost_because = None;
            if adoptable {
                let request = BackendRequest {
                    session_id: session.id.to_string(),
                    session_dir: session_dir.clone(),
                    display: config.display,
                    // A running sandbox keeps the binds it started with.
                    read_only: Vec::new(),
                    view: Default::default(),
                    writable: Default::default(),
                    limits: Default::default(),
                };
                match factory.reattach(&request) {
                    Ok(Some(backend)) => {
                        tracing::info!(session_id = %session.id, state = session.state().as_str(), "reattached a running desktop");
                        slots.insert(session.id.clone(), Slot::new(Some(backend), config.display));
                        continue;
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(session_id = %session.id, error = %error, "cannot reattach the session's desktop");
                        lost_because = Some(error.to_string());
                    }
                }
            }
            let n_reaped = factory.reap_orphans(&session_dir);
            if n_reaped > 0 {
                tracing::info!(session_id = %session.id, n_reaped, "reaped processes of a desktop that was not reattached");
            }
            let message = match lost_because {
                Some(reason) => {
                    format!("the broker restarted and the session's desktop was lost: {reason}")
                }
                None => "the broker restarted and the session's desktop was lost".to_string(),
            };
            let lost = session
                .lifecycle
                .desktop_lost(Failure::new(ErrorCode::DesktopFailed, message));
            if lost != session.lifecycle {
                session.lifecycle = lost;
                store.save_session(&session)?;
            }
        }
        let observer = config.observer.then(|| config.state_dir.clone());
        let inner = Inner {
            config: BrokerConfig { limits, ..config },
            factory: Arc::new(factory),
            store,
            slots: Mutex::new(slots),
            lease_lock: Mutex::new(()),
            observability: crate::metrics::Observability::new(),
            admission: Arc::default(),
            journals,
            shot_gates: policy.shot_gates()?,
            approvals: crate::approval::ApprovalGate::new(policy.approvals()?)
                .with_observer(observer),
            policy,
            controls: crate::control::Controls::default(),
            draining: std::sync::atomic::AtomicBool::new(false),
        };
        Ok(Broker {
            inner: Arc::new(inner),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &BrokerConfig {
        &self.inner.config
    }

    /// Lets go of every live desktop without stopping it (daemon stop for a restart or upgrade):
    /// worker connections close, desktops keep running, and the next broker on the same state
    /// directory reattaches to them ([`Broker::open`]). Sessions are not released.
    pub async fn detach_backends(&self) {
        let _ = self
            .run(None, |inner| {
                let slots: Vec<(SessionId, Arc<Slot>)> = inner
                    .lock_slots()
                    .iter()
                    .map(|(id, slot)| (id.clone(), Arc::clone(slot)))
                    .collect();
                for (session_id, slot) in slots {
                    if let Some(mut backend) = slot.lock().backend.take() {
                        backend.detach();
                        tracing::info!(%session_id, "detached from a running desktop");
                    }
                }
                Ok(())
            })
            .await;
    }

    /// Shuts down every live desktop without releasing sessions (a drain: nothing survives for
    /// a later broker to reattach).
    pub async fn shutdown_backends(&self) {
        let _ = self
            .run(None, |inner| {
                let slots: Vec<(SessionId, Arc<Slot>)> = inner
                    .lock_slots()
                    .iter()
                    .map(|(id, slot)| (id.clone(), Arc::clone(slot)))
                    .collect();
                for (session_id, slot) in slots {
                    if let Some(mut backend) = slot.lock().backend.take()
                        && let Err(error) = backend.shutdown()
                    {
                        tracing::warn!(%session_id, error = %error, "failed to shut down a desktop");
                    }
                }
                Ok(())
            })
            .await;
    }
}

impl Inner {
    fn lock_slots(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<Slot>>> {
        self.slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The slot of an existing session, created on first use.
    pub(crate) fn slot(&self, session_id: &SessionId) -> Arc<Slot> {
        let mut slots = self.lock_slots();
        let slot = slots
            .entry(session_id.clone())
            .or_insert_with(|| Slot::new(None, self.config.display));
        Arc::clone(slot)
    }

    /// A process of the session's desktop died (the operation sent nothing): the session goes
    /// to `error` with `desktop_failed` and a message naming the process. Release still cleans
    /// up what is left.
    pub(crate) fn fail_if_desktop_died(&self, session_id: &SessionId, error: &BrokerError) {
        if let BrokerError::Desktop {
            source: BackendError::ResourceLimit(reason),
            ..
        } = error
        {
            let message = format!("the session's desktop reached a resource limit: {reason}");
            tracing::warn!(%session_id, "{message}");
            if let Err(error) = self.mark_error(session_id, ErrorCode::ResourceLimit, &message) {
                tracing::error!(%session_id, error = %error, "failed to record a resource limit");
            }
            return;
        }
        if let BrokerError::Desktop {
            source: BackendError::ProcessDied(reason),
            ..
        } = error
        {
            let message = format!("a process of the session's desktop died: {reason}");
            tracing::warn!(%session_id, "{message}");
            if let Err(error) = self.mark_error(session_id, ErrorCode::DesktopFailed, &message) {
                tracing::error!(%session_id, error = %error, "failed to record a dead desktop");
            }
        }
    }

    pub(crate) fn forget_slot(&self, session_id: &SessionId) {
        self.controls.forget(session_id);
        self.approvals.forget(session_id);
        self.lock_slots().remove(session_id);
    }

    /// Loads a session or answers `not_found`.
    pub(crate) fn load(&self, session_id: &SessionId) -> Result<SessionRow, BrokerError> {
        self.store
            .session(session_id)?
            .ok_or_else(|| BrokerError::NotFound(format!("session {:?}", session_id.as_str())))
    }

    /// Refuses released and expired sessions.
    pub(crate) fn check_live(
        &self,
        session: &SessionRow,
        operation: &'static str,
    ) -> Result<(), BrokerError> {
        session
            .lifecycle
            .check_live(&session.id, session.expires_at_ms, now_ms(), operation)
    }

    /// The evidence hooks' view of this broker.
    pub(crate) fn evidence(&self) -> Evidence<'_> {
        Evidence {
            config: &self.config,
            journals: &self.journals,
            frames: self.policy.frame_retention(),
        }
    }

    /// Extends the lease from now.
    pub(crate) fn renew(&self, session: &mut SessionRow) {
        let ttl_ms = u64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(u64::MAX);
        session.expires_at_ms = now_ms().saturating_add(ttl_ms);
        // The desktop's own backstop: it stops at expiry plus grace if no broker releases it.
        let grace_ms = u64::try_from(self.config.lease_grace.as_millis()).unwrap_or(u64::MAX);
        let deadline_secs = session
            .expires_at_ms
            .saturating_add(grace_ms)
            .div_ceil(1000);
        if let Err(error) = self.set_lease_deadline(&session.id, deadline_secs) {
            tracing::warn!(session_id = %session.id, %error, "failed to record the desktop's lease deadline");
        }
    }

    /// Records a failure on a session and moves it to `error`.
    pub(crate) fn mark_error(
        &self,
        session_id: &SessionId,
        code: ErrorCode,
        message: &str,
    ) -> Result<(), BrokerError> {
        if let Some(mut session) = self.store.session(session_id)? {
            let failed = session.lifecycle.fail(Failure::new(code, message));
            if failed != session.lifecycle {
                session.lifecycle = failed;
                self.store.save_session(&session)?;
            }
        }
        Ok(())
    }
}

/// Builds the client-facing screenshot of `frame` with `sequence`. The PNG goes out raw
/// (`png`): the HTTP layer writes it as base64 only for a caller that wants JSON
/// (desk-server's `shot_json.rs`).
pub(crate) fn screenshot(frame: &Frame, sequence: u64) -> Screenshot {
    Screenshot {
        png_base64: String::new(),
        png: Some(frame.png.as_slice().into()),
        width: frame.width,
        height: frame.height,
        sequence,
        timestamp_ms: frame.captured_at_ms,
        app_maximized: frame.app_maximized,
        sha256: frame.sha256.clone(),
        // Given by `Controls::identify` where the screenshot is handed out.
        screenshot_id: None,
        image_content_rect: None,
        image_global_bounds: None,
        zoom: None,
        gate: None,
    }
}

/// The state refusal used by most operations.
pub(crate) fn wrong_state(operation: &'static str, session: &SessionRow) -> BrokerError {
    session.lifecycle.refuse(operation)
}
