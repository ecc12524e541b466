//! Similarity scoring of a candidate DXF against a gold drawing.
//!
//! # Zero rules
//! The score is 0 with a [`ZeroReason`] when the candidate file is missing, unreadable (not a
//! DXF, or the parser fails), empty (no scorable model-space entity), or contains a raster
//! IMAGE, an OLE object (OLEFRAME/OLE2FRAME), an underlay (PDF/DWF/DGN) or an external
//! reference (xref block or XREF object).
//!
//! # Categories
//! Entities are normalized into items, then matched 1:1 per category with a deterministic
//! greedy matcher (lowest cost first):
//! - **geometry**: straight segments (lines, and every polyline edge, so a rectangle drawn as
//!   four lines equals one closed polyline; zero-length edges dropped; direction ignored),
//!   circles (center and radius), arcs (center, radius, start and end points).
//! - **dimensions**: linear dimensions match on kind (horizontal, vertical, aligned), the two
//!   extension-line origins (either order) and the measured value; radius and diameter
//!   dimensions on kind, center and value; angular dimensions on vertex, rays and angle.
//!   Where the dimension line sits is not matched (it shows in presentation).
//! - **annotations**: text (TEXT and MTEXT) by its lines and insertion point; leaders by their
//!   vertices in order.
//! - **hatching**: pattern, scale, angle and boundary loops.
//! - **layers**, **linetypes**: only when the gold uses a layer other than `0` (a linetype
//!   other than continuous): a matched pair from the categories above counts when both sit on
//!   the same layer (are drawn in the same effective linetype).
//! - **presentation**: the ink F1 of trusted renders of gold and candidate
//!   (`render::presentation`).
//!
//! # Tolerances
//! Points and radii: [`POINT_TOL_MM`] (0.05 mm). Dimension values: [`VALUE_TOL_REL`] (0.5 %)
//! of the gold value, at least 0.05 mm (0.5° for angles). Text insertion points and leader
//! vertices: [`TEXT_TOL_MM`] (0.5 mm). Angles: [`ANGLE_TOL_DEG`]; hatch scales:
//! [`SCALE_TOL_REL`].
//!
//! # Weights
//! Per category F1 = 2·matched / (gold + candidate). Overall = weighted mean of the F1 of the
//! categories the gold contains ([`WEIGHTS`]: geometry 0.40, dimensions 0.20, annotations
//! 0.10, layers 0.10, linetypes 0.05, hatching 0.05, presentation 0.10), renormalized over
//! the included categories. Candidate items in a category the gold lacks are ignored for that
//! category and reported as a flag. `docs/scoring.md` has the full rules.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::category::{
    ANGLE_TOL_DEG, Category, POINT_TOL_MM, SCALE_TOL_REL, TEXT_TOL_MM, VALUE_TOL_REL,
};
use crate::dxf_io::{Forbidden, read_dxf_bytes};
pub(crate) use crate::matching::{CategoryMatch, match_by_category};
use crate::model::Model;
use crate::normalize::items;

/// Version of these scoring rules.
pub const SCORER_VERSION: &str = "deskbroker-cad-scorer-v2";
/// Category weights before renormalization.
pub const WEIGHTS: [(Category, f64); 7] = [
    (Category::Geometry, 0.40),
    (Category::Dimensions, 0.20),
    (Category::Annotations, 0.10),
    (Category::Layers, 0.10),
    (Category::Linetypes, 0.05),
    (Category::Hatching, 0.05),
    (Category::Presentation, 0.10),
];

/// Why a submission scored zero outright.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroReason {
    /// No file at the candidate path.
    Missing,
    /// Not a DXF, or the parser failed.
    Unreadable,
    /// No scorable model-space entity.
    Empty,
    /// Contains a raster image.
    Raster,
    /// Contains an OLE object.
    Ole,
    /// Contains an underlay.
    Underlay,
    /// Contains an external reference.
    Xref,
}

/// One category's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CategoryScore {
    /// The category.
    pub category: Category,
    /// Whether the gold contains this category (otherwise it does not count).
    pub included: bool,
    /// Weight after renormalization (0 when excluded).
    pub weight: f64,
    /// Gold item count.
    pub gold: usize,
    /// Candidate item count.
    pub candidate: usize,
    /// Matched pairs.
    pub matched: usize,
    /// F1 in [0, 1].
    pub f1: f64,
}

/// The scorer's verdict on one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreReport {
    /// [`SCORER_VERSION`].
    pub scorer_version: String,
    /// Overall similarity in [0, 1].
    pub score: f64,
    /// Set when the submission scored zero by rule.
    pub zero_reason: Option<ZeroReason>,
    /// Human-readable detail for a zero.
    pub message: Option<String>,
    /// Per-category breakdown (empty for zero-rule reports).
    pub categories: Vec<CategoryScore>,
    /// Sorted, deduplicated machine-readable flags.
    pub flags: Vec<String>,
    /// Reader notes (skipped entities and the like).
    pub notes: Vec<String>,
}

impl ScoreReport {
    pub(crate) fn zero(reason: ZeroReason, message: String, notes: Vec<String>) -> Self {
        Self {
            scorer_version: SCORER_VERSION.to_owned(),
            score: 0.0,
            zero_reason: Some(reason),
            message: Some(message),
            categories: Vec::new(),
            flags: Vec::new(),
            notes,
        }
    }
}

