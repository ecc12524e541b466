//! The 3D judge's `sheet` category: the candidate's `Layout1` TechDraw page against the
//! gold's, from the facts `solid/fcstd_read.py` reads out of `Document.xml` and the drawing
//! `solid/sheet_draw.py` recomputes from them (never by opening the file as a document): the
//! dimensions' values and the trusted render. The parts and their weights are
//! [`SHEET_PARTS`]; `arrangement` and `scale` are in [`layout`], `presentation` in [`render`].

use serde::{Deserialize, Serialize};

use crate::solid::{SheetFacts, SheetView};

pub(crate) mod layout;
pub(crate) mod render;

pub use render::render_sheet_png;

/// A score rounded to six decimals, as every report carries it.
pub(crate) fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

/// Relative tolerance of a dimension's value (0.5 %), with [`DIMENSION_TOLERANCE_MM`] as its
/// floor.
pub const DIMENSION_TOLERANCE: f64 = 0.005;
/// Absolute floor of a dimension value's tolerance, in mm (or degrees).
pub const DIMENSION_TOLERANCE_MM: f64 = 0.01;

/// Weight of the sheet category when the gold has a `Layout1` sheet; the part categories
/// share the rest in proportion to the part categories' weights (`score3d::SOLID_WEIGHTS`).
pub const SHEET_WEIGHT: f64 = 0.4;

/// The sheet's parts and their weights within [`SHEET_WEIGHT`] (a part the gold does not
/// have, e.g. hatches without a section, is left out and the rest renormalized).
///
/// `arrangement` weighs 0.10 (since v6; 0.02 before): the FreeCAD oracle now places each view
/// in the cell of the gold's grid (`desk-harness` `oracle/freecad/sheet.rs`), so a page in the
/// shown arrangement is reachable through the GUI, and views exchanged or stacked cost 0.04 of
/// the total. The 0.08 came from `views` (0.36) and `dimensions` (0.26).
///
/// `presentation` (the ink F1 of the trusted renders) weighs 0.08: it sees what the other
/// parts list (edges, hatches, dimension texts, notes) where they are drawn, so it overlaps
/// them. Since v6 seam edges (between two faces of one surface, e.g. the faces of fused
/// primitives) are not drawn in either render (`solid/sheet_draw.py`, `refined`).
///
/// `callouts` (since v7, its 0.04 from `views`): the matched views' section symbols, detail
/// references, centre lines and cosmetic edges ([`callouts`]); scored on every sheet, 1.0 when
/// neither gold nor candidate has any.
pub const SHEET_PARTS: [(&str, f64); 8] = [
    ("views", 0.28),
    ("arrangement", 0.10),
    ("scale", 0.08),
    ("dimensions", 0.22),
    ("notes", 0.10),
    ("hatches", 0.10),
    ("presentation", 0.08),
    ("callouts", 0.04),
];

/// How the candidate's `Layout1` compares with the gold's: an F1 per kind of item, and the
/// matched views' arrangement and scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SheetScore {
    /// Views matched on kind and direction (within 0.5°).
    pub views_f1: f64,
    /// Fraction of the matched views in place relative to the others ([`layout::arrangement`];
    /// none before scorer v4 or when the gold has fewer than two placed views).
    #[serde(default)]
    pub arrangement: Option<f64>,
    /// Fraction of the matched views at the sheet's common scale ratio to the gold
    /// ([`layout::scale`]; none before scorer v4).
    #[serde(default)]
    pub scale: Option<f64>,
    /// Dimensions matched on type, view (the gold view the candidate's view matched) and
    /// value (within [`DIMENSION_TOLERANCE`], when the judge measured the gold's).
    pub dimensions_f1: Option<f64>,
    /// Notes matched on text.
    pub notes_f1: Option<f64>,
    /// Hatches matched by count.
    pub hatches_f1: Option<f64>,
    /// The matched views' trusted renders compared by ink F1 ([`render`]); none before
    /// scorer v5 or when the gold's sheet was not drawn.
    #[serde(default)]
    pub presentation: Option<f64>,
    /// The matched views' callouts compared by F1 ([`callouts`]); none before scorer v7.
    #[serde(default)]
    pub callouts: Option<f64>,
}

