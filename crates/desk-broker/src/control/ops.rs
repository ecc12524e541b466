//! The control session's operations on [`Broker`] (claim, restart, Stop, status) and the
//! capabilities document.
//!
//! Claim, restart, Stop and status never wait in the session's queue: they touch only the
//! control state (its own lock, never held across input). Stop then waits its turn to release
//! held input, so the release always follows the generation's advance.

use desk_contract::control::{
    Capabilities, ControlClaim, ControlStatus, FeatureSupport, MAX_PROGRAM_STEPS, StopRequest,
    StopResponse,
};
use desk_contract::{ActionType, ErrorCode};
use desk_desktop::BackendCapabilities;

use crate::broker::{Broker, Inner};
use crate::error::BrokerError;
use crate::ids::SessionId;

/// Features a client may ask for: `(name, supported, note)`.
const FEATURES: &[(&str, bool, &str)] = &[
    (
        "control_session",
        true,
        "owner, observe/act mode, generation tokens, Stop and restart",
    ),
    (
        "input_programs",
        true,
        "POST .../programs: steps of the action schema, validated whole before any input",
    ),
    (
        "screenshot_geometry",
        true,
        "screenshot_id, image_content_rect and image_global_bounds on every screenshot",
    ),
    (
        "status_wait_generation",
        true,
        "the status long-poll reports and waits on the control generation",
    ),
    (
        "foreground_input",
        true,
        "XTEST seat input on the session's own private display",
    ),
    (
        "background_input",
        false,
        "X11 has no verifiable directed background input; every input is XTEST",
    ),
    (
        "wayland_portals",
        false,
        "desktops are Xvfb (X11); no Wayland portal path exists",
    ),
    ("browser_automation", false, "no browser or CDP control"),
    ("virtual_cursor", false, "no virtual cursor overlay"),
    (
        "region_capture",
        true,
        "POST .../zoom: a fresh capture of a region given in a current screenshot's pixels",
    ),
    (
        "zoom",
        true,
        "POST .../zoom: the region enlarged by a whole number up to 8 (long edge at most \
         1568 px), a marked screenshot of its own whose pixels map onto the region",
    ),
    (
        "clipboard",
        true,
        "GET/PUT .../clipboard: the session display's CLIPBOARD as UTF-8 text, as the \
         workspace policy's clipboard mode allows (refused: clipboard_disabled)",
    ),
];

/// Whether the broker's desktops offer a feature, from what its factory declares.
type Offered = fn(&BackendCapabilities) -> bool;

/// Features offered exactly when the broker's desktops declare them
/// (`BackendFactory::capabilities`): `(name, declared, note when offered, note when not)`.
const DESKTOP_FEATURES: &[(&str, Offered, &str, &str)] = &[
    (
        "accessibility",
        |desktops| desktops.accessibility,
        "GET .../accessibility: the app's AT-SPI tree from the session's private bus, bounded \
         (max_nodes, max_depth, 3 s), with an observation_id and each node's window",
        "this broker's desktops have no accessibility bus (serve --backend fake)",
    ),
    (
        "windows",
        |desktops| desktops.windows,
        "GET .../windows: the app's top-level windows (main, dialog, menu, popup) with bounds \
         and on-screen state",
        "this broker's desktops have no windows to list (serve --backend fake)",
    ),
    (
        "semantic_steps",
        |desktops| desktops.accessibility,
        "program steps ax_press and ax_set_text on a node of the current observation in the \
         bound window or a popup; checked before any input, never a coordinate fallback",
        "no accessibility, so no semantic steps",
    ),
];

/// The feature name of the screenshot gate (`shot_gate.rs`).
const SCREENSHOT_GATE: &str = "screenshot_gate";

