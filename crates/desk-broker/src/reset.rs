//! Reset and screenshots: creating the session's desktop, preparing the attempt file, the
//! verified handoff, and live captures.
//!
//! Invariants: a reset runs only from `leased` (an identical `request_id` replays the cached
//! response in any live state); the handoff window must be maximized; screenshot sequences are
//! strictly increasing per session (persisted in `last_sequence`). Every handed-out frame (the
//! handoff and each screenshot) has a signed `screenshot` record before it is returned.

use std::path::Path;

use desk_contract::api::{ResetRequest, ResetResponse, Screenshot, SessionState};
use desk_desktop::{BackendError, BackendRequest};

use crate::broker::{Broker, Inner, screenshot};
use crate::door::{Door, Need};
use crate::error::BrokerError;
use crate::frames;
use crate::ids::SessionId;
use crate::journal::store_unavailable;
use crate::ledger::records::HandedOff;
use crate::logs::EventLogs;
use crate::session::Failure;
use crate::util::{check_identifier, sha256_hex};

/// SHA-256 and size of a file.
pub(crate) fn file_digest(path: &Path) -> Result<(String, u64, Vec<u8>), BrokerError> {
    let bytes = std::fs::read(path).map_err(BrokerError::io("read the attempt file", path))?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    Ok((sha256_hex(&bytes), size, bytes))
}

impl Inner {
    fn reset(
        &self,
        session_id: &SessionId,
        request: ResetRequest,
    ) -> Result<ResetResponse, BrokerError> {
        check_identifier("request_id", &request.request_id)?;
        self.enter(session_id, "reset", Need::Live, |door| {
            self.reset_in(session_id, request, door)
        })
    }

