//! The gate: one frame in, a decision (verdict, reasons, what was read and how long it took) out.
//!
//! What is read: the text OCR finds on the part of the frame that changed since the last frame
//! this gate saw (widened to full-width bands, so a line typed a character at a time is read
//! whole, and joined with the regions that matched before, so text that stays on screen is
//! read again and keeps the frame withheld), and the names the observer saw. A frame
//! byte-identical to the last one runs no OCR at all. Scores (thousandths): a pattern found by
//! OCR scores the lowest confidence of the words it spans; one found in an observer's name
//! scores 1000; the policy's classifier, when it has one, scores the text read (a `classifier`
//! reason standing over the region read, like a match). `review` is a highest score between
//! the policy's two thresholds; a reviewer's decision about those exact bytes
//! ([`Decision::reviewed`]) then allows or withholds them.
//!
//! Over 400 lines because the verdict, its reasons and the one decision path that fills them
//! are read together; the frame, OCR and classifier mechanics are in their own files.

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::classifier::Classifier;
use crate::error::GateError;
use crate::frame::{self, Frame, Rect};
use crate::ocr::{Ocr, Word};
use crate::policy::GatePolicy;

/// Rows added above and below a changed box before it is widened to the frame's width (about
/// two lines of UI text), so a pattern split over two lines is read whole.
const BAND_PAD: u32 = 32;

/// Regions up to this many pixels are enlarged twice before OCR (small UI text reads far
/// better); larger ones are read as they are, to stay within the OCR time bound.
const ENLARGE_MAX_PIXELS: u64 = 1_000_000;

/// What the gate decided about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The frame may reach the agent.
    Allow,
    /// The frame is withheld: a score at or above `block_min_permille`, or a frame the gate
    /// refuses to read (too large, too many pixels, not a PNG).
    Withhold,
    /// A score between the thresholds: withheld until a person reviews it.
    Review,
    /// The gate could not measure the frame (OCR engine missing, failed or too slow): withheld.
    InsufficientData,
}

impl Verdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Withhold => "withhold",
            Verdict::Review => "review",
            Verdict::InsufficientData => "insufficient_data",
        }
    }

    /// Whether the frame may be delivered (only `allow`).
    pub fn delivers(self) -> bool {
        self == Verdict::Allow
    }
}

/// Where a reason comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonSource {
    /// Text the OCR engine read on the frame.
    Ocr,
    /// A name the observer (accessibility) reported.
    Observer,
    /// The frame itself was refused before OCR.
    Frame,
    /// The OCR engine or the classifier could not be used.
    Engine,
    /// The policy's classifier scored the text read.
    Classifier,
    /// A reviewer decided about these exact bytes.
    Review,
}

impl ReasonSource {
    /// The wire name, as the answer and the journal spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonSource::Ocr => "ocr",
            ReasonSource::Observer => "observer",
            ReasonSource::Frame => "frame",
            ReasonSource::Engine => "engine",
            ReasonSource::Classifier => "classifier",
            ReasonSource::Review => "review",
        }
    }
}

/// Why a frame got its verdict. The matched text itself is never carried (it may be a
/// secret): the pattern, where, and how sure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// Where the finding comes from.
    pub source: ReasonSource,
    /// The policy pattern's index, for a pattern match.
    pub pattern_index: Option<usize>,
    /// The pattern, for a pattern match.
    pub pattern: Option<String>,
    /// Where on the frame (OCR matches).
    pub region: Option<Rect>,
    /// The finding's score in thousandths.
    pub score_permille: u32,
}