/// Scores the DXF at `candidate_path` against `gold`. Never fails: problems are zeros.
pub fn score(gold: &Model, candidate_path: &Path) -> ScoreReport {
    let bytes = match std::fs::read(candidate_path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return ScoreReport::zero(ZeroReason::Missing, "no candidate file".to_owned(), vec![]);
        }
        Err(err) => {
            return ScoreReport::zero(
                ZeroReason::Unreadable,
                format!("failed to read candidate: {err}"),
                vec![],
            );
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return ScoreReport::zero(
            ZeroReason::Empty,
            "candidate file is empty".to_owned(),
            vec![],
        );
    }
    if !looks_like_dxf(&bytes) {
        return ScoreReport::zero(
            ZeroReason::Unreadable,
            "candidate is not a DXF".to_owned(),
            vec![],
        );
    }
    let outcome = match read_dxf_bytes(&bytes) {
        Ok(outcome) => outcome,
        Err(message) => {
            return ScoreReport::zero(
                ZeroReason::Unreadable,
                format!("failed to parse candidate dxf: {message}"),
                vec![],
            );
        }
    };
    if let Some(first) = outcome.forbidden.first() {
        let reason = match first {
            Forbidden::Raster => ZeroReason::Raster,
            Forbidden::Ole => ZeroReason::Ole,
            Forbidden::Underlay => ZeroReason::Underlay,
            Forbidden::Xref => ZeroReason::Xref,
        };
        return ScoreReport::zero(
            reason,
            format!(
                "candidate contains forbidden content: {:?}",
                outcome.forbidden
            ),
            outcome.notes,
        );
    }
    if outcome.model.entities.is_empty() {
        return ScoreReport::zero(
            ZeroReason::Empty,
            "candidate has no scorable model-space entity".to_owned(),
            outcome.notes,
        );
    }
    let mut report = score_model(gold, &outcome.model);
    report.notes = outcome.notes;
    report
}

/// Whether `bytes` plausibly hold an ASCII or binary DXF.
fn looks_like_dxf(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"AutoCAD Binary DXF") {
        return true;
    }
    let head = &bytes[..bytes.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().map(str::trim);
    matches!((lines.next(), lines.next()), (Some("0"), Some("SECTION")))
        || text.lines().take(40).any(|l| l.trim() == "SECTION")
}

fn f1(matched: usize, n_gold: usize, n_candidate: usize) -> f64 {
    if n_gold + n_candidate == 0 {
        return 0.0;
    }
    2.0 * matched as f64 / (n_gold + n_candidate) as f64
}

/// The categories whose items are matched 1:1 (layers are judged on their matched pairs).
pub(crate) const MATCHED_CATEGORIES: [Category; 4] = [
    Category::Geometry,
    Category::Dimensions,
    Category::Annotations,
    Category::Hatching,
];

/// Scores an already-read candidate model against `gold`.
pub fn score_model(gold: &Model, candidate: &Model) -> ScoreReport {
    let gold_items = items(gold);
    let candidate_items = items(candidate);
    let mut categories = Vec::new();
    let mut flags = Vec::new();
    let (mut n_layer_correct, mut n_linetype_correct) = (0, 0);
    for category in MATCHED_CATEGORIES {
        let CategoryMatch {
            gold: gold_of,
            candidate: candidate_of,
            pairs,
        } = match_by_category(category, &gold_items, &candidate_items, |placed| {
            &placed.item
        });
        for (g, c) in &pairs {
            n_layer_correct += usize::from(gold_of[*g].layer == candidate_of[*c].layer);
            n_linetype_correct += usize::from(gold_of[*g].linetype == candidate_of[*c].linetype);
        }
        let included = !gold_of.is_empty();
        if !included && !candidate_of.is_empty() {
            flags.push(format!("ignored_extra_{category:?}").to_ascii_lowercase());
        }
        categories.push(counted(
            category,
            included,
            pairs.len(),
            gold_of.len(),
            candidate_of.len(),
        ));
    }
    let (n_gold, n_candidate) = (gold_items.len(), candidate_items.len());
    categories.push(counted(
        Category::Layers,
        gold.uses_named_layers(),
        n_layer_correct,
        n_gold,
        n_candidate,
    ));
    categories.push(counted(
        Category::Linetypes,
        gold.uses_linetypes(),
        n_linetype_correct,
        n_gold,
        n_candidate,
    ));
    categories.push(CategoryScore {
        category: Category::Presentation,
        included: !gold.entities.is_empty(),
        weight: 0.0,
        gold: gold.entities.len(),
        candidate: candidate.entities.len(),
        matched: 0,
        f1: crate::render::presentation::similarity(gold, candidate),
    });
    let total_weight: f64 = categories
        .iter()
        .filter(|c| c.included)
        .map(|c| category_weight(c.category))
        .sum();
    let mut overall = 0.0;
    for category in &mut categories {
        if category.included && total_weight > 0.0 {
            category.weight = category_weight(category.category) / total_weight;
            overall += category.weight * category.f1;
        }
    }
    if candidate_items.is_empty() {
        flags.push("no_scorable_items".to_owned());
    }
    flags.sort();
    flags.dedup();
    ScoreReport {
        scorer_version: SCORER_VERSION.to_owned(),
        // Rounded so renormalized weights' float noise never shows (0.9999999999999997).
        score: ((overall * 1e9).round() / 1e9).clamp(0.0, 1.0),
        zero_reason: None,
        message: None,
        categories,
        flags,
        notes: Vec::new(),
    }
}

/// A category scored by F1 over counted items.
fn counted(
    category: Category,
    included: bool,
    matched: usize,
    n_gold: usize,
    n_candidate: usize,
) -> CategoryScore {
    CategoryScore {
        category,
        included,
        weight: 0.0,
        gold: n_gold,
        candidate: n_candidate,
        matched,
        f1: f1(matched, n_gold, n_candidate),
    }
}

fn category_weight(category: Category) -> f64 {
    WEIGHTS
        .iter()
        .find(|(c, _)| *c == category)
        .map_or(0.0, |(_, w)| *w)
}