    fn reset_in(
        &self,
        session_id: &SessionId,
        request: ResetRequest,
        mut door: Door<'_>,
    ) -> Result<ResetResponse, BrokerError> {
        let session = door.session().clone();
        if session.reset_request_id.as_deref() == Some(request.request_id.as_str())
            && let Some(cached) = &session.reset_response
        {
            let mut response: ResetResponse = serde_json::from_str(cached)
                .map_err(BrokerError::json("read the cached reset response"))?;
            if !response.screenshot.has_image() {
                frames::load(&session.dir(), &mut response.screenshot)?;
            }
            response.idempotent_replay = true;
            return Ok(response);
        }
        session.lifecycle.check_reset()?;
        let session_dir = session.dir();
        std::fs::create_dir_all(session_dir.path()).map_err(BrokerError::io(
            "create the session directory",
            session_dir.path(),
        ))?;
        let profile = self
            .config
            .profiles
            .get(&session.profile)
            .map_err(|_| BrokerError::NotFound(format!("profile {:?}", session.profile)))?;
        // A lease is granted only under a verified policy, whose lint admits only the attempt
        // directory or directories below it.
        let writable = self.policy.writable().ok_or_else(|| {
            BrokerError::PolicyInvalid(
                "the workspace policy in force names no writable directory the sandbox can bind"
                    .to_string(),
            )
        })?;
        let prepared = profile
            .prepare(
                &session_dir,
                desk_desktop::SandboxPolicy::for_mode(self.config.sandbox),
                &writable,
            )
            .map_err(BrokerError::Profile)?;
        // What the census (watchdog, and before each action) allows the app to run.
        desk_desktop::census::CensusRules::for_profile(profile)
            .write(&session_dir)
            .map_err(BrokerError::io(
                "write the census rules",
                session_dir.census_file(),
            ))?;

        let runtime = door.runtime();
        if runtime.backend.is_none() {
            crate::workspace::record(
                &self.config.layout(),
                session_id,
                crate::workspace::WorkspaceState::Launching,
                &desk_desktop::destroy::Remains::default(),
            )?;
            let backend = self
                .factory
                .create(&BackendRequest {
                    session_id: session_id.to_string(),
                    session_dir: session_dir.clone(),
                    display: self.config.display,
                    read_only: profile.read_only.clone(),
                    view: profile.fs_view(),
                    writable,
                    limits: profile.limits(),
                })
                .map_err(BrokerError::desktop("create the desktop"))?;
            runtime.display = backend.display_size();
            self.keep_control(session_id, backend.control());
            runtime.backend = Some(backend);
        }
        let backend = door.desktop()?;
        let handoff = backend
            .start_app(&prepared.launch)
            .map_err(|error| match error {
                BackendError::AppNotMaximized(message) => BrokerError::AppNotMaximized(message),
                BackendError::HandoffUnstable(message) => BrokerError::ResetUnstable(message),
                other => BrokerError::Desktop {
                    operation: "reset",
                    source: other,
                },
            })
            .and_then(|handoff| {
                if handoff.window.maximized {
                    Ok(handoff)
                } else {
                    Err(BrokerError::AppNotMaximized(format!(
                        "window {:?} was not maximized",
                        handoff.window.title
                    )))
                }
            });
        let handoff = match handoff {
            Ok(handoff) => handoff,
            Err(error) => {
                // Recorded as the client is told it (status shows it as `last_error`).
                let body = error.to_body();
                crate::ledger::records::reset_failed(
                    &mut door,
                    Failure::new(body.code, body.message),
                )?;
                return Err(error);
            }
        };
        // The app may already have replaced the file: read it as any workspace file.
        let reset_sha = sha256_hex(
            &crate::artifact::read::read_workspace_file(
                &prepared.attempt_path,
                crate::artifact::read::MAX_ATTEMPT_BYTES,
                &crate::artifact::read::Reader::for_session(
                    self.config.workspace_reader.as_deref(),
                    &session_dir,
                ),
            )?
            .bytes,
        );
        EventLogs::new(&session_dir).init()?;
        let sequence = session.last_sequence + 1;
        let display = backend.display_size();
        let mut response = ResetResponse {
            session_id: session.id.to_string(),
            state: SessionState::Ready,
            window: handoff.window.clone(),
            screenshot: screenshot(&handoff.frame, sequence),
            dismissed_overlays: handoff.dismissed_overlays.clone(),
            elapsed_ms: handoff.elapsed_ms,
            settle: Some(handoff.settle.clone()),
            idempotent_replay: false,
            workspace: backend.workspace_facts(),
        };
        // A new bind of the app window: earlier screenshot ids go stale.
        self.controls.rebind(session_id, &session_dir)?;
        self.controls
            .identify(session_id, &session_dir, &mut response.screenshot, display)?;
        crate::ledger::records::handed_off(
            self,
            &mut door,
            HandedOff {
                response: &response,
                png: &handoff.frame.png,
                sha256: &handoff.frame.sha256,
                captured_at_ms: handoff.frame.captured_at_ms,
                request_id: request.request_id,
                reset_sha,
                attempt_path: prepared.attempt_path.display().to_string(),
            },
        )?;
        crate::workspace::record(
            &self.config.layout(),
            session_id,
            crate::workspace::WorkspaceState::Running,
            &desk_desktop::destroy::Remains::default(),
        )?;
        tracing::info!(%session_id, elapsed_ms = handoff.elapsed_ms, "session reset");
        Ok(response)
    }

    fn screenshot(&self, session_id: &SessionId) -> Result<Screenshot, BrokerError> {
        self.enter(session_id, "screenshot", Need::Observe, |mut door| {
            let frame = door
                .desktop()?
                .capture()
                .map_err(BrokerError::desktop("capture a screenshot"))?;
            let sequence =
                crate::ledger::records::screenshot(self, &mut door, &frame.png, &frame.sha256)?;
            let mut shot = screenshot(&frame, sequence);
            self.controls
                .identify(session_id, &door.session().dir(), &mut shot, door.display())?;
            Ok(shot)
        })
    }
}

impl Broker {
    /// `reset_session`: prepares the attempt, starts the app and returns the handoff screenshot.
    pub async fn reset(
        &self,
        session_id: &SessionId,
        request: ResetRequest,
    ) -> Result<ResetResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.reset(&session_id, request)
        })
        .await
        .map_err(store_unavailable("reset_session"))
    }

    /// `get_screenshot`.
    pub async fn screenshot(&self, session_id: &SessionId) -> Result<Screenshot, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.screenshot(&session_id)
        })
        .await
        .map_err(store_unavailable("get_screenshot"))
    }
}