/// What the gate decided about one frame, bound to the frame's digest and the policy's: the
/// broker records it as the journal's `screenshot_gate_decision`.
#[derive(Debug, Clone)]
pub struct Decision {
    /// `gate-` and 32 hex digits.
    pub record_id: String,
    /// When it was decided, milliseconds since the Unix epoch.
    pub decided_at_ms: u64,
    /// SHA-256 (hex) of the frame's PNG bytes.
    pub frame_sha256: String,
    /// The frame's size in bytes.
    pub frame_bytes: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// The highest score of the reasons (0 without any).
    pub max_score_permille: u32,
    /// Every reason.
    pub reasons: Vec<Reason>,
    /// SHA-256 (hex) of the signed policy whose patterns and thresholds decided.
    pub policy_sha256: String,
    /// The OCR engine and version.
    pub ocr_engine: String,
    /// The frame region OCR read this time; `None` when OCR did not run (an identical frame,
    /// or no pixel changed).
    pub ocr_region: Option<Rect>,
    /// Milliseconds the OCR engine took (0 when it did not run), rounded.
    pub ocr_ms: u64,
    /// Milliseconds the whole decision took, OCR and classifier included, rounded.
    pub gate_ms: u64,
    /// Milliseconds the gate took, unrounded.
    pub elapsed_ms: f64,
    /// Milliseconds of OCR, unrounded (0 when it did not run).
    pub ocr_elapsed_ms: f64,
    /// Milliseconds of the classifier (0 when it was not asked).
    pub classifier_ms: f64,
    /// What went wrong with the frame, the OCR engine or the classifier, for the broker's log
    /// only: an engine's error may quote what it read, so it never reaches the journal or an
    /// answer.
    pub problem: Option<String>,
}

impl Decision {
    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// A reviewer's decision about these exact bytes applied to a `review` verdict: `allow`
    /// becomes [`Verdict::Allow`], a deny [`Verdict::Withhold`], each with a `review` reason
    /// (scoring 0 and 1000). Any other verdict is left as it is: a review never allows a frame
    /// the gate withheld or could not measure.
    pub fn reviewed(&mut self, allow: bool) {
        if self.verdict != Verdict::Review {
            return;
        }
        let score_permille = if allow { 0 } else { 1000 };
        self.reasons.push(Reason {
            source: ReasonSource::Review,
            pattern_index: None,
            pattern: None,
            region: None,
            score_permille,
        });
        self.max_score_permille = self.max_score_permille.max(score_permille);
        self.verdict = if allow {
            Verdict::Allow
        } else {
            Verdict::Withhold
        };
    }
}

#[derive(Default)]
struct State {
    /// The last frame gated whose OCR succeeded: its digest and pixels.
    last: Option<(String, Frame)>,
    /// The OCR matches standing on that frame.
    standing: Vec<Reason>,
}

/// One session's gate: the policy, the engine, and what it saw last.
pub struct Gate {
    policy: Arc<GatePolicy>,
    ocr: Arc<dyn Ocr>,
    classifier: Option<Arc<dyn Classifier>>,
    state: Mutex<State>,
}

impl Gate {
    /// A gate that has seen no frame yet.
    pub fn new(policy: Arc<GatePolicy>, ocr: Arc<dyn Ocr>) -> Gate {
        Gate {
            policy,
            ocr,
            classifier: None,
            state: Mutex::new(State::default()),
        }
    }

    /// The gate with `classifier` scoring the text read (the policy's `classifier`).
    pub fn with_classifier(mut self, classifier: Arc<dyn Classifier>) -> Gate {
        self.classifier = Some(classifier);
        self
    }

    /// The policy.
    pub fn policy(&self) -> &GatePolicy {
        &self.policy
    }

