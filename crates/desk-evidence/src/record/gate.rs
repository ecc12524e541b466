//! The body of `screenshot_gate_decision`: one per frame the screenshot gate decided
//! (`docs/screenshot-gate.md`), bound to the frame's digest and the signed policy's. Reasons
//! carry the pattern, where and how sure, never the text that matched: the schema has no field
//! for it, and strict parsing refuses any key it does not name. Nor does a failed frame or
//! engine carry its error text (an engine's error can quote what it read): the log has it.
//!
//! [`ScreenshotGateDecision::validate`] checks what holds for every decision whatever the
//! policy's thresholds: a known verdict, scores in thousandths, the highest score the highest
//! reason's, a refused frame always withheld and an engine failure never allowed.

use serde::{Deserialize, Serialize};

/// `verdict` values.
pub const GATE_VERDICTS: [&str; 4] = ["allow", "withhold", "review", "insufficient_data"];

/// `source` values of a reason.
pub const GATE_REASON_SOURCES: [&str; 6] =
    ["ocr", "observer", "frame", "engine", "classifier", "review"];

/// `decision` values of a `screenshot_review_decision`.
pub const REVIEW_DECISIONS: [&str; 2] = ["allow", "deny"];

/// A rectangle of the frame, in its pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateRegion {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// Why a frame got its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateReason {
    /// `ocr` (text read on the frame), `observer` (an accessible name), `frame` (the frame was
    /// refused before OCR), `engine` (the OCR engine or the classifier could not be used),
    /// `classifier` (the policy's classifier scored the text read) or `review` (a reviewer
    /// decided about these exact bytes: a `screenshot_review_decision` earlier in the journal).
    pub source: String,
    /// The policy pattern's index, for a pattern match (`ocr`, `observer`).
    pub pattern_index: Option<u64>,
    /// The pattern, for a pattern match.
    pub pattern: Option<String>,
    /// Where on the frame (OCR matches).
    pub region: Option<GateRegion>,
    /// The finding's score in thousandths (0 to 1000).
    pub score_permille: u32,
}

/// Body of `screenshot_gate_decision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotGateDecision {
    /// The decision's id, as the answer's `screenshot.gate.record_id` names it: `gate-` and 32
    /// lowercase hex digits.
    pub record_id: String,
    /// When it was decided, milliseconds since the Unix epoch.
    pub decided_at_ms: u64,
    /// SHA-256 (hex) of the frame's PNG bytes, delivered or not.
    pub frame_sha256: String,
    /// The frame's size in bytes.
    pub frame_bytes: u64,
    /// One of [`GATE_VERDICTS`]; only `allow` delivers the image.
    pub verdict: String,
    /// The highest score of the reasons (0 without any).
    pub max_score_permille: u32,
    /// Every reason.
    pub reasons: Vec<GateReason>,
    /// SHA-256 (hex) of the signed policy whose patterns and thresholds decided.
    pub policy_sha256: String,
    /// The OCR engine and its version (`tesseract 5.3.4`).
    pub ocr_engine: String,
    /// The region OCR read this time; `null` when OCR did not run (an identical frame, no
    /// pixel changed, or the frame was refused).
    pub ocr_region: Option<GateRegion>,
    /// Milliseconds the OCR engine took (0 when it did not run).
    pub ocr_ms: u64,
    /// Milliseconds the whole decision took, OCR included.
    pub gate_ms: u64,
}

impl ScreenshotGateDecision {
    /// Whether `png` is the frame this decision is about (its digest and size).
    pub fn is_about(&self, png: &[u8]) -> bool {
        self.frame_bytes == png.len() as u64 && self.frame_sha256 == crate::sign::sha256_hex(png)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        check_record_id("record_id", &self.record_id)?;
        super::fields::check_digest("frame_sha256", &self.frame_sha256)?;
        super::fields::check_digest("policy_sha256", &self.policy_sha256)?;
        super::fields::check_text("ocr_engine", &self.ocr_engine)?;
        if !GATE_VERDICTS.contains(&self.verdict.as_str()) {
            return Err(format!("verdict must be one of {GATE_VERDICTS:?}"));
        }
        for reason in &self.reasons {
            if !GATE_REASON_SOURCES.contains(&reason.source.as_str()) {
                return Err(format!(
                    "reason source must be one of {GATE_REASON_SOURCES:?}"
                ));
            }
            if reason.score_permille > 1000 {
                return Err("a reason's score_permille must be at most 1000".to_string());
            }
            let matched = matches!(reason.source.as_str(), "ocr" | "observer");
            if matched != (reason.pattern.is_some() && reason.pattern_index.is_some()) {
                return Err(format!(
                    "a {} reason must {}name a pattern and its index",
                    reason.source,
                    if matched { "" } else { "not " }
                ));
            }
            if let Some(pattern) = &reason.pattern {
                super::fields::check_text("pattern", pattern)?;
            }
        }
        let highest = self
            .reasons
            .iter()
            .map(|reason| reason.score_permille)
            .max()
            .unwrap_or(0);
        if self.max_score_permille != highest {
            return Err(format!(
                "max_score_permille is {}, the highest reason scores {highest}",
                self.max_score_permille
            ));
        }
        let has = |source: &str| self.reasons.iter().any(|reason| reason.source == source);
        if has("frame") && self.verdict != "withhold" {
            return Err("a refused frame must be withheld".to_string());
        }
        if has("engine") && ["allow", "review"].contains(&self.verdict.as_str()) {
            return Err("an engine failure cannot allow or review a frame".to_string());
        }
        if has("review") && !["allow", "withhold"].contains(&self.verdict.as_str()) {
            return Err("a reviewed frame is allowed or withheld".to_string());
        }
        Ok(())
    }
}

/// Body of `screenshot_review_decision`: a reviewer's decision about a frame the gate put in
/// review (`docs/screenshot-gate.md`, "Review queue"), bound to the frame's digest and size.
/// Only an `allow` lets those exact bytes reach the agent afterwards; a `deny` never.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotReviewDecision {
    /// The review's id: the `record_id` of the gate decision that queued it.
    pub review_id: String,
    /// SHA-256 (hex) of the frame's PNG bytes.
    pub frame_sha256: String,
    /// The frame's size in bytes.
    pub frame_bytes: u64,
    /// One of [`REVIEW_DECISIONS`].
    pub decision: String,
    /// Who decided: the reviewer credential's subject.
    pub reviewer: String,
    /// When, milliseconds since the Unix epoch.
    pub decided_at_ms: u64,
}

impl ScreenshotReviewDecision {
    pub(crate) fn validate(&self) -> Result<(), String> {
        check_record_id("review_id", &self.review_id)?;
        super::fields::check_digest("frame_sha256", &self.frame_sha256)?;
        super::fields::check_text("reviewer", &self.reviewer)?;
        if !REVIEW_DECISIONS.contains(&self.decision.as_str()) {
            return Err(format!("decision must be one of {REVIEW_DECISIONS:?}"));
        }
        Ok(())
    }
}

fn check_record_id(field: &str, id: &str) -> Result<(), String> {
    let id_hex = id.strip_prefix("gate-").unwrap_or_default();
    if id_hex.len() != 32
        || !id_hex
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(format!("{field} must be gate- and 32 lowercase hex digits"));
    }
    Ok(())
}
