//! The screenshot gate's review queue (`docs/screenshot-gate.md`, "Review queue"): a frame the
//! gate puts in `review` is stored private (0600, `<session_dir>/reviews/<review_id>.png`) and
//! queued; the agent gets the withheld answer meanwhile. A reviewer (a credential with the
//! `review` scope, verified with the broker's `--reviewer-pub` key, never a lease token) lists
//! the queue, sees a frame and its reasons, and allows or denies it. Each decision is a
//! `screenshot_review_decision` record of the session's journal, bound to the frame's digest,
//! written before the decision holds. An allowed frame reaches the agent at its next
//! screenshot of the same unchanged bytes (the gate's decision then says `allow` with a
//! `review` reason); a denied one never does (its decisions say `withhold`).
//!
//! The queue lives in the broker's memory: a restarted broker forgets it (the frames stay
//! withheld, the decisions already made stay in the journals). At most [`MAX_ENTRIES`] entries;
//! decided ones are dropped first when it is full, and a frame the full queue cannot take stays
//! withheld without a review id.
//!
//! The queue is here; the broker's side (reading a frame, recording a decision in the
//! session's turn) is in `shot_gate.rs`, the HTTP side in `review_routes.rs`.

use std::os::unix::fs::DirBuilderExt as _;
use std::sync::Mutex;

use desk_contract::api::GateReason;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::store::SessionRow;
use crate::util::now_ms;

/// Most entries the queue holds.
pub(crate) const MAX_ENTRIES: usize = 256;

/// A review as a reviewer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Review {
    /// The review's id: the `record_id` of the gate decision that queued the frame.
    pub(crate) review_id: String,
    /// The session the frame is from.
    pub(crate) session_id: String,
    /// `pending`, `allowed` or `denied`.
    pub(crate) state: String,
    /// SHA-256 (hex) of the frame's PNG bytes.
    pub frame_sha256: String,
    /// The frame's size in bytes.
    pub(crate) frame_bytes: u64,
    /// The frame's width in pixels.
    pub(crate) width: u32,
    /// The frame's height in pixels.
    pub(crate) height: u32,
    /// Why the gate put it in review (the answer's reasons: no matched text).
    pub(crate) reasons: Vec<GateReason>,
    /// When it was queued, milliseconds since the Unix epoch.
    pub(crate) queued_at_ms: u64,
    /// Who decided (the reviewer credential's subject), once decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reviewer: Option<String>,
    /// When it was decided, once decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decided_at_ms: Option<u64>,
}

/// `GET /v1/reviews`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewList {
    /// Every review the queue holds, oldest first.
    pub(crate) reviews: Vec<Review>,
}

/// `POST /v1/reviews/{id}/decision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewDecisionRequest {
    /// `allow` or `deny`.
    pub(crate) decision: String,
}

struct Entry {
    review: Review,
    session: SessionId,
}

/// The queue.
#[derive(Default)]
pub(crate) struct ReviewQueue {
    entries: Mutex<Vec<Entry>>,
}

fn lock(queue: &ReviewQueue) -> std::sync::MutexGuard<'_, Vec<Entry>> {
    queue
        .entries
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a queued frame is.
pub(crate) struct Queued<'a> {
    pub(crate) record_id: &'a str,
    pub(crate) frame_sha256: &'a str,
    pub(crate) png: &'a [u8],
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) reasons: &'a [GateReason],
}

impl ReviewQueue {
    /// The reviewer's decision about `frame_sha256` of `session`, when one was made: `true`
    /// allowed.
    pub(crate) fn decided(&self, session: &SessionId, frame_sha256: &str) -> Option<bool> {
        lock(self)
            .iter()
            .find(|entry| {
                entry.session == *session
                    && entry.review.frame_sha256 == frame_sha256
                    && entry.review.state != "pending"
            })
            .map(|entry| entry.review.state == "allowed")
    }

    /// Queues `frame` of `session` (stored 0600 under the session's directory) and returns the
    /// review id; the pending review's id when the same bytes are already queued. `None` when
    /// the queue is full of pending reviews or the frame could not be stored (logged): the frame
    /// stays withheld either way.
    pub(crate) fn enqueue(&self, session: &SessionRow, frame: &Queued<'_>) -> Option<String> {
        let mut entries = lock(self);
        if let Some(entry) = entries.iter().find(|entry| {
            entry.session == session.id
                && entry.review.frame_sha256 == frame.frame_sha256
                && entry.review.state == "pending"
        }) {
            return Some(entry.review.review_id.clone());
        }
        if entries.len() >= MAX_ENTRIES {
            let Some(at) = entries
                .iter()
                .position(|entry| entry.review.state != "pending")
            else {
                tracing::warn!(
                    session_id = session.id.as_str(),
                    "review queue full of pending reviews: frame stays withheld"
                );
                return None;
            };
            entries.remove(at);
        }
        let dir = session.dir().path().join("reviews");
        let path = review_frame_path(session, frame.record_id);
        let stored = std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .or_else(|error| match error.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(error),
            })
            .and_then(|()| {
                use std::io::Write as _;
                let mut file = crate::private::create_file(&path)?;
                file.write_all(frame.png)?;
                file.sync_all()
            });
        if let Err(error) = stored {
            tracing::warn!(
                session_id = session.id.as_str(),
                %error,
                "review frame could not be stored: frame stays withheld"
            );
            return None;
        }
        entries.push(Entry {
            session: session.id.clone(),
            review: Review {
                review_id: frame.record_id.to_string(),
                session_id: session.id.to_string(),
                state: "pending".to_string(),
                frame_sha256: frame.frame_sha256.to_string(),
                frame_bytes: frame.png.len() as u64,
                width: frame.width,
                height: frame.height,
                reasons: frame.reasons.to_vec(),
                queued_at_ms: now_ms(),
                reviewer: None,
                decided_at_ms: None,
            },
        });
        Some(frame.record_id.to_string())
    }

    pub(crate) fn list(&self) -> Vec<Review> {
        lock(self)
            .iter()
            .map(|entry| entry.review.clone())
            .collect()
    }

    pub(crate) fn find(&self, review_id: &str) -> Result<(Review, SessionId), BrokerError> {
        lock(self)
            .iter()
            .find(|entry| entry.review.review_id == review_id)
            .map(|entry| (entry.review.clone(), entry.session.clone()))
            .ok_or_else(|| BrokerError::NotFound(format!("review {review_id:?}")))
    }

    pub(crate) fn settle(&self, review_id: &str, allow: bool, reviewer: &str, at_ms: u64) {
        if let Some(entry) = lock(self)
            .iter_mut()
            .find(|entry| entry.review.review_id == review_id)
        {
            entry.review.state = if allow { "allowed" } else { "denied" }.to_string();
            entry.review.reviewer = Some(reviewer.to_string());
            entry.review.decided_at_ms = Some(at_ms);
        }
    }
}

/// Where a queued frame is stored: `<session_dir>/reviews/<review_id>.png` (the id is
/// `gate-` and 32 hex digits, a single path component).
pub(crate) fn review_frame_path(session: &SessionRow, review_id: &str) -> std::path::PathBuf {
    session
        .dir()
        .path()
        .join("reviews")
        .join(format!("{review_id}.png"))
}