    /// Gates one frame. `changed` is the box that changed since the last frame this gate saw,
    /// when the caller knows it; otherwise the gate compares the pixels itself.
    /// `observer_names` are the accessible names on screen, when an observer gave them.
    pub fn gate(
        &self,
        frame_png: &[u8],
        changed: Option<Rect>,
        observer_names: &[String],
    ) -> Decision {
        let started = Instant::now();
        let frame_sha256 = hex::encode(Sha256::digest(frame_png));
        let mut reasons = Vec::new();
        let mut ocr_region = None;
        let mut ocr_ms = 0.0;
        let mut classifier_ms = 0.0;
        let mut problem = None;
        // A poisoned lock only means another gate call panicked: its state is still coherent
        // (written at the end of a call), so it is used.
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        let same_frame = state
            .last
            .as_ref()
            .is_some_and(|(sha, _)| *sha == frame_sha256);
        if same_frame {
            reasons.extend(state.standing.iter().cloned());
        } else {
            match frame::decode(frame_png, &self.policy) {
                Err(error) => {
                    reasons.push(failure(ReasonSource::Frame));
                    problem = Some(error.to_string());
                }
                Ok(decoded) => {
                    let region = self.region(&state, &decoded, changed);
                    match region {
                        None => {
                            reasons.extend(state.standing.iter().cloned());
                            state.last = Some((frame_sha256.clone(), decoded));
                        }
                        Some(region) => {
                            let read = self.read(&decoded, region, &mut ocr_ms, &mut classifier_ms);
                            ocr_region = Some(region);
                            match read {
                                Ok(found) => {
                                    // What stood outside the region read stays standing.
                                    let mut standing: Vec<Reason> = state
                                        .standing
                                        .iter()
                                        .filter(|reason| {
                                            reason.region.is_none_or(|rect| !inside(rect, region))
                                        })
                                        .cloned()
                                        .collect();
                                    standing.extend(found);
                                    reasons.extend(standing.iter().cloned());
                                    state.standing = standing;
                                    state.last = Some((frame_sha256.clone(), decoded));
                                }
                                Err(error) => {
                                    // The next frame is read whole.
                                    state.last = None;
                                    reasons.extend(state.standing.iter().cloned());
                                    reasons.push(failure(ReasonSource::Engine));
                                    problem = Some(error.to_string());
                                }
                            }
                        }
                    }
                }
            }
        }
        drop(state);
        reasons.extend(self.observer_matches(observer_names));
        let max_score_permille = reasons
            .iter()
            .map(|reason| reason.score_permille)
            .max()
            .unwrap_or(0);
        let settings = self.policy.settings();
        let verdict = if reasons
            .iter()
            .any(|reason| reason.source == ReasonSource::Engine)
            && max_score_permille < settings.block_min_permille
        {
            Verdict::InsufficientData
        } else if max_score_permille >= settings.block_min_permille {
            Verdict::Withhold
        } else if max_score_permille > settings.allow_max_permille {
            Verdict::Review
        } else {
            Verdict::Allow
        };
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Decision {
            record_id: record_id(&frame_sha256),
            decided_at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64),
            frame_sha256,
            frame_bytes: frame_png.len() as u64,
            verdict,
            max_score_permille,
            reasons,
            policy_sha256: self.policy.policy_sha256().to_string(),
            ocr_engine: self.ocr.engine(),
            ocr_region,
            ocr_ms: ocr_ms.round() as u64,
            gate_ms: elapsed_ms.round() as u64,
            elapsed_ms,
            ocr_elapsed_ms: ocr_ms,
            classifier_ms,
            problem,
        }
    }

    /// The region to read: the changed box (given, or measured against the last frame),
    /// widened to full-width bands, joined with the standing matches it touches. `None`: no
    /// pixel changed.
    fn region(&self, state: &State, frame: &Frame, changed: Option<Rect>) -> Option<Rect> {
        let changed = match (changed, &state.last) {
            (Some(rect), Some(_)) => Some(rect),
            (_, Some((_, last))) => frame::changed_box(last, frame),
            (_, None) => Some(frame.whole()),
        }?;
        let band = changed.padded_within(BAND_PAD, frame.width, frame.height);
        let mut region = Rect {
            x: 0,
            y: band.y,
            width: frame.width,
            height: band.height,
        };
        for reason in &state.standing {
            if let Some(rect) = reason.region
                && overlaps(rect, region)
            {
                region = region.union(rect);
            }
        }
        Some(region.padded_within(0, frame.width, frame.height))
    }

    /// OCR over `region`, matched against the patterns (words in frame coordinates), and the
    /// text read scored by the classifier when there is one and the region has text.
    fn read(
        &self,
        frame: &Frame,
        region: Rect,
        ocr_ms: &mut f64,
        classifier_ms: &mut f64,
    ) -> Result<Vec<Reason>, GateError> {
        let pixels = u64::from(region.width) * u64::from(region.height);
        let scale = if pixels <= ENLARGE_MAX_PIXELS { 2 } else { 1 };
        let png = frame::region_png(frame, region, scale)?;
        let ocr_started = Instant::now();
        let read = self.ocr.recognize(&png, self.policy.ocr_timeout());
        *ocr_ms = ocr_started.elapsed().as_secs_f64() * 1000.0;
        let words: Vec<Word> = read?
            .into_iter()
            .map(|word| Word {
                rect: Rect {
                    x: region.x + word.rect.x / scale,
                    y: region.y + word.rect.y / scale,
                    width: word.rect.width.div_ceil(scale),
                    height: word.rect.height.div_ceil(scale),
                },
                ..word
            })
            .collect();
        let (text, spans) = joined(&words);
        let mut reasons = self.ocr_matches(&words, &text, &spans);
        if let (Some(classifier), Some(timeout)) =
            (&self.classifier, self.policy.classifier_timeout())
            && !text.is_empty()
        {
            let classifier_started = Instant::now();
            let scored = classifier.score(&text, timeout);
            *classifier_ms = classifier_started.elapsed().as_secs_f64() * 1000.0;
            reasons.push(Reason {
                source: ReasonSource::Classifier,
                pattern_index: None,
                pattern: None,
                region: Some(region),
                score_permille: scored?,
            });
        }
        Ok(reasons)
    }

    /// Every pattern found in the words' `text` (see [`joined`]).
    fn ocr_matches(&self, words: &[Word], text: &str, spans: &[(usize, usize)]) -> Vec<Reason> {
        let mut reasons = Vec::new();
        for (pattern_index, pattern, regex) in self.policy.patterns() {
            for found in regex.find_iter(text) {
                let mut confidence = f64::INFINITY;
                let mut rect: Option<Rect> = None;
                for (word, (start, end)) in words.iter().zip(spans) {
                    if *start < found.end() && found.start() < *end {
                        confidence = confidence.min(word.confidence);
                        rect = Some(rect.map_or(word.rect, |seen| seen.union(word.rect)));
                    }
                }
                if confidence.is_finite() {
                    reasons.push(Reason {
                        source: ReasonSource::Ocr,
                        pattern_index: Some(pattern_index),
                        pattern: Some(pattern.to_string()),
                        region: rect,
                        score_permille: (confidence * 10.0).round() as u32,
                    });
                }
            }
        }
        reasons
    }

    fn observer_matches(&self, names: &[String]) -> Vec<Reason> {
        let mut reasons = Vec::new();
        for (pattern_index, pattern, regex) in self.policy.patterns() {
            if names.iter().any(|name| regex.is_match(name)) {
                reasons.push(Reason {
                    source: ReasonSource::Observer,
                    pattern_index: Some(pattern_index),
                    pattern: Some(pattern.to_string()),
                    region: None,
                    score_permille: 1000,
                });
            }
        }
        reasons
    }
}