fn f1(matched: usize, n_gold: usize, n_candidate: usize) -> f64 {
    if n_gold + n_candidate == 0 {
        return 1.0;
    }
    round6(2.0 * matched as f64 / (n_gold + n_candidate) as f64)
}

/// A dimension as the sheet compares it: type, gold view, value.
struct Dimension<'a>(&'a str, Option<usize>, Option<f64>);

impl Dimension<'_> {
    /// Same type and view; the same value within the tolerance when the gold's (`self`) was
    /// measured.
    fn matches(&self, candidate: &Self) -> bool {
        self.0 == candidate.0
            && self.1 == candidate.1
            && match (self.2, candidate.2) {
                (None, _) => true,
                (Some(gold), Some(value)) => {
                    (value - gold).abs()
                        <= (DIMENSION_TOLERANCE * gold.abs()).max(DIMENSION_TOLERANCE_MM)
                }
                (Some(_), None) => false,
            }
    }
}

/// Matched items of two multisets.
fn common_count<T: PartialEq>(gold: &[T], candidate: &[T]) -> usize {
    common_by(gold, candidate, |g, c| g == c)
}

/// Items of `gold` matched 1:1, in order, to the first unused item of `candidate` that
/// `matches(gold item, candidate item)`.
fn common_by<T>(gold: &[T], candidate: &[T], matches: impl Fn(&T, &T) -> bool) -> usize {
    let mut used = vec![false; candidate.len()];
    gold.iter()
        .filter(|item| {
            let found =
                (0..candidate.len()).find(|&idx| !used[idx] && matches(item, &candidate[idx]));
            found.map(|idx| used[idx] = true).is_some()
        })
        .count()
}

fn unit(v: [f64; 3]) -> Option<[f64; 3]> {
    let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    (len > 1e-9).then(|| [v[0] / len, v[1] / len, v[2] / len])
}

/// Views matched 1:1 on kind and direction within 0.5°, in gold order: (gold index,
/// candidate index).
fn matched_views(gold: &SheetFacts, candidate: &SheetFacts) -> Vec<(usize, usize)> {
    let cos_tol = 0.5f64.to_radians().cos();
    let mut used = vec![false; candidate.views.len()];
    let mut matched = Vec::new();
    for (gold_idx, view) in gold.views.iter().enumerate() {
        let Some(g) = unit(view.direction) else {
            continue;
        };
        let found = candidate.views.iter().enumerate().find(|(idx, other)| {
            !used[*idx]
                && other.kind == view.kind
                && unit(other.direction)
                    .is_some_and(|c| g[0] * c[0] + g[1] * c[1] + g[2] * c[2] >= cos_tol)
        });
        if let Some((idx, _)) = found {
            used[idx] = true;
            matched.push((gold_idx, idx));
        }
    }
    matched
}

/// A callout as the sheet compares it: the gold view it sits on (a candidate view counts as the
/// gold view it matched; an unmatched one as none, so its callouts match nothing) and what it
/// is: a section symbol or detail reference (trimmed, compared case-sensitively), or one
/// centre line or cosmetic edge.
#[derive(PartialEq)]
enum Callout<'a> {
    Symbol(Option<usize>, &'a str),
    CentreLine(Option<usize>),
    CosmeticEdge(Option<usize>),
}

fn view_callouts<'a>(view: &'a SheetView, at: Option<usize>, out: &mut Vec<Callout<'a>>) {
    if let Some(symbol) = view.symbol.as_deref().map(str::trim)
        && !symbol.is_empty()
    {
        out.push(Callout::Symbol(at, symbol));
    }
    out.extend((0..view.centre_lines).map(|_| Callout::CentreLine(at)));
    out.extend((0..view.cosmetic_edges).map(|_| Callout::CosmeticEdge(at)));
}

