//! The `screenshot_gate_decision` evidence hook: every decision of the screenshot gate
//! (desk-gate's `Decision`, bound to the frame's and the policy's digests) appended to the
//! session's hash-chained journal, written, fsynced, read back and verified before the frame's
//! answer leaves (`docs/screenshot-gate.md`, "Evidence"). The journal is the decisions' one
//! home: a bundle carries them and a verifier checks them with the rest.
//!
//! What a decision of desk-gate carries beyond the record's schema is left out: the error text of
//! a refused frame or a failed engine (an engine's error can quote what it read on screen).
//! A reviewer's decision about a queued frame is a `screenshot_review_decision` record of the
//! same journal ([`review_decision`]).

use desk_evidence::RecordBody;
use desk_evidence::record::{
    GateReason, GateRegion, ScreenshotGateDecision, ScreenshotReviewDecision,
};
use desk_gate::{Decision, Rect};

use super::journal::{Evidence, with_journal};
use crate::error::BrokerError;
use crate::store::SessionRow;

fn region(rect: Rect) -> GateRegion {
    GateRegion {
        x: rect.x,
        y: rect.y,
        width: rect.width,
        height: rect.height,
    }
}

/// The journal body of desk-gate's decision.
pub(crate) fn decision_body(record: &Decision) -> ScreenshotGateDecision {
    ScreenshotGateDecision {
        record_id: record.record_id.clone(),
        decided_at_ms: record.decided_at_ms,
        frame_sha256: record.frame_sha256.clone(),
        frame_bytes: record.frame_bytes,
        verdict: record.verdict.as_str().to_string(),
        max_score_permille: record.max_score_permille,
        reasons: record
            .reasons
            .iter()
            .map(|reason| GateReason {
                source: reason.source.as_str().to_string(),
                pattern_index: reason.pattern_index.map(|index| index as u64),
                pattern: reason.pattern.clone(),
                region: reason.region.map(region),
                score_permille: reason.score_permille,
            })
            .collect(),
        policy_sha256: record.policy_sha256.clone(),
        ocr_engine: record.ocr_engine.clone(),
        ocr_region: record.ocr_region.map(region),
        ocr_ms: record.ocr_ms,
        gate_ms: record.gate_ms,
    }
}

/// Appends the decision `record` to the session's journal. A journal that ended (released or
/// killed) refuses it, and so the frame: no frame leaves unrecorded.
pub(crate) fn gate_decision(
    evidence: Evidence<'_>,
    session: &SessionRow,
    record: &Decision,
) -> Result<(), BrokerError> {
    let body = decision_body(record);
    with_journal(
        evidence,
        session,
        "record a screenshot gate decision",
        |journal| journal.append(RecordBody::ScreenshotGateDecision(Box::new(body))),
    )
}

/// Appends a reviewer's decision about a queued frame to the session's journal; like a gate
/// decision, refused once the journal ended (the decision then did not happen).
pub(crate) fn review_decision(
    evidence: Evidence<'_>,
    session: &SessionRow,
    body: ScreenshotReviewDecision,
) -> Result<(), BrokerError> {
    with_journal(
        evidence,
        session,
        "record a screenshot review decision",
        |journal| journal.append(RecordBody::ScreenshotReviewDecision(body)),
    )
}
