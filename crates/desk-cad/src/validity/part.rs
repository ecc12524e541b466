//! 3D judge validity: perturbations of a generated part's gold, built by the trusted gold
//! builder ([`build_part`]) in the judge's sandbox, and invalid files made by our own FreeCAD
//! script in the same sandbox ([`bad_files`]), all judged by [`score_fcstd`].
//!
//! The feature perturbations hold for every family: the moved feature is the first hole
//! (moved across its axis), the removed one the last feature, the extra Ø4 hole lands in
//! material (between the plate's corner holes, on the flange's bolt circle between two bolts,
//! beside the bracket's first hole), the scaled one is the first hole 1.5x wider. Each has
//! smaller fallbacks, tried in order when a candidate does not build one valid solid; removed,
//! extra and scaled must change the built volume, so a change that cuts no material is not
//! taken for one. The sheet perturbations (views swapped, stacked, one rescaled, a dimension
//! moved to another view, a dimension with a wrong value, hidden lines shown, a centre line
//! added, and on a gold with a section view its hatch removed and its symbol changed) are made
//! from the gold file itself by [`bad_files`]' script.

use std::path::Path;
use std::time::Instant;

use super::cases::{
    CaseResult, Expected, TaskValidity, case, gold_cases, ms_since, reason_name, unmade,
};
use crate::CadError;
use crate::corpus::DrawingType;
use crate::generate3d::{Axis, Base, Feature, PartSpec, PartTask, SheetSpec, View};
use crate::part_task::build_part;
use crate::score3d::{SolidScoreReport, score_fcstd};

pub mod bad_files;

/// The least volume change (mm³) that counts as a real change.
const MIN_VOLUME_CHANGE: f64 = 1.0;

/// One perturbation: what it is called and the specs and sheets to try, best first.
#[derive(Clone, Debug)]
pub struct Perturbation {
    /// The case name, e.g. `moved hole`.
    pub name: &'static str,
    /// (spec, sheet) candidates, tried in order until one builds.
    pub candidates: Vec<(PartSpec, Option<SheetSpec>)>,
    /// Whether the built part's volume must differ from the gold's.
    pub changes_volume: bool,
}

/// Builds `part`'s gold in `work`, then makes and judges every 3D case.
pub fn validate_part(task: &str, part: &PartTask, work: &Path) -> Result<TaskValidity, CadError> {
    let started = Instant::now();
    let gold = work.join("gold.FCStd");
    let built = build_part(&part.spec, Some(&part.sheet), &[], &gold)?;
    let first = score_fcstd(&gold, &gold)?;
    let gold_score = first.score;
    let mut cases = gold_cases(started, &first, || score_fcstd(&gold, &gold), judged)?;
    for perturbation in perturbations(part) {
        cases.push(perturbed(
            &gold,
            built.volume,
            &perturbation,
            gold_score,
            work,
        ));
    }
    let bad_started = Instant::now();
    let made = bad_files::make_bad_files(work, &gold);
    for (name, reason) in bad_files::BAD_FILES {
        let case_started = Instant::now();
        let expected = Expected::Zero {
            reason: reason_name(&reason),
        };
        if let Err(error) = &made {
            cases.push(unmade(name, expected, error.to_string(), bad_started));
            continue;
        }
        let path = work.join(bad_files::file_name(name));
        cases.push(match score_fcstd(&gold, &path) {
            Ok(report) => case(name, expected, judged(&report), gold_score, case_started),
            Err(error) => unmade(name, expected, error.to_string(), case_started),
        });
    }
    let has_section = part.sheet.views.contains(&View::Section);
    let section_files: &[&str] = if has_section {
        &bad_files::SECTION_FILES
    } else {
        &[]
    };
    for name in bad_files::SHEET_FILES.iter().chain(section_files) {
        let name = *name;
        let case_started = Instant::now();
        if let Err(error) = &made {
            cases.push(unmade(
                name,
                Expected::BelowGold,
                error.to_string(),
                bad_started,
            ));
            continue;
        }
        let path = work.join(bad_files::file_name(name));
        cases.push(match score_fcstd(&gold, &path) {
            Ok(report) => case(
                name,
                Expected::BelowGold,
                judged(&report),
                gold_score,
                case_started,
            ),
            Err(error) => unmade(name, Expected::BelowGold, error.to_string(), case_started),
        });
    }
    Ok(TaskValidity {
        task: task.to_owned(),
        kind: DrawingType::ThreeD,
        gold_score,
        cases,
        elapsed_ms: ms_since(started),
    })
}

fn judged(report: &SolidScoreReport) -> (f64, Option<String>) {
    (report.score, report.zero_reason.as_ref().map(reason_name))
}

/// Builds the first candidate of `perturbation` that builds (and changes the volume when it
/// must) and judges it against `gold`.
fn perturbed(
    gold: &Path,
    gold_volume: f64,
    perturbation: &Perturbation,
    gold_score: f64,
    work: &Path,
) -> CaseResult {
    let started = Instant::now();
    let name = perturbation.name;
    let path = work.join(bad_files::file_name(name));
    let mut refused = Vec::new();
    for (candidate_idx, (spec, sheet)) in perturbation.candidates.iter().enumerate() {
        let volume = match build_part(spec, sheet.as_ref(), &[], &path) {
            Ok(built) => built.volume,
            Err(error) => {
                refused.push(format!("candidate {candidate_idx}: {error}"));
                continue;
            }
        };
        if perturbation.changes_volume && (volume - gold_volume).abs() < MIN_VOLUME_CHANGE {
            refused.push(format!("candidate {candidate_idx}: volume unchanged"));
            continue;
        }
        let mut result = match score_fcstd(gold, &path) {
            Ok(report) => case(
                name,
                Expected::BelowGold,
                judged(&report),
                gold_score,
                started,
            ),
            Err(error) => unmade(name, Expected::BelowGold, error.to_string(), started),
        };
        if !refused.is_empty() {
            result.detail = Some(format!("fallback: {}", refused.join("; ")));
        }
        return result;
    }
    let why = format!("no candidate made a real change: {}", refused.join("; "));
    unmade(name, Expected::BelowGold, why, started)
}

