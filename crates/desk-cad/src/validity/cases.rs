//! What every validity case shares: the relation a case's score must keep to the gold's
//! ([`Expected`]), a case's result, a task's results, and the helpers that judge and time a
//! case.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::corpus::DrawingType;

/// How far below the gold's score a perturbed attempt's must be to count as ranked below it
/// (equality within floating-point noise does not).
pub const MARGIN_EPSILON: f64 = 1e-9;

/// What a case's score must be, relative to the gold's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "relation", rename_all = "snake_case")]
pub enum Expected {
    /// Exactly 1: the gold against itself.
    Maximum,
    /// The same report as the gold's first run (determinism).
    SameReport,
    /// Strictly between 0 and the gold's score: a real but imperfect attempt.
    BelowGold,
    /// Exactly 0 with this zero reason.
    Zero {
        /// The judge's `zero_reason`, as serialized.
        reason: String,
    },
}

/// One judged case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// What was done to the gold, e.g. `moved circle`.
    pub name: String,
    /// The judge's score (0 when the case could not be made; see `detail`).
    pub score: f64,
    /// The judge's zero reason, if any.
    pub zero_reason: Option<String>,
    /// The relation the score must keep.
    pub expected: Expected,
    /// Whether it did.
    pub pass: bool,
    /// Making and judging the case, in milliseconds.
    pub elapsed_ms: u64,
    /// Why the case failed or was made differently (a fallback perturbation), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One task's validity report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskValidity {
    /// The task id.
    pub task: String,
    /// 2D or 3D.
    pub kind: DrawingType,
    /// The gold's score against itself.
    pub gold_score: f64,
    /// Every case, gold runs first.
    pub cases: Vec<CaseResult>,
    /// The whole task, in milliseconds.
    pub elapsed_ms: u64,
}

impl TaskValidity {
    /// Whether every case kept its relation.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(|case| case.pass)
    }

    /// The gold's score minus the highest score of a [`Expected::BelowGold`] case (none: the
    /// gold's score).
    pub fn min_margin(&self) -> f64 {
        let highest = self
            .cases
            .iter()
            .filter(|case| case.expected == Expected::BelowGold)
            .map(|case| case.score)
            .fold(0.0, f64::max);
        self.gold_score - highest
    }

    /// The failed cases' names.
    pub fn failures(&self) -> Vec<&str> {
        let failed = self.cases.iter().filter(|case| !case.pass);
        failed.map(|case| case.name.as_str()).collect()
    }
}

/// Whether `score` keeps `expected` (the `SameReport` relation is checked by its caller).
pub(super) fn keeps(expected: &Expected, score: f64, zero_reason: Option<&str>, gold: f64) -> bool {
    match expected {
        Expected::Maximum => score == 1.0 && zero_reason.is_none(),
        Expected::SameReport => true,
        Expected::BelowGold => {
            zero_reason.is_none() && score > 0.0 && score < gold - MARGIN_EPSILON
        }
        Expected::Zero { reason } => score == 0.0 && zero_reason == Some(reason.as_str()),
    }
}

/// A zero reason's serialized name.
pub(super) fn reason_name<T: Serialize>(reason: &T) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Milliseconds since `started`.
pub(super) fn ms_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A judged case, its pass computed from `expected`.
pub(super) fn case(
    name: &str,
    expected: Expected,
    judged: (f64, Option<String>),
    gold: f64,
    started: Instant,
) -> CaseResult {
    let (score, zero_reason) = judged;
    CaseResult {
        name: name.to_owned(),
        pass: keeps(&expected, score, zero_reason.as_deref(), gold),
        score,
        zero_reason,
        expected,
        elapsed_ms: ms_since(started),
        detail: None,
    }
}

/// The gold's two cases: it scores the maximum, and judged again (`again`) it gives the same
/// report.
pub(super) fn gold_cases<R: PartialEq, E>(
    started: Instant,
    first: &R,
    again: impl FnOnce() -> Result<R, E>,
    judged: impl Fn(&R) -> (f64, Option<String>),
) -> Result<Vec<CaseResult>, E> {
    let gold_score = judged(first).0;
    let mut cases = vec![case("gold", Expected::Maximum, judged(first), 1.0, started)];
    let again_started = Instant::now();
    let again = again()?;
    let mut same = case(
        "gold again",
        Expected::SameReport,
        judged(&again),
        gold_score,
        again_started,
    );
    same.pass = again == *first;
    cases.push(same);
    Ok(cases)
}

/// A case that could not be made: it fails, with why.
pub(super) fn unmade(name: &str, expected: Expected, why: String, started: Instant) -> CaseResult {
    CaseResult {
        name: name.to_owned(),
        score: 0.0,
        zero_reason: None,
        expected,
        pass: false,
        elapsed_ms: ms_since(started),
        detail: Some(why),
    }
}
