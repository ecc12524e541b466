//! The gate's policy: the prefilter patterns, compiled once at validation, the score thresholds
//! and the bounds on a frame. Every number comes from the signed workspace policy
//! (`screenshot_gate`, desk-policy); none is a constant of this crate.

use std::time::Duration;

use regex::{Regex, RegexBuilder};
use serde::Serialize;

use crate::error::GateError;

/// Most patterns a policy may list.
pub const MAX_PATTERNS: usize = 64;
/// Longest pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 256;
/// Compiled size bound of one pattern (the `regex` crate's size limit).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles one prefilter pattern as the gate uses it (case-insensitive, size-bounded); why
/// not, for a person, when it is empty, too long, invalid, or matches the empty text. The
/// policy's lint calls this too, so the lint and the gate agree.
pub fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    if pattern.trim().is_empty() {
        return Err("is empty".to_string());
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("is longer than {MAX_PATTERN_BYTES} bytes"));
    }
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|error| format!("is not a valid pattern: {error}"))?;
    if regex.is_match("") {
        return Err("matches the empty text".to_string());
    }
    Ok(regex)
}

/// The gate's settings as the signed policy states them, before validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateSettings {
    /// Prefilter patterns (the `regex` syntax shared with Python's `re`), matched
    /// case-insensitively against the text found on a frame and the observer's names.
    pub patterns: Vec<String>,
    /// Highest score a frame may have and be allowed, in thousandths (`[0, 1]` as
    /// `0..=1000`: the signed YAML has integers only).
    pub allow_max_permille: u32,
    /// Lowest score that withholds a frame, in thousandths, above `allow_max_permille`; a
    /// score in between is `review`.
    pub block_min_permille: u32,
    /// Largest PNG the gate reads, in bytes.
    pub max_frame_bytes: u64,
    /// Most pixels a frame's header may declare (the decompression-bomb bound).
    pub max_pixels: u64,
    /// Longest one OCR run may take before it is killed.
    pub ocr_timeout_ms: u64,
}

/// The classifier the signed policy names (`screenshot_gate.classifier`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassifierSettings {
    /// `http://<loopback host>:<port>/<path>` ([`crate::parse_endpoint`]).
    pub endpoint: String,
    /// Longest one classifier request may take (connect, send, answer).
    pub timeout_ms: u64,
    /// SHA-256 (hex) of the model every answer must name.
    pub model_sha256: String,
}

/// Whether `text` is 64 lowercase hex digits.
pub(crate) fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// Most milliseconds a classifier timeout may be.
pub const MAX_CLASSIFIER_TIMEOUT_MS: u64 = 60_000;

/// Checks the classifier settings; why not, for a person. The lint calls this too.
pub fn check_classifier(settings: &ClassifierSettings) -> Result<(), String> {
    crate::classifier::parse_endpoint(&settings.endpoint)
        .map_err(|problem| format!("endpoint {problem}"))?;
    if !is_sha256_hex(&settings.model_sha256) {
        return Err("model_sha256 is not 64 lowercase hex digits".to_string());
    }
    if settings.timeout_ms == 0 || settings.timeout_ms > MAX_CLASSIFIER_TIMEOUT_MS {
        return Err(format!(
            "timeout_ms must lie in 1..={MAX_CLASSIFIER_TIMEOUT_MS}"
        ));
    }
    Ok(())
}

/// A validated gate policy: patterns compiled, thresholds ordered, bounds non-zero.
#[derive(Debug, Clone)]
pub struct GatePolicy {
    settings: GateSettings,
    regexes: Vec<Regex>,
    policy_sha256: String,
    classifier: Option<ClassifierSettings>,
}

impl GatePolicy {
    /// Validates `settings`; `policy_sha256` is the digest of the signed policy they come from
    /// (each gate record names it). Bad settings are a typed error, never a default.
    pub fn new(settings: GateSettings, policy_sha256: &str) -> Result<GatePolicy, GateError> {
        let bad = |message: String| Err(GateError::Policy(message));
        if !is_sha256_hex(policy_sha256) {
            return bad("policy_sha256 is not 64 lowercase hex digits".to_string());
        }
        if settings.patterns.is_empty() {
            return bad("patterns is empty: list at least one".to_string());
        }
        if settings.patterns.len() > MAX_PATTERNS {
            return bad(format!("more than {MAX_PATTERNS} patterns"));
        }
        let mut regexes = Vec::with_capacity(settings.patterns.len());
        for (idx, pattern) in settings.patterns.iter().enumerate() {
            let regex = compile_pattern(pattern)
                .map_err(|problem| GateError::Policy(format!("patterns[{idx}] {problem}")))?;
            regexes.push(regex);
        }
        let (allow, block) = (settings.allow_max_permille, settings.block_min_permille);
        if allow > 1000 || block > 1000 {
            return bad(format!(
                "allow_max_permille {allow} and block_min_permille {block} must lie in 0..=1000"
            ));
        }
        if allow >= block {
            return bad(format!(
                "allow_max_permille {allow} must be below block_min_permille {block}"
            ));
        }
        for (name, value) in [
            ("max_frame_bytes", settings.max_frame_bytes),
            ("max_pixels", settings.max_pixels),
            ("ocr_timeout_ms", settings.ocr_timeout_ms),
        ] {
            if value == 0 {
                return bad(format!("{name} must be at least 1"));
            }
        }
        Ok(GatePolicy {
            settings,
            regexes,
            policy_sha256: policy_sha256.to_string(),
            classifier: None,
        })
    }

    /// The policy with its classifier (`screenshot_gate.classifier`), checked.
    pub fn with_classifier(
        mut self,
        classifier: ClassifierSettings,
    ) -> Result<GatePolicy, GateError> {
        check_classifier(&classifier)
            .map_err(|problem| GateError::Policy(format!("classifier {problem}")))?;
        self.classifier = Some(classifier);
        Ok(self)
    }

    /// The classifier's settings, when the policy names one.
    pub fn classifier(&self) -> Option<&ClassifierSettings> {
        self.classifier.as_ref()
    }

    /// The settings as given.
    pub fn settings(&self) -> &GateSettings {
        &self.settings
    }

    /// The signed policy's digest.
    pub fn policy_sha256(&self) -> &str {
        &self.policy_sha256
    }

    /// The classifier time bound, when there is a classifier.
    pub fn classifier_timeout(&self) -> Option<Duration> {
        self.classifier
            .as_ref()
            .map(|classifier| Duration::from_millis(classifier.timeout_ms))
    }

    /// The OCR time bound.
    pub fn ocr_timeout(&self) -> Duration {
        Duration::from_millis(self.settings.ocr_timeout_ms)
    }

    /// `(pattern index, pattern, compiled)` of every pattern.
    pub(crate) fn patterns(&self) -> impl Iterator<Item = (usize, &str, &Regex)> {
        self.settings
            .patterns
            .iter()
            .zip(&self.regexes)
            .enumerate()
            .map(|(idx, (text, regex))| (idx, text.as_str(), regex))
    }
}