/// The broker-wide capabilities document; `desktops` is what its desktops declare (with
/// accessibility the semantic step types are listed; each of [`DESKTOP_FEATURES`] is offered
/// as declared).
pub(crate) fn capabilities(desktops: BackendCapabilities) -> Capabilities {
    let accessibility = desktops.accessibility;
    let action_types: Vec<String> = ActionType::ALL
        .iter()
        .filter(|kind| !kind.is_semantic())
        .map(|kind| kind.as_str().to_string())
        .collect();
    let step_types: Vec<String> = ActionType::ALL
        .iter()
        .filter(|kind| accessibility || !kind.is_semantic())
        .map(|kind| kind.as_str().to_string())
        .collect();
    let offered = FEATURES
        .iter()
        .map(|(feature, supported, note)| (*feature, *supported, *note));
    let introspection = DESKTOP_FEATURES.iter().map(|(feature, declared, yes, no)| {
        let offered = declared(&desktops);
        (*feature, offered, if offered { *yes } else { *no })
    });
    Capabilities {
        api: "/v1".to_string(),
        // The server's route table fills this in (desk-server's `routes/table.rs`): the core
        // knows no route.
        routes: Vec::new(),
        action_types,
        step_types,
        max_program_steps: MAX_PROGRAM_STEPS as u64,
        screenshot_history: super::shots::HISTORY as u64,
        modes: desk_contract::control::ControlMode::ALL
            .iter()
            .map(|mode| mode.as_str().to_string())
            .collect(),
        features: offered
            .chain(introspection)
            .map(|(feature, supported, note)| FeatureSupport {
                feature: feature.to_string(),
                supported,
                refusal: (!supported).then_some(ErrorCode::Unsupported),
                note: note.to_string(),
            })
            .collect(),
        session_id: None,
        control: None,
    }
}

/// `GET /v1/capabilities/{feature}`: the feature's entry when offered; `unsupported` when
/// known and not offered; `not_found` when unknown.
pub(crate) fn feature(
    name: &str,
    desktops: BackendCapabilities,
) -> Result<FeatureSupport, BrokerError> {
    let Some(found) = capabilities(desktops)
        .features
        .into_iter()
        .find(|entry| entry.feature == name)
    else {
        return Err(BrokerError::NotFound(format!(
            "feature {:?}",
            desk_contract::strict::clip(name)
        )));
    };
    if found.supported {
        Ok(found)
    } else {
        Err(BrokerError::Control {
            code: ErrorCode::Unsupported,
            message: format!("{} is not supported: {}", found.feature, found.note),
        })
    }
}

impl Inner {
    /// Runs a control operation on a live session.
    fn with_control<T>(
        &self,
        session_id: &SessionId,
        operation: &'static str,
        apply: impl FnOnce(&Inner, &desk_desktop::SessionDir) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let session = self.enter_unlocked(session_id, operation)?;
        apply(self, &session.dir())
    }
}

impl Broker {
    /// `GET /v1/capabilities`.
    pub fn capabilities(&self) -> Capabilities {
        let mut document = capabilities(self.inner.factory.capabilities());
        document.features.push(self.screenshot_gate_feature());
        document.features.push(self.inner.approvals.feature());
        document.features.push(self.observer_feature());
        document
    }

    /// `GET /v1/capabilities/{feature}`.
    pub fn feature(&self, name: &str) -> Result<FeatureSupport, BrokerError> {
        if name == SCREENSHOT_GATE
            || name == crate::approval::APPROVAL
            || name == crate::observer::OBSERVER
        {
            let found = match name {
                SCREENSHOT_GATE => self.screenshot_gate_feature(),
                crate::observer::OBSERVER => self.observer_feature(),
                _ => self.inner.approvals.feature(),
            };
            return match found.supported {
                true => Ok(found),
                false => Err(BrokerError::Control {
                    code: ErrorCode::Unsupported,
                    message: format!("{} is not supported: {}", found.feature, found.note),
                }),
            };
        }
        feature(name, self.inner.factory.capabilities())
    }

    /// `screenshot_gate`: offered when the workspace policy in force has a gate.
    fn screenshot_gate_feature(&self) -> FeatureSupport {
        let supported = self.inner.shot_gates.enabled();
        FeatureSupport {
            feature: SCREENSHOT_GATE.to_string(),
            supported,
            refusal: (!supported).then_some(ErrorCode::Unsupported),
            note: if supported {
                "every frame for the agent passes the workspace policy's screenshot gate first; \
                 a withheld one comes without its image, with screenshot.gate saying why"
            } else {
                "the workspace policy has no screenshot_gate"
            }
            .to_string(),
        }
    }