/// F1 of the callouts of the two sheets, each on its view: a section's symbol or a detail's
/// reference equal on the matched view, and each matched view's centre lines and cosmetic
/// edges counted (so a missing or extra one loses); 1.0 when neither sheet has any.
pub(crate) fn callouts(
    gold: &SheetFacts,
    candidate: &SheetFacts,
    matched: &[(usize, usize)],
) -> f64 {
    let mut gold_items = Vec::new();
    for (idx, view) in gold.views.iter().enumerate() {
        view_callouts(view, Some(idx), &mut gold_items);
    }
    let mut candidate_items = Vec::new();
    for (idx, view) in candidate.views.iter().enumerate() {
        let at = matched.iter().find(|(_, c)| *c == idx).map(|(g, _)| *g);
        view_callouts(view, at, &mut candidate_items);
    }
    // Every gold callout names its view, so an unmatched candidate view's match nothing.
    f1(
        common_count(&gold_items, &candidate_items),
        gold_items.len(),
        candidate_items.len(),
    )
}

pub(super) fn compare_sheets(gold: &SheetFacts, candidate: &SheetFacts) -> (SheetScore, f64) {
    let matched = matched_views(gold, candidate);
    let views_f1 = f1(matched.len(), gold.views.len(), candidate.views.len());
    let arrangement = layout::arrangement(gold, candidate, &matched).map(round6);
    let scale = layout::scale(gold, candidate, &matched).map(round6);
    let part = |n_gold: usize, value: f64| (n_gold > 0).then_some(value);
    // A dimension is its type, the gold view it sits on (a candidate view counts as the
    // gold view it matched; an unmatched or missing view as none) and its value.
    let gold_dimensions: Vec<Dimension<'_>> = gold
        .dimensions
        .iter()
        .map(|d| Dimension(d.kind.as_str(), d.view, d.value))
        .collect();
    let candidate_dimensions: Vec<Dimension<'_>> = candidate
        .dimensions
        .iter()
        .map(|d| {
            let view = d
                .view
                .and_then(|cv| matched.iter().find(|(_, c)| *c == cv).map(|(g, _)| *g));
            Dimension(d.kind.as_str(), view, d.value)
        })
        .collect();
    let dimensions_f1 = part(
        gold.dimensions.len(),
        f1(
            common_by(&gold_dimensions, &candidate_dimensions, Dimension::matches),
            gold.dimensions.len(),
            candidate.dimensions.len(),
        ),
    );
    let notes_f1 = part(
        gold.notes.len(),
        f1(
            common_count(&gold.notes, &candidate.notes),
            gold.notes.len(),
            candidate.notes.len(),
        ),
    );
    let hatches_f1 = part(
        gold.hatches,
        f1(
            gold.hatches.min(candidate.hatches),
            gold.hatches,
            candidate.hatches,
        ),
    );
    let presentation = render::presentation(gold, candidate, &matched).map(round6);
    let callouts = Some(callouts(gold, candidate, &matched));
    let values = [
        Some(views_f1),
        arrangement,
        scale,
        dimensions_f1,
        notes_f1,
        hatches_f1,
        presentation,
        callouts,
    ];
    let weighted: Vec<(Option<f64>, f64)> = values
        .into_iter()
        .zip(SHEET_PARTS.iter().map(|(_, w)| *w))
        .collect();
    let total: f64 = weighted
        .iter()
        .filter(|(v, _)| v.is_some())
        .map(|(_, w)| w)
        .sum();
    let value: f64 = weighted.iter().filter_map(|(v, w)| v.map(|v| v * w)).sum();
    let score = SheetScore {
        views_f1,
        arrangement,
        scale,
        dimensions_f1,
        notes_f1,
        hatches_f1,
        presentation,
        callouts,
    };
    (score, round6(value / total))
}
