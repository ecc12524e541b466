//! One verdict type for any task: the dispatch by artifact kind to the 2D judge (a DXF against
//! the gold drawing, [`crate::score`]) or the 3D judge (an `.FCStd` against the gold document,
//! [`crate::score3d::score_fcstd`]), and a uniform view of either report for results and
//! reports.
//!
//! On the wire a [`TaskScore`] is exactly the judge's own report; which one it is follows from
//! its `scorer_version`, so 2D results written before 3D tasks existed still read.

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::CadError;
use crate::corpus::{ArtifactKind, Gold};
use crate::score::{ScoreReport, ZeroReason, score};
use crate::score3d::{
    SOLID_SCORER_PREFIX, SolidCategory, SolidScoreReport, SolidZeroReason, score_fcstd,
};

/// Either judge's report.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskScore {
    /// The 2D judge's report on a DXF.
    Drawing(ScoreReport),
    /// The 3D judge's report on an `.FCStd`.
    Part(SolidScoreReport),
}

/// One category of a report, uniformly: its name, weight and score in [0, 1], and what was
/// compared.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryLine {
    /// The category's snake_case name.
    pub name: String,
    /// Its weight in the overall score (0 when it does not count).
    pub weight: f64,
    /// Its score in [0, 1].
    pub score: f64,
    /// Gold against candidate, as text.
    pub detail: String,
}

fn snake<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl TaskScore {
    /// The zero of a missing artifact of `kind` (before anything was retrieved).
    pub fn missing(kind: ArtifactKind) -> Self {
        match kind {
            ArtifactKind::Dxf => TaskScore::Drawing(ScoreReport::zero(
                ZeroReason::Missing,
                "no candidate file".to_owned(),
                Vec::new(),
            )),
            ArtifactKind::Fcstd => TaskScore::Part(SolidScoreReport::zero(
                SolidZeroReason::Missing,
                "no candidate file",
            )),
        }
    }

    /// The overall score in [0, 1].
    pub fn score(&self) -> f64 {
        match self {
            TaskScore::Drawing(report) => report.score,
            TaskScore::Part(report) => report.score,
        }
    }

    /// The judge's version.
    pub fn scorer_version(&self) -> &str {
        match self {
            TaskScore::Drawing(report) => &report.scorer_version,
            TaskScore::Part(report) => &report.scorer_version,
        }
    }

    /// Why the submission scored zero by rule, as its snake_case name.
    pub fn zero_reason(&self) -> Option<String> {
        match self {
            TaskScore::Drawing(report) => report.zero_reason.as_ref().map(snake),
            TaskScore::Part(report) => report.zero_reason.as_ref().map(snake),
        }
    }

    /// The detail of a zero.
    pub fn message(&self) -> Option<&str> {
        match self {
            TaskScore::Drawing(report) => report.message.as_deref(),
            TaskScore::Part(report) => report.message.as_deref(),
        }
    }

    /// The per-category breakdown.
    pub fn categories(&self) -> Vec<CategoryLine> {
        match self {
            TaskScore::Drawing(report) => report
                .categories
                .iter()
                .map(|category| CategoryLine {
                    name: snake(&category.category),
                    weight: category.weight,
                    score: category.f1,
                    detail: format!(
                        "{} gold, {} candidate, {} matched",
                        category.gold, category.candidate, category.matched
                    ),
                })
                .collect(),
            TaskScore::Part(report) => report
                .categories
                .iter()
                .map(|category| CategoryLine {
                    name: snake(&category.category),
                    weight: category.weight,
                    score: category.score,
                    detail: format!(
                        "gold {}, candidate {}{}",
                        fmt_measure(category.gold),
                        fmt_measure(category.candidate),
                        // Which common volume the IoU used (exact, fuzzy or sampled).
                        match (category.category, report.iou_method) {
                            (SolidCategory::Iou, Some(method)) => format!(" ({})", snake(&method)),
                            _ => String::new(),
                        }
                    ),
                })
                .collect(),
        }
    }
}

fn fmt_measure(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl Serialize for TaskScore {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TaskScore::Drawing(report) => report.serialize(serializer),
            TaskScore::Part(report) => report.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for TaskScore {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let solid = value
            .get("scorer_version")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|version| version.starts_with(SOLID_SCORER_PREFIX));
        if solid {
            SolidScoreReport::deserialize(value)
                .map(TaskScore::Part)
                .map_err(serde::de::Error::custom)
        } else {
            ScoreReport::deserialize(value)
                .map(TaskScore::Drawing)
                .map_err(serde::de::Error::custom)
        }
    }
}

/// Scores the candidate file at `candidate` against `gold` with the judge of its kind.
///
/// A bad candidate is a zero with a reason; errors are the 3D judge's own failures
/// ([`score_fcstd`]).
pub fn score_task(gold: &Gold, candidate: &Path) -> Result<TaskScore, CadError> {
    match gold {
        Gold::Drawing(model) => Ok(TaskScore::Drawing(score(model, candidate))),
        Gold::Part(path) => score_fcstd(path, candidate).map(TaskScore::Part),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_report_round_trips_through_json_by_its_scorer_version() {
        for kind in [ArtifactKind::Dxf, ArtifactKind::Fcstd] {
            let report = TaskScore::missing(kind);
            let json = serde_json::to_string(&report).unwrap();
            let back: TaskScore = serde_json::from_str(&json).unwrap();
            assert_eq!(back, report);
            assert_eq!(back.zero_reason().as_deref(), Some("missing"));
            assert_eq!(back.score(), 0.0);
        }
        assert!(matches!(
            TaskScore::missing(ArtifactKind::Fcstd),
            TaskScore::Part(_)
        ));
        // A 2D report is the plain ScoreReport on the wire, as before 3D tasks existed.
        let plain = serde_json::to_value(TaskScore::missing(ArtifactKind::Dxf)).unwrap();
        let old: ScoreReport = serde_json::from_value(plain).unwrap();
        assert_eq!(old.zero_reason, Some(ZeroReason::Missing));
    }
}