    /// `GET /v1/sessions/{id}/control`.
    pub async fn control_status(
        &self,
        session_id: &SessionId,
    ) -> Result<ControlStatus, BrokerError> {
        let id = session_id.clone();
        self.run(None, move |inner| {
            inner.with_control(&id, "control_status", |inner, dir| {
                inner.controls.status(&id, dir)
            })
        })
        .await
    }

    /// `POST /v1/sessions/{id}/control`.
    pub async fn claim_control(
        &self,
        session_id: &SessionId,
        claim: ControlClaim,
    ) -> Result<ControlStatus, BrokerError> {
        let id = session_id.clone();
        self.run(None, move |inner| {
            inner.with_control(&id, "claim_control", |inner, dir| {
                let before = inner.controls.status(&id, dir)?.generation;
                let status = inner.controls.claim(&id, dir, &claim)?;
                // Like Stop: a step of the replaced generation settling or waiting in the
                // worker ends now, without waiting for the session's turn.
                if status.generation != before
                    && let Err(error) = inner.signal_stop(&id, status.generation)
                {
                    tracing::warn!(session_id = %id, %error, "a new control generation could not signal the worker; the step settles in full");
                }
                tracing::info!(
                    session_id = %id,
                    generation = status.generation,
                    mode = status.mode.as_str(),
                    "control claimed"
                );
                Ok(status)
            })
        })
        .await
    }

    /// `POST /v1/sessions/{id}/control/restart`.
    pub async fn restart_control(
        &self,
        session_id: &SessionId,
        claim: ControlClaim,
    ) -> Result<ControlStatus, BrokerError> {
        let id = session_id.clone();
        self.run(None, move |inner| {
            inner.with_control(&id, "restart_control", |inner, dir| {
                let status = inner.controls.restart(&id, dir, &claim)?;
                tracing::info!(
                    session_id = %id,
                    generation = status.generation,
                    "control restarted"
                );
                Ok(status)
            })
        })
        .await
    }

    /// `POST /v1/sessions/{id}/stop`: advances the generation and marks the session stopped
    /// first (durably; a running program halts before its next step and its observation is
    /// discarded), signals the worker (a settle wait in progress ends `interrupted`), then
    /// waits its turn to release held keys and buttons.
    pub async fn stop(
        &self,
        session_id: &SessionId,
        request: StopRequest,
    ) -> Result<StopResponse, BrokerError> {
        let id = session_id.clone();
        let control = self
            .run(None, move |inner| {
                inner.with_control(&id, "stop", |inner, dir| {
                    let status = inner.controls.stop(&id, dir, request.reason)?;
                    // Then the worker: a step settling for the old generation ends now
                    // (`interrupted`); it never held the session's turn this waits for.
                    if let Err(error) = inner.signal_stop(&id, status.generation) {
                        tracing::warn!(session_id = %id, %error, "stop could not signal the worker; the step settles in full");
                    }
                    tracing::info!(
                        session_id = %id,
                        generation = status.generation,
                        reason = request.reason.as_str(),
                        "control stopped"
                    );
                    Ok(status)
                })
            })
            .await?;
        let id = session_id.clone();
        let released = self
            .run(Some(id.clone()), move |inner| {
                let slot = inner.slot(&id);
                let mut runtime = slot.lock();
                match runtime.backend.as_mut() {
                    Some(backend) => backend
                        .release_held()
                        .map(Some)
                        .map_err(BrokerError::desktop("release held input after stop")),
                    None => Ok(None),
                }
            })
            .await;
        let released_held = match released {
            Ok(released) => released,
            Err(error) => {
                tracing::warn!(%session_id, %error, "stop could not release held input; every step releases its own");
                None
            }
        };
        Ok(StopResponse {
            control,
            released_held,
        })
    }

    /// `GET /v1/sessions/{id}/capabilities`: the broker's document with the session's control.
    pub async fn session_capabilities(
        &self,
        session_id: &SessionId,
    ) -> Result<Capabilities, BrokerError> {
        let mut document = self.capabilities();
        document.control = Some(self.control_status(session_id).await?);
        document.session_id = Some(session_id.to_string());
        Ok(document)
    }
}
