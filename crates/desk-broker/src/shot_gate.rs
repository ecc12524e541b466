//! The screenshot risk gate on the way out (containment G003, `docs/screenshot-gate.md`): when
//! the workspace policy in force has a `screenshot_gate`, every answer that carries a frame for
//! the agent (reset, screenshot, action, program, zoom) passes desk-gate first, in the
//! session's turn on the blocking pool. The decision is a `screenshot_gate_decision` record of
//! the session's signed, hash-chained journal, written and read back before the answer leaves;
//! unless it is `allow` the answer carries no image (`png_base64` empty) and says why in
//! `screenshot.gate`. A gate that cannot record its decision fails the
//! request: no frame leaves unrecorded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use desk_contract::api::{GateReason, ScreenshotGate};
use desk_contract::control::PixelRect;
use desk_gate::{Gate, GatePolicy, Ocr, Tesseract};

use crate::broker::Broker;
use crate::error::BrokerError;
use crate::frames::CarriesShot;
use crate::ids::SessionId;

/// A session's gates are dropped after this long without a frame (a released session's).
const IDLE_DROP: Duration = Duration::from_secs(3600);

/// Which of a session's gates a frame goes through: screen frames and zooms are compared
/// only with their own kind (a zoom is not the next frame of the screen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Reset, screenshot, action and program frames.
    Screen,
    /// `POST .../zoom` images.
    Zoom,
}

struct SessionGates {
    screen: Gate,
    zoom: Gate,
    used: Mutex<Instant>,
}

/// The broker's gate: the policy's settings (`None`: no gate) and each session's state.
pub(crate) struct ShotGates {
    gate: Option<(Arc<GatePolicy>, Arc<dyn Ocr>)>,
    sessions: Mutex<HashMap<SessionId, Arc<SessionGates>>>,
}

impl ShotGates {
    /// No gate.
    pub(crate) fn off() -> ShotGates {
        ShotGates {
            gate: None,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// The gate of `policy` (validated again by desk-gate), with `tesseract` as its engine.
    pub(crate) fn new(policy: GatePolicy) -> ShotGates {
        ShotGates {
            gate: Some((Arc::new(policy), Arc::new(Tesseract::new()))),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Whether frames are gated.
    pub(crate) fn enabled(&self) -> bool {
        self.gate.is_some()
    }

    fn session(
        &self,
        (policy, ocr): &(Arc<GatePolicy>, Arc<dyn Ocr>),
        id: &SessionId,
    ) -> Arc<SessionGates> {
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        sessions.retain(|_, gates| {
            let used = *gates
                .used
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            now.duration_since(used) < IDLE_DROP
        });
        let gates = sessions.entry(id.clone()).or_insert_with(|| {
            Arc::new(SessionGates {
                screen: Gate::new(Arc::clone(policy), Arc::clone(ocr)),
                zoom: Gate::new(Arc::clone(policy), Arc::clone(ocr)),
                used: Mutex::new(now),
            })
        });
        *gates
            .used
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = now;
        Arc::clone(gates)
    }
}

impl Broker {
    /// `answer` as it may reach the agent: unchanged without a gate; otherwise its frame gated,
    /// the decision signed into the session's evidence, and the image removed unless allowed.
    pub(crate) async fn gate_answer<T: CarriesShot + Send + 'static>(
        &self,
        session_id: &SessionId,
        mut answer: T,
        stream: Stream,
    ) -> Result<T, BrokerError> {
        let Some(policy) = self.inner.shot_gates.gate.clone() else {
            return Ok(answer);
        };
        if answer.screenshot().is_none() {
            return Ok(answer);
        }
        let id = session_id.clone();
        self.run(Some(id.clone()), move |inner| {
            let gates = inner.shot_gates.session(&policy, &id);
            let Some(shot) = answer.screenshot_mut() else {
                return Ok(answer);
            };
            let png = desk_contract::b64::decode(&shot.png_base64).ok_or_else(|| {
                BrokerError::Internal("a screenshot's base64 does not decode".to_string())
            })?;
            let gate = match stream {
                Stream::Screen => &gates.screen,
                Stream::Zoom => &gates.zoom,
            };
            let decision = gate.gate(&png, None, &[]);
            let record = &decision.record;
            let session = inner.load(&id)?;
            crate::evidence::gate_decision(inner.evidence(), &session, record)?;
            tracing::info!(
                session_id = id.as_str(),
                verdict = record.verdict.as_str(),
                reasons = record.reasons.len(),
                gate_ms = decision.elapsed_ms,
                ocr_ms = decision.ocr_ms,
                "screenshot gate"
            );
            if !record.verdict.delivers() {
                shot.png_base64 = String::new();
            }
            shot.gate = Some(ScreenshotGate {
                verdict: record.verdict.as_str().to_string(),
                reasons: record
                    .reasons
                    .iter()
                    .map(|reason| GateReason {
                        source: crate::evidence::gate_source_name(reason.source).to_string(),
                        pattern: reason.pattern.clone(),
                        region: reason.region.map(|rect| PixelRect {
                            x: rect.x,
                            y: rect.y,
                            width: rect.width,
                            height: rect.height,
                        }),
                        score_permille: reason.score_permille,
                    })
                    .collect(),
                record_id: record.record_id.clone(),
            });
            Ok(answer)
        })
        .await
    }
}
