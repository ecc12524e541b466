//! The trusted 3D judge: a candidate `.FCStd` against the private gold `.FCStd`.
//!
//! Both files are read in one sandboxed freecadcmd run (`solid/fcstd_read.py` +
//! `solid/judge_fcstd.py`): never opened as documents, shapes loaded only from their BREP
//! members, the part chosen as [`crate::solid`] describes.
//! (Over 400 lines: the zero rules, categories and report types are one set of rules; the
//! sheet category and the tests are submodules.)
//!
//! # Zero rules
//! Missing file, empty file, unreadable (not an FCStd zip, no or bad `Document.xml`), a Python
//! feature object anywhere (its code would run on open), an external link, a mesh but no solid
//! (`mesh_only`), shapes but no solid (`no_solid`: sketches, faces, projected 2D geometry), no
//! shape at all (`empty`).
//!
//! # Categories
//! Each is a number in [0, 1]; the score is their weighted sum, rounded to 1e-6:
//! - `solid` (0.15): the share of the part's solids OCCT finds valid;
//! - `volume` (0.15) and `area` (0.15): `1 - |c - g| / (0.1 g)`, floored at 0 (10 % off
//!   scores 0), of the union of the part's solids (fused: a part split into touching solids
//!   measures as the whole; the sums when the fuse fails);
//! - `extents` (0.15): the same rule on each of the X, Y and Z sizes of the part's bounding
//!   box, averaged;
//! - `iou` (0.40): `1 - (1 - IoU) / 0.1`, floored at 0 (an IoU of 0.9 scores 0), where IoU is
//!   the common volume over the union volume of the fused candidate and gold parts after the
//!   allowed alignment: a translation putting the candidate's centre of mass (the
//!   volume-weighted mean of its solids') on the gold's (no rotation: the views fix the
//!   orientation; no scaling: the dimensions are given). The common volume is never silently
//!   empty: OCCT's exact and fuzzy (0.01 mm) booleans are checked by an independent line
//!   sample (128 x 128 stratified lines through the tessellated solids) whenever they fail,
//!   disagree, or agree below an IoU of 0.99; the sample then keeps a boolean within 0.01 of
//!   its IoU or decides itself. `iou_method` in the report says which (`exact`, `fuzzy`,
//!   `sampled`, the last also flagged `iou_sampled`). A
//!   whole part's IoU barely moves when one small feature is off, hence the steep scale.
//!
//! When the gold has a TechDraw page labelled `Layout1`, a `sheet` category weighs
//! [`SHEET_WEIGHT`] (0.4) and the part categories share 0.6 in the same proportions. The
//! candidate's `Layout1` (read from `Document.xml`, never recomputed) is compared with the
//! gold's: views 1:1 on kind (part, section, detail) and direction within 0.5° (0.5),
//! dimensions on type (0.3), note texts (0.1), hatch counts (0.1), each an F1 and each only
//! when the gold has such items. No `Layout1` scores 0 for the category (flagged, also when
//! the views sit on another page), so a solid alone is incomplete; so is a sheet alone, which
//! has no solid and scores zero outright. Dimension values are not stored in the file and are
//! not checked.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::CadError;
use crate::generate3d::SHEET_NAME;
use crate::solid::pictures::JudgePictures;
use crate::solid::{FcstdFacts, SheetFacts, SolidFacts, UnionFacts, sandbox};

mod sheet;

use sheet::round6;

pub use sheet::{
    DIMENSION_TOLERANCE, DIMENSION_TOLERANCE_MM, SHEET_PARTS, SHEET_WEIGHT, SheetScore,
    render_sheet_png,
};

const JUDGE: &str = include_str!("solid/judge_fcstd.py");
/// The line the judge prints once the gold is read, before it touches the candidate.
const GOLD_READ: &str = "DESKGOLD read";