/// The words' text joined by single spaces in reading order, and each word's byte span in it.
fn joined(words: &[Word]) -> (String, Vec<(usize, usize)>) {
    let mut text = String::new();
    let mut spans = Vec::with_capacity(words.len());
    for word in words {
        if !text.is_empty() {
            text.push(' ');
        }
        let start = text.len();
        text.push_str(&word.text);
        spans.push((start, text.len()));
    }
    (text, spans)
}

/// A reason for a frame or engine failure: a refused frame scores 1000 (withheld), an engine
/// failure 0 (so the verdict is `insufficient_data` unless something else withholds).
fn failure(source: ReasonSource) -> Reason {
    Reason {
        source,
        pattern_index: None,
        pattern: None,
        region: None,
        score_permille: if source == ReasonSource::Frame {
            1000
        } else {
            0
        },
    }
}

fn overlaps(a: Rect, b: Rect) -> bool {
    a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

fn inside(inner: Rect, outer: Rect) -> bool {
    inner.x >= outer.x
        && inner.y >= outer.y
        && inner.x + inner.width <= outer.x + outer.width
        && inner.y + inner.height <= outer.y + outer.height
}

fn record_id(frame_sha256: &str) -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: still unique per frame and instant.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let digest = Sha256::digest(format!("{frame_sha256}{nanos}"));
        bytes.copy_from_slice(&digest[..16]);
    }
    format!("gate-{}", hex::encode(bytes))
}
