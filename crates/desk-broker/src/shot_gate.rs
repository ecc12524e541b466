//! The screenshot risk gate on the way out (containment G003, `docs/screenshot-gate.md`): when
//! the workspace policy in force has a `screenshot_gate`, every answer that carries a frame for
//! the agent (reset, screenshot, action, program, zoom) passes desk-gate first, in the
//! session's turn on the blocking pool. The decision is a `screenshot_gate_decision` record of
//! the session's signed, hash-chained journal, written and read back before the answer leaves;
//! unless it is `allow` the answer carries no image (`png_base64` empty) and says why in
//! `screenshot.gate`. A gate that cannot record its decision fails the
//! request: no frame leaves unrecorded. A `review` frame is queued for a reviewer
//! (`review.rs`); once one decided about those exact bytes, the next decision about them says
//! `allow` or `withhold` with a `review` reason. The policy's classifier, when it names one, is
//! desk-gate's [`HttpClassifier`].
//!
//! This file holds the gates; the broker's side (gating an answer, the review queue's
//! operations) is `shot_gate/answer.rs`, which names the broker, so the broker can hold the
//! gates without a module cycle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use desk_gate::{Classifier, Gate, GatePolicy, HttpClassifier, Ocr, default_ocr};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::review::ReviewQueue;

mod answer;

/// A session's gates are dropped after this long without a frame (a released session's).
const IDLE_DROP: Duration = Duration::from_secs(3600);

/// Which of a session's gates a frame goes through: screen frames and zooms are compared
/// only with their own kind (a zoom is not the next frame of the screen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
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

type Engines = (Arc<GatePolicy>, Arc<dyn Ocr>, Option<Arc<dyn Classifier>>);

/// The broker's gate: the policy's settings (`None`: no gate), each session's state and the
/// review queue.
pub(crate) struct ShotGates {
    gate: Option<Engines>,
    sessions: Mutex<HashMap<SessionId, Arc<SessionGates>>>,
    reviews: ReviewQueue,
}

impl ShotGates {
    /// No gate.
    pub(crate) fn off() -> ShotGates {
        ShotGates {
            gate: None,
            sessions: Mutex::new(HashMap::new()),
            reviews: ReviewQueue::default(),
        }
    }

    /// The gate of `policy` (validated again by desk-gate), with the long-lived `desk-ocr` as its
    /// engine (one per broker; the `tesseract` CLI when it is not installed) and the policy's
    /// classifier, if it names one.
    pub(crate) fn new(policy: GatePolicy) -> Result<ShotGates, BrokerError> {
        let classifier = match policy.classifier() {
            Some(settings) => {
                let classifier = HttpClassifier::new(&settings.endpoint, &settings.model_sha256)
                    .map_err(|error| BrokerError::PolicyInvalid(error.to_string()))?;
                Some(Arc::new(classifier) as Arc<dyn Classifier>)
            }
            None => None,
        };
        Ok(ShotGates {
            gate: Some((Arc::new(policy), default_ocr(), classifier)),
            sessions: Mutex::new(HashMap::new()),
            reviews: ReviewQueue::default(),
        })
    }

    /// The review queue.
    pub(crate) fn reviews(&self) -> &ReviewQueue {
        &self.reviews
    }

    /// Whether frames are gated.
    pub(crate) fn enabled(&self) -> bool {
        self.gate.is_some()
    }

    fn session(&self, (policy, ocr, classifier): &Engines, id: &SessionId) -> Arc<SessionGates> {
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
            let gate = || {
                let gate = Gate::new(Arc::clone(policy), Arc::clone(ocr));
                match classifier {
                    Some(classifier) => gate.with_classifier(Arc::clone(classifier)),
                    None => gate,
                }
            };
            Arc::new(SessionGates {
                screen: gate(),
                zoom: gate(),
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
