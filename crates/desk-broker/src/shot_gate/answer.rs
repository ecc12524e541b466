//! The broker's side of the screenshot gate (`shot_gate.rs`): [`Broker::gate_answer`], which
//! gates the frame an answer carries and signs the decision into the session's evidence, and
//! the review queue's operations (list, read, frame, decide).

use desk_contract::api::{GateReason, ScreenshotGate};
use desk_contract::control::PixelRect;
use desk_gate::Verdict;

use super::Stream;
use crate::broker::Broker;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::review::{Queued, Review, ReviewDecisionRequest, ReviewList, ReviewQueue};
use crate::util::now_ms;
use desk_contract::shot::CarriesShot;
use desk_evidence::record::ScreenshotReviewDecision;

impl Broker {
    /// `answer` as it may reach the agent: unchanged without a gate; otherwise its frame gated,
    /// the decision signed into the session's evidence, and the image removed unless allowed.
    pub async fn gate_answer<T: CarriesShot + Send + 'static>(
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
            let png = match &shot.png {
                Some(png) => png.0.clone(),
                None => desk_contract::b64::decode(&shot.png_base64)
                    .ok_or_else(|| {
                        BrokerError::Internal("a screenshot's base64 does not decode".to_string())
                    })?
                    .into(),
            };
            let gate = match stream {
                Stream::Screen => &gates.screen,
                Stream::Zoom => &gates.zoom,
            };
            let mut decision = gate.gate(&png, None, &[]);
            let session = inner.load(&id)?;
            let reasons = |decision: &desk_gate::Decision| -> Vec<GateReason> {
                decision
                    .reasons
                    .iter()
                    .map(|reason| GateReason {
                        source: reason.source.as_str().to_string(),
                        pattern: reason.pattern.clone(),
                        region: reason.region.map(|rect| PixelRect {
                            x: rect.x,
                            y: rect.y,
                            width: rect.width,
                            height: rect.height,
                        }),
                        score_permille: reason.score_permille,
                    })
                    .collect()
            };
            let reviews = inner.shot_gates.reviews();
            let mut to_queue = false;
            if decision.verdict == Verdict::Review {
                match reviews.decided(&id, &decision.frame_sha256) {
                    Some(allow) => decision.reviewed(allow),
                    None => to_queue = true,
                }
            }
            crate::evidence::gate_decision(inner.evidence(), &session, &decision)?;
            // Queued only once its `review` verdict is in the journal: a reviewer's decision
            // always follows the verdict that queued it (`evidence verify` checks that).
            let review_id = if to_queue {
                reviews.enqueue(
                    &session,
                    &Queued {
                        record_id: &decision.record_id,
                        frame_sha256: &decision.frame_sha256,
                        png: &png,
                        width: shot.width,
                        height: shot.height,
                        reasons: &reasons(&decision),
                    },
                )
            } else {
                None
            };
            if let Some(problem) = &decision.problem {
                // May quote what an engine read: the log only, never the answer or journal.
                tracing::warn!(session_id = id.as_str(), problem, "screenshot gate problem");
            }
            tracing::info!(
                session_id = id.as_str(),
                verdict = decision.verdict.as_str(),
                reasons = decision.reasons.len(),
                gate_ms = decision.elapsed_ms,
                ocr_ms = decision.ocr_elapsed_ms,
                classifier_ms = decision.classifier_ms,
                "screenshot gate"
            );
            if !decision.verdict.delivers() {
                shot.withhold_image();
            }
            shot.gate = Some(ScreenshotGate {
                verdict: decision.verdict.as_str().to_string(),
                reasons: reasons(&decision),
                record_id: decision.record_id.clone(),
                review_id,
            });
            Ok(answer)
        })
        .await
    }
}

/// The review queue's broker side (`review.rs`).
impl Broker {
    fn reviews(&self) -> &ReviewQueue {
        self.inner.shot_gates.reviews()
    }

    /// Every review.
    pub fn review_list(&self) -> ReviewList {
        ReviewList {
            reviews: self.reviews().list(),
        }
    }

    /// One review.
    pub fn review(&self, review_id: &str) -> Result<Review, BrokerError> {
        self.reviews().find(review_id).map(|(review, _)| review)
    }

    /// A queued frame's PNG bytes, checked against the digest it was queued with.
    pub async fn review_frame(&self, review_id: &str) -> Result<Vec<u8>, BrokerError> {
        let (review, session_id) = self.reviews().find(review_id)?;
        let review_id = review.review_id.clone();
        self.run(None, move |inner| {
            let session = inner.load(&session_id)?;
            let path = crate::review::review_frame_path(&session, &review_id);
            let bytes = std::fs::read(&path).map_err(|_| {
                BrokerError::NotFound(format!("review {review_id:?}'s frame (session released?)"))
            })?;
            if crate::util::sha256_hex(&bytes) != review.frame_sha256 {
                return Err(BrokerError::Internal(format!(
                    "review {review_id:?}'s stored frame does not match its digest"
                )));
            }
            Ok(bytes)
        })
        .await
    }

    /// A reviewer's decision: recorded in the session's journal first, then in force. A review
    /// decided already is refused (`invalid_state`), so is one whose session's journal ended.
    pub async fn decide_review(
        &self,
        review_id: &str,
        request: ReviewDecisionRequest,
        reviewer: String,
    ) -> Result<Review, BrokerError> {
        let allow = match request.decision.as_str() {
            "allow" => true,
            "deny" => false,
            _ => {
                return Err(BrokerError::InvalidRequest(
                    "decision must be \"allow\" or \"deny\"".to_string(),
                ));
            }
        };
        let (review, session_id) = self.reviews().find(review_id)?;
        let review_id = review.review_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            // Checked again in the session's turn: two reviewers may race.
            let (review, _) = inner.shot_gates.reviews().find(&review_id)?;
            if review.state != "pending" {
                return Err(BrokerError::InvalidState {
                    operation: "review decision",
                    reason: format!("review {review_id:?} is already {}", review.state),
                });
            }
            let session = inner.load(&session_id)?;
            let at_ms = now_ms();
            crate::evidence::review_decision(
                inner.evidence(),
                &session,
                ScreenshotReviewDecision {
                    review_id: review_id.clone(),
                    frame_sha256: review.frame_sha256.clone(),
                    frame_bytes: review.frame_bytes,
                    decision: if allow { "allow" } else { "deny" }.to_string(),
                    reviewer: reviewer.clone(),
                    decided_at_ms: at_ms,
                },
            )?;
            inner
                .shot_gates
                .reviews()
                .settle(&review_id, allow, &reviewer, at_ms);
            tracing::info!(
                session_id = session_id.as_str(),
                review_id,
                allow,
                reviewer,
                "screenshot review decided"
            );
            inner
                .shot_gates
                .reviews()
                .find(&review_id)
                .map(|(review, _)| review)
        })
        .await
    }
}
