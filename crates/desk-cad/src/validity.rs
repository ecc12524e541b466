//! Judge validity: for one corpus task, the held-out perturbations of its gold, judged by the
//! task's own judge, each with the relation to the gold it must keep. The gold scores exactly
//! 1 against itself, and the same file the same report twice; a perturbed attempt (a moved,
//! removed, extra or scaled feature, a changed dimension or text, a wrong layer, a missing
//! view, the sheet under another name, no sheet) scores strictly between 0 and the gold; an
//! invalid file (empty, not the format, forbidden content, a mesh, a Python feature) scores
//! exactly 0 with the expected zero reason.
//!
//! 2D tasks ([`drawing`]): the perturbed [`Model`]s are written with desk-cad's DXF writer and
//! scored through the file path, as a candidate is. 3D tasks ([`part`]): every file is made by
//! trusted FreeCAD in the judge's sandbox (the gold builder for perturbed specs and sheets, our
//! own script for meshes and trap files); the judge never runs the candidate's code.
//!
//! Invariant: the cases and their scores are a pure function of the gold; only the `elapsed_ms`
//! timings (measurements, not scores) read the clock.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::corpus::DrawingType;
use crate::generate3d::PartTask;
use crate::{CadError, Model};

pub mod drawing;
pub mod part;

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

/// A task's gold, as validity takes it.
#[derive(Clone, Copy, Debug)]
pub enum ValidityGold<'a> {
    /// A 2D task's gold drawing.
    Drawing(&'a Model),
    /// A 3D task's generated part (its gold is built from it).
    Part(&'a PartTask),
}

/// Makes and judges every case of one task in `work` (an empty directory it may fill). An error
/// is the judge's own failure (no sandbox, a gold that does not build), not a failed case.
pub fn validate_task(
    task: &str,
    gold: ValidityGold<'_>,
    work: &Path,
) -> Result<TaskValidity, CadError> {
    match gold {
        ValidityGold::Drawing(model) => Ok(drawing::validate_drawing(task, model, work)),
        ValidityGold::Part(part) => part::validate_part(task, part, work),
    }
}

/// Whether `score` keeps `expected` (the `SameReport` relation is checked by its caller).
pub(crate) fn keeps(expected: &Expected, score: f64, zero_reason: Option<&str>, gold: f64) -> bool {
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
pub(crate) fn reason_name<T: Serialize>(reason: &T) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Milliseconds since `started`.
pub(crate) fn ms_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A judged case, its pass computed from `expected`.
pub(crate) fn case(
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
pub(crate) fn gold_cases<R: PartialEq, E>(
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
pub(crate) fn unmade(name: &str, expected: Expected, why: String, started: Instant) -> CaseResult {
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

#[cfg(test)]
mod tests;
