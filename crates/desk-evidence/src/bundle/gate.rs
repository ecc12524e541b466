//! The screenshot gate's decisions in a verified bundle: each `screenshot_gate_decision` record
//! of the journal (already checked for signature, chain position and schema) listed in the
//! [`super::VerifyReport`] with the bundle's frame whose bytes it is about, if the bundle
//! carries that frame. A frame the gate withheld from the agent is still a frame the broker
//! stored (a reset's or a screenshot's), so a verifier sees which decision kept it back and
//! checks that the decision names exactly those bytes; one who holds a frame the bundle does
//! not carry (released, or an action's frame) checks it with [`ScreenshotGateDecision::is_about`].
//!
//! Invariant of a bundle that verifies: every `screenshot_review_decision` follows, in the
//! journal, the `screenshot_gate_decision` that queued it: a `review` verdict whose `record_id`
//! is the decision's `review_id`, about the same frame (SHA-256 and size). A reviewer's
//! decision about a frame the gate never put in review is refused ([`check_reviews`]).

use super::layout::named;
use crate::error::{EvidenceError, RecordProblem};
use crate::journal::VerifiedRecord;
use crate::record::{RecordBody, ScreenshotGateDecision};
use crate::sign::sha256_hex;

/// One gate decision of a verified journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateDecisionSeen {
    /// The record's `seq` in the journal.
    pub seq: u64,
    /// The decision as signed.
    pub decision: ScreenshotGateDecision,
    /// The bundle's frame (`frames/<sequence>.png`) whose SHA-256 and size the decision names,
    /// if the bundle carries one.
    pub frame: Option<String>,
}

/// The journal's gate decisions, each matched against `frames` (bundle path and bytes of every
/// frame the bundle carries, already checked against their `screenshot` records).
pub(super) fn decisions<'a>(
    records: &[VerifiedRecord],
    frames: impl Iterator<Item = (&'a String, &'a [u8])>,
) -> Vec<GateDecisionSeen> {
    let digests: Vec<(&String, String, u64)> = frames
        .map(|(path, bytes)| (path, sha256_hex(bytes), bytes.len() as u64))
        .collect();
    records
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::ScreenshotGateDecision(decision) => Some(GateDecisionSeen {
                seq: record.record().seq,
                decision: (**decision).clone(),
                frame: digests
                    .iter()
                    .find(|(_, sha256, size)| {
                        *sha256 == decision.frame_sha256 && *size == decision.frame_bytes
                    })
                    .map(|(path, _, _)| (*path).clone()),
            }),
            _ => None,
        })
        .collect()
}

/// Checks that every `screenshot_review_decision` of `records` follows the `review` verdict
/// that queued it (see the module's invariant); the first that does not is named.
pub(super) fn check_reviews(records: &[VerifiedRecord]) -> Result<(), EvidenceError> {
    // The `review` verdicts seen so far: record id, frame digest and size.
    let mut queued: Vec<(&str, &str, u64)> = Vec::new();
    for record in records {
        match &record.record().body {
            RecordBody::ScreenshotGateDecision(decision) if decision.verdict == "review" => {
                queued.push((
                    &decision.record_id,
                    &decision.frame_sha256,
                    decision.frame_bytes,
                ));
            }
            RecordBody::ScreenshotReviewDecision(review) => {
                let Some((_, sha256, bytes)) =
                    queued.iter().find(|(id, _, _)| *id == review.review_id)
                else {
                    return Err(named(
                        record,
                        RecordProblem::OutOfPlace(format!(
                            "no earlier screenshot_gate_decision {} with the verdict review",
                            review.review_id
                        )),
                    ));
                };
                if *sha256 != review.frame_sha256 || *bytes != review.frame_bytes {
                    return Err(named(
                        record,
                        RecordProblem::OutOfPlace(format!(
                            "the review {} was queued for another frame (SHA-256 and size)",
                            review.review_id
                        )),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