/// The held-out perturbations of `part`'s gold: four of the part's features, three of its
/// sheet.
pub fn perturbations(part: &PartTask) -> Vec<Perturbation> {
    let spec = &part.spec;
    let sheet = Some(part.sheet.clone());
    let with_sheet = |specs: Vec<PartSpec>| -> Vec<(PartSpec, Option<SheetSpec>)> {
        specs.into_iter().map(|s| (s, sheet.clone())).collect()
    };
    let first_hole = spec
        .features
        .iter()
        .position(|f| matches!(f, Feature::Hole { .. }));
    let moved: Vec<PartSpec> = [(4.0, 3.0), (2.0, 1.5), (1.0, 0.5)]
        .into_iter()
        .filter_map(|offset| Some(moved_hole(spec, first_hole?, offset)))
        .collect();
    let n_features = spec.features.len();
    let removed: Vec<PartSpec> = [n_features.checked_sub(1), Some(0)]
        .into_iter()
        .flatten()
        .filter(|idx| *idx < n_features)
        .map(|idx| {
            let mut removed = spec.clone();
            removed.features.remove(idx);
            removed
        })
        .collect();
    let extra: Vec<PartSpec> = extra_holes(spec)
        .into_iter()
        .map(|hole| {
            let mut extra = spec.clone();
            extra.features.push(hole);
            extra
        })
        .collect();
    let scaled: Vec<PartSpec> = [1.5, 1.25]
        .into_iter()
        .filter_map(|factor| Some(scaled_hole(spec, first_hole?, factor)))
        .collect();
    let mut sheets = Vec::new();
    for view_idx in [0, part.sheet.views.len().saturating_sub(1)] {
        let mut fewer = part.sheet.clone();
        if view_idx < fewer.views.len() {
            fewer.views.remove(view_idx);
            sheets.push((spec.clone(), Some(fewer)));
        }
    }
    let mut renamed = part.sheet.clone();
    renamed.name = "Page".to_owned();
    vec![
        feature_case("moved hole", with_sheet(moved), false),
        feature_case("removed feature", with_sheet(removed), true),
        feature_case("extra hole", with_sheet(extra), true),
        feature_case("scaled hole", with_sheet(scaled), true),
        feature_case("missing view", sheets, false),
        feature_case("sheet renamed", vec![(spec.clone(), Some(renamed))], false),
        feature_case("solid only", vec![(spec.clone(), None)], false),
    ]
}

fn feature_case(
    name: &'static str,
    candidates: Vec<(PartSpec, Option<SheetSpec>)>,
    changes_volume: bool,
) -> Perturbation {
    Perturbation {
        name,
        candidates,
        changes_volume,
    }
}

/// The two coordinates across a hole's axis.
fn across(axis: Axis) -> (usize, usize) {
    match axis {
        Axis::X | Axis::NegX => (1, 2),
        Axis::Y | Axis::NegY => (0, 2),
        Axis::Z | Axis::NegZ => (0, 1),
    }
}

fn moved_hole(spec: &PartSpec, idx: usize, offset: (f64, f64)) -> PartSpec {
    let mut moved = spec.clone();
    if let Some(Feature::Hole { start, axis, .. }) = moved.features.get_mut(idx) {
        let (u, v) = across(*axis);
        start[u] += offset.0;
        start[v] += offset.1;
    }
    moved
}

fn scaled_hole(spec: &PartSpec, idx: usize, factor: f64) -> PartSpec {
    let mut scaled = spec.clone();
    if let Some(Feature::Hole { diameter, .. }) = scaled.features.get_mut(idx) {
        *diameter *= factor;
    }
    scaled
}

/// Ø4 through holes along Z in material, best first.
fn extra_holes(spec: &PartSpec) -> Vec<Feature> {
    let holes: Vec<([f64; 3], f64)> = spec
        .features
        .iter()
        .filter_map(|feature| match feature {
            Feature::Hole {
                start,
                axis: Axis::Z,
                diameter,
                ..
            } => Some((*start, *diameter)),
            _ => None,
        })
        .collect();
    let mut spots = Vec::new();
    match &spec.base {
        // Between the first two corner holes along their edge: clear of the centred pocket.
        Base::ExtrudeXy { profile, .. } => {
            let ys = profile.iter().map(|p| p[1]);
            let (low, high) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
            if let Some((start, _)) = holes.first() {
                spots.push([start[0], (low + high) / 2.0]);
            }
        }
        // On the bolt circle halfway between the first two bolts (the bore is the first hole).
        Base::Revolve { .. } => {
            if let [_, (a, _), (b, _), ..] = holes.as_slice() {
                let radius = a[0].hypot(a[1]);
                let angle = (a[1].atan2(a[0]) + b[1].atan2(b[0])) / 2.0;
                spots.push([radius * angle.cos(), radius * angle.sin()]);
            }
        }
        Base::ExtrudeXz { .. } => {}
    }
    // Beside the first hole, clear of it: the bracket's spot and everyone's fallback.
    if let Some((start, diameter)) = holes.first() {
        spots.push([start[0] + diameter + 3.0, start[1]]);
    }
    spots
        .into_iter()
        .map(|[x, y]| Feature::Hole {
            start: [x, y, -50.0],
            axis: Axis::Z,
            diameter: 4.0,
            depth: 200.0,
        })
        .collect()
}