/// Version of these scoring rules.
/// v2: the IoU's common volume is the larger of an exact and a fuzzy (0.01 mm) boolean, see
/// `solid/judge_fcstd.py`.
/// v3: a part is the union of its solids (volume, area, centre of mass, IoU); a line sample
/// checks the booleans and decides when they fail or disagree ([`IouMethod`]); Python
/// properties and extensions count as Python content (`python_content`); the judge's limits
/// give `resource_limit`.
/// v4: the sheet also judges its views' arrangement and relative scale (`sheet/layout.rs`);
/// its parts are reweighted ([`SHEET_PARTS`]).
/// v5: the judge recomputes `Layout1` headless (`solid/sheet_draw.py`): dimensions also match
/// on their values, and a `presentation` part compares the trusted renders of the two sheets.
/// v6: seam edges are not drawn (both shapes refined before the sheet's drawing, not before
/// its dimensions); `arrangement` weighs 0.10 ([`SHEET_PARTS`]).
/// v7: a `callouts` part (section symbols, detail references, centre lines, cosmetic edges of
/// the matched views; 0.04 from `views`).
pub const SOLID_SCORER_VERSION: &str = "deskbroker-cad-solid-scorer-v7";
/// Every version of these rules; a stored report of any of them reads back as a 3D report.
pub const SOLID_SCORER_PREFIX: &str = "deskbroker-cad-solid-scorer-";
/// Relative error at which the volume, area and extent categories reach 0.
pub const REL_SPAN: f64 = 0.1;
/// Shortfall of the IoU below 1 at which the `iou` category reaches 0.
pub const IOU_SPAN: f64 = 0.1;
/// Category weights.
pub const SOLID_WEIGHTS: [(SolidCategory, f64); 5] = [
    (SolidCategory::Solid, 0.15),
    (SolidCategory::Volume, 0.15),
    (SolidCategory::Area, 0.15),
    (SolidCategory::Extents, 0.15),
    (SolidCategory::Iou, 0.40),
];

/// Why a 3D submission scored zero outright.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolidZeroReason {
    /// No file at the candidate path.
    Missing,
    /// An empty file, or a document without any shape.
    Empty,
    /// Not an FCStd archive or its document XML is unusable.
    Unreadable,
    /// An object, property or extension of a Python type (never loaded): FreeCAD would run
    /// or unpickle code for it on open.
    #[serde(alias = "python_feature")]
    PythonContent,
    /// The file exceeded a limit of the judge: the reader's caps (shape data, solids,
    /// `Document.xml` size) or the sandbox's memory, CPU-time or file-size limit.
    ResourceLimit,
    /// A link object or an external file reference.
    ExternalLink,
    /// Mesh objects but no solid.
    MeshOnly,
    /// Shapes or drawing views but no solid (sketches, faces, projected views, a sheet alone).
    NoSolid,
}

/// A 3D scoring category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolidCategory {
    /// Share of valid solids.
    Solid,
    /// Total volume.
    Volume,
    /// Total surface area.
    Area,
    /// Bounding-box sizes.
    Extents,
    /// Intersection over union after alignment.
    Iou,
    /// The `Layout1` presentation sheet.
    Sheet,
}

/// Which estimate of the common volume the IoU used (see `solid/judge_fcstd.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IouMethod {
    /// OCCT's exact boolean common.
    Exact,
    /// OCCT's fuzzy (0.01 mm) boolean common.
    Fuzzy,
    /// The line sample: both booleans failed, or neither lay within 0.01 of the sample's IoU.
    Sampled,
}

/// One category's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolidCategoryScore {
    /// The category.
    pub category: SolidCategory,
    /// Its weight.
    pub weight: f64,
    /// The gold's measure (1 for `solid` and `iou`).
    pub gold: f64,
    /// The candidate's measure.
    pub candidate: f64,
    /// The category's score in [0, 1].
    pub score: f64,
}

/// The 3D judge's report, shaped like the 2D [`crate::ScoreReport`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolidScoreReport {
    /// [`SOLID_SCORER_VERSION`].
    pub scorer_version: String,
    /// Overall score in [0, 1].
    pub score: f64,
    /// Set when the submission scored zero by rule.
    pub zero_reason: Option<SolidZeroReason>,
    /// Human-readable detail for a zero.
    pub message: Option<String>,
    /// Per-category breakdown (empty for zero-rule reports).
    pub categories: Vec<SolidCategoryScore>,
    /// Sorted machine-readable flags.
    pub flags: Vec<String>,
    /// The translation applied to the candidate for the IoU, in mm.
    pub alignment_shift: Option<[f64; 3]>,
    /// The sheet comparison, when the gold has a `Layout1` sheet.
    pub sheet: Option<SheetScore>,
    /// Which estimate of the common volume the IoU used (none when no IoU was computed).
    #[serde(default)]
    pub iou_method: Option<IouMethod>,
    /// The line sample's IoU, when the sample ran (the booleans failed, disagreed or agreed
    /// below 0.99).
    #[serde(default)]
    pub sampled_iou: Option<f64>,
}

