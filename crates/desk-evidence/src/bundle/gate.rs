//! The screenshot gate's decisions in a verified bundle: each `screenshot_gate_decision` record
//! of the journal (already checked for signature, chain position and schema) listed in the
//! [`super::VerifyReport`] with the bundle's frame whose bytes it is about, if the bundle
//! carries that frame. A frame the gate withheld from the agent is still a frame the broker
//! stored (a reset's or a screenshot's), so a verifier sees which decision kept it back and
//! checks that the decision names exactly those bytes; one who holds a frame the bundle does
//! not carry (released, or an action's frame) checks it with [`ScreenshotGateDecision::is_about`].

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