impl SolidScoreReport {
    pub(crate) fn zero(reason: SolidZeroReason, message: impl Into<String>) -> Self {
        Self {
            scorer_version: SOLID_SCORER_VERSION.to_owned(),
            score: 0.0,
            zero_reason: Some(reason),
            message: Some(message.into()),
            categories: Vec::new(),
            flags: Vec::new(),
            alignment_shift: None,
            sheet: None,
            iou_method: None,
            sampled_iou: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
enum Overlap {
    Ok {
        gold_volume: f64,
        candidate_volume: f64,
        common_volume: f64,
        shift: [f64; 3],
        method: IouMethod,
        sampled_iou: Option<f64>,
    },
    Failed {
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgeOutput {
    gold: FcstdFacts,
    candidate: FcstdFacts,
    overlap: Option<Overlap>,
}

/// Scores the candidate `.FCStd` at `candidate` against the gold `.FCStd` at `gold`.
///
/// A bad candidate is a zero with a reason, never an error, also when the run crashes or
/// passes [`crate::solid::JUDGE_TIMEOUT`] after the gold was read; errors are the judge's own
/// failures (no sandbox, a gold without a solid, a run that stops before the gold is read).
pub fn score_fcstd(gold: &Path, candidate: &Path) -> Result<SolidScoreReport, CadError> {
    score_fcstd_with(gold, candidate, None)
}

/// [`score_fcstd`], the same judge run also handing over what the report shows of the task
/// ([`JudgePictures`]: both sheets as the judge drew them, both parts drawn isometric after
/// the report was printed, so the score is the same).
pub fn score_fcstd_pictured(
    gold: &Path,
    candidate: &Path,
) -> Result<(SolidScoreReport, JudgePictures), CadError> {
    let mut pictures = JudgePictures::default();
    let report = score_fcstd_with(gold, candidate, Some(&mut pictures))?;
    Ok((report, pictures))
}

fn score_fcstd_with(
    gold: &Path,
    candidate: &Path,
    pictures: Option<&mut JudgePictures>,
) -> Result<SolidScoreReport, CadError> {
    // A symlink is not a regular file: the judge binds only the file itself.
    match std::fs::symlink_metadata(candidate) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(SolidScoreReport::zero(
                SolidZeroReason::Missing,
                "no candidate file",
            ));
        }
        Err(error) => {
            return Ok(SolidScoreReport::zero(
                SolidZeroReason::Unreadable,
                format!("failed to read candidate: {error}"),
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Ok(SolidScoreReport::zero(
                SolidZeroReason::Unreadable,
                "candidate is not a regular file",
            ));
        }
        Ok(meta) if meta.len() == 0 => {
            return Ok(SolidScoreReport::zero(
                SolidZeroReason::Empty,
                "candidate file is empty",
            ));
        }
        Ok(_) => {}
    }
    let draw_parts = if pictures.is_some() {
        crate::solid::pictures::SCRIPT
    } else {
        ""
    };
    let script = format!(
        "{}{draw_parts}\n{JUDGE}",
        crate::solid::reader_with_drawing()
    );
    let started = std::time::Instant::now();
    let stdout = sandbox::run_freecad(
        &script,
        &[(gold, "/in/gold.FCStd"), (candidate, "/in/candidate.FCStd")],
        None,
    )?;
    let judged = started.elapsed();
    let output: JudgeOutput = match judge_output(&stdout.stdout, stdout.timed_out, stdout.limit) {
        Ok(output) => output,
        Err(report) => return *report,
    };
    if let Some(pictures) = pictures {
        *pictures = JudgePictures::read(&output.gold, &output.candidate, &stdout.stdout);
    }
    let (gold_part, gold_sheets, gold_union) = match &output.gold {
        FcstdFacts::Ok {
            part,
            sheets,
            union,
            ..
        } if !part.is_empty() => (part, sheets, union),
        _ => return Err(CadError::Judge("the gold has no solid".to_owned())),
    };
    let candidate_part = match candidate_zero(&output.candidate) {
        Err(report) => return Ok(*report),
        Ok(part) => part,
    };
    let (candidate_sheets, candidate_union) = match &output.candidate {
        FcstdFacts::Ok { sheets, union, .. } => (sheets.as_slice(), union),
        FcstdFacts::Unreadable { .. } | FcstdFacts::ResourceLimit { .. } => (&[][..], &None),
    };
    let mut report = compare(
        Part::new(gold_part, gold_union.as_ref()),
        Part::new(candidate_part, candidate_union.as_ref()),
        output.overlap,
    );
    if let Some(gold_sheet) = gold_sheets.iter().find(|sheet| sheet.label == SHEET_NAME) {
        add_sheet(&mut report, gold_sheet, candidate_sheets);
    }
    tracing::debug!(
        judge_ms = judged.as_millis(),
        compare_ms = (started.elapsed() - judged).as_millis(),
        "3D score timing"
    );
    Ok(report)
}

/// The judge's report; when it has none, whether the run stopped on the candidate (after the
/// gold was read: a zero, so a file that crashes or stalls OCCT cannot dodge its score) or
/// before (the judge's own failure).
fn judge_output(
    stdout: &str,
    timed_out: bool,
    limit: Option<&str>,
) -> Result<JudgeOutput, Box<Result<SolidScoreReport, CadError>>> {
    if let Ok(output) = sandbox::parse_report(stdout) {
        return Ok(output);
    }
    let gold_read = stdout.lines().any(|line| line == GOLD_READ);
    if let (true, Some(limit)) = (gold_read, limit) {
        return Err(Box::new(Ok(SolidScoreReport::zero(
            SolidZeroReason::ResourceLimit,
            format!("the judge hit the {limit} on the candidate"),
        ))));
    }
    if gold_read {
        let how = if timed_out { "timed out" } else { "crashed" };
        return Err(Box::new(Ok(SolidScoreReport::zero(
            SolidZeroReason::Unreadable,
            format!("the judge {how} on the candidate"),
        ))));
    }
    let how = if timed_out {
        "timed out"
    } else {
        "gave no report"
    };
    Err(Box::new(Err(CadError::Judge(format!(
        "the judge {how} before reading the candidate"
    )))))
}

/// The candidate's part solids, or the zero report its facts call for.
fn candidate_zero(facts: &FcstdFacts) -> Result<&[SolidFacts], Box<SolidScoreReport>> {
    let zero = |reason, message: String| Err(Box::new(SolidScoreReport::zero(reason, message)));
    match facts {
        FcstdFacts::Unreadable { reason } => zero(SolidZeroReason::Unreadable, reason.clone()),
        FcstdFacts::ResourceLimit { reason } => {
            zero(SolidZeroReason::ResourceLimit, reason.clone())
        }
        FcstdFacts::Ok { python_content, .. } if !python_content.is_empty() => zero(
            SolidZeroReason::PythonContent,
            format!("python content: {}", python_content.join(", ")),
        ),
        FcstdFacts::Ok { linked, .. } if !linked.is_empty() => zero(
            SolidZeroReason::ExternalLink,
            format!("links: {}", linked.join(", ")),
        ),
        FcstdFacts::Ok {
            part,
            meshes,
            part_shapes,
            sheets,
            ..
        } => {
            if !part.is_empty() {
                Ok(part)
            } else if !meshes.is_empty() {
                zero(
                    SolidZeroReason::MeshOnly,
                    format!("meshes only: {}", meshes.join(", ")),
                )
            } else if *part_shapes > 0 || sheets.iter().any(|sheet| !sheet.views.is_empty()) {
                zero(SolidZeroReason::NoSolid, "shapes but no solid".to_owned())
            } else {
                zero(
                    SolidZeroReason::Empty,
                    "no shape in the document".to_owned(),
                )
            }
        }
    }
}

/// `1 - |c - g| / (REL_SPAN g)`, floored at 0.
fn closeness(gold: f64, candidate: f64) -> f64 {
    if gold <= 0.0 {
        return if candidate <= 0.0 { 1.0 } else { 0.0 };
    }
    round6((1.0 - (candidate - gold).abs() / (REL_SPAN * gold)).max(0.0))
}

fn sizes(part: &[SolidFacts]) -> [f64; 3] {
    let mut b = [
        f64::INFINITY,
        f64::INFINITY,
        f64::INFINITY,
        -f64::INFINITY,
        -f64::INFINITY,
        -f64::INFINITY,
    ];
    for solid in part {
        for axis in 0..3 {
            b[axis] = b[axis].min(solid.bbox[axis]);
            b[axis + 3] = b[axis + 3].max(solid.bbox[axis + 3]);
        }
    }
    [b[3] - b[0], b[4] - b[1], b[5] - b[2]]
}

/// A part's solids and the measures of their union: volume and area from the fused union when
/// the judge reports one, else the sums over the solids.
struct Part<'a> {
    solids: &'a [SolidFacts],
    volume: f64,
    area: f64,
}

impl<'a> Part<'a> {
    fn new(solids: &'a [SolidFacts], union: Option<&UnionFacts>) -> Self {
        let sum = |pick: fn(&SolidFacts) -> f64| solids.iter().map(pick).sum::<f64>();
        Self {
            solids,
            volume: union.map_or_else(|| sum(|s| s.volume), |u| u.volume),
            area: union.map_or_else(|| sum(|s| s.area), |u| u.area),
        }
    }
}

fn compare(gold: Part<'_>, candidate: Part<'_>, overlap: Option<Overlap>) -> SolidScoreReport {
    let mut flags = Vec::new();
    let (gold_volume, candidate_volume) = (gold.volume, candidate.volume);
    let (gold_area, candidate_area) = (gold.area, candidate.area);
    let (gold, candidate) = (gold.solids, candidate.solids);
    let n_valid = candidate.iter().filter(|solid| solid.valid).count();
    let valid_share = n_valid as f64 / candidate.len() as f64;
    if n_valid < candidate.len() {
        flags.push("invalid_solid".to_owned());
    }
    if candidate.len() > 1 {
        flags.push("several_solids".to_owned());
    }
    let (gold_sizes, candidate_sizes) = (sizes(gold), sizes(candidate));
    let extents = round6(
        (0..3)
            .map(|axis| closeness(gold_sizes[axis], candidate_sizes[axis]))
            .sum::<f64>()
            / 3.0,
    );
    let (mut iou_method, mut sampled_iou) = (None, None);
    let (iou, shift) = match overlap {
        Some(Overlap::Ok {
            gold_volume,
            candidate_volume,
            common_volume,
            shift,
            method,
            sampled_iou: sampled,
        }) => {
            iou_method = Some(method);
            sampled_iou = sampled.map(round6);
            if method == IouMethod::Sampled {
                flags.push("iou_sampled".to_owned());
            }
            let union = gold_volume + candidate_volume - common_volume;
            let iou = if union > 0.0 {
                (common_volume / union).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (round6(iou), Some(shift))
        }
        Some(Overlap::Failed { reason }) => {
            flags.push(format!("boolean_failed: {reason}"));
            (0.0, None)
        }
        None => {
            flags.push("boolean_failed: no overlap".to_owned());
            (0.0, None)
        }
    };
    let measures = [
        (SolidCategory::Solid, 1.0, valid_share, round6(valid_share)),
        (
            SolidCategory::Volume,
            gold_volume,
            candidate_volume,
            closeness(gold_volume, candidate_volume),
        ),
        (
            SolidCategory::Area,
            gold_area,
            candidate_area,
            closeness(gold_area, candidate_area),
        ),
        (SolidCategory::Extents, 1.0, extents, extents),
        (
            SolidCategory::Iou,
            1.0,
            iou,
            round6((1.0 - (1.0 - iou) / IOU_SPAN).max(0.0)),
        ),
    ];
    let categories: Vec<SolidCategoryScore> = measures
        .into_iter()
        .map(|(category, gold, candidate, score)| SolidCategoryScore {
            category,
            weight: SOLID_WEIGHTS
                .iter()
                .find(|(c, _)| *c == category)
                .map_or(0.0, |(_, w)| *w),
            gold,
            candidate,
            score,
        })
        .collect();
    let score = round6(categories.iter().map(|c| c.weight * c.score).sum::<f64>());
    flags.sort();
    flags.dedup();
    SolidScoreReport {
        scorer_version: SOLID_SCORER_VERSION.to_owned(),
        score,
        zero_reason: None,
        message: None,
        categories,
        flags,
        alignment_shift: shift,
        sheet: None,
        iou_method,
        sampled_iou,
    }
}

/// Adds the sheet category: the candidate's `Layout1` against the gold's; a missing
/// `Layout1` scores 0 even when the views sit on another sheet.
fn add_sheet(report: &mut SolidScoreReport, gold: &SheetFacts, candidate_sheets: &[SheetFacts]) {
    let (sheet, value) = match candidate_sheets
        .iter()
        .find(|sheet| sheet.label == SHEET_NAME)
    {
        Some(candidate) => {
            let (sheet, value) = sheet::compare_sheets(gold, candidate);
            (Some(sheet), value)
        }
        None => {
            report.flags.push("no_layout1".to_owned());
            if candidate_sheets.iter().any(|sheet| !sheet.views.is_empty()) {
                report.flags.push("views_on_other_sheet".to_owned());
            }
            (None, 0.0)
        }
    };
    for category in &mut report.categories {
        category.weight *= 1.0 - SHEET_WEIGHT;
    }
    report.categories.push(SolidCategoryScore {
        category: SolidCategory::Sheet,
        weight: SHEET_WEIGHT,
        gold: 1.0,
        candidate: value,
        score: value,
    });
    report.sheet = sheet;
    report.score = round6(
        report
            .categories
            .iter()
            .map(|c| c.weight * c.score)
            .sum::<f64>(),
    );
    report.flags.sort();
    report.flags.dedup();
}

#[cfg(test)]
mod tests;
