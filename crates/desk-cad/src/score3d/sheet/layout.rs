//! The sheet's `arrangement` and `scale` parts: where the matched views sit relative to one
//! another, and whether they keep the gold's relative scales.
//!
//! The task fixes neither the page size nor the page scale (the gold is an A3 page at 1:1,
//! FreeCAD's default page an A4 and the recipe types 1:2), so both rules are relative:
//! - **arrangement**: for every pair of matched views and each page axis where the gold's two
//!   views are apart by more than [`BAND`] of that page dimension (one left of the other, or
//!   one above the other), the candidate's pair must be apart the same way by more than
//!   [`BAND`] of its own page dimension. A view is in place when all its pairs hold; the score
//!   is the fraction of matched views in place. Views the gold aligns on an axis (one column,
//!   one row) are not checked on that axis, so only the order of rows and columns is judged,
//!   not how straight they are. Views stacked on one point are apart on no axis: none is in
//!   place.
//! - **scale**: each matched view's stored scale over its gold view's; the ratio most views
//!   share (within [`SCALE_TOLERANCE`], the first gold view's on a tie) is the sheet's, and a
//!   view is in scale when its ratio is within [`SCALE_TOLERANCE`] of it. A sheet drawn at
//!   another common scale keeps full marks; one view rescaled does not.

use crate::solid::SheetFacts;

/// Fraction of the page's width (height) two views must be apart to count as left/right
/// (above/below) of each other.
pub(crate) const BAND: f64 = 0.05;
/// Relative tolerance of a view's scale ratio.
pub(crate) const SCALE_TOLERANCE: f64 = 0.01;
/// The page assumed when a template does not store its size: FreeCAD's default A4 landscape.
const DEFAULT_PAGE: [f64; 2] = [297.0, 210.0];

/// -1, 0 or 1: how `b` lies from `a` along `axis`, 0 within the band.
fn relation(a: [f64; 2], b: [f64; 2], axis: usize, page: [f64; 2]) -> i8 {
    let delta = b[axis] - a[axis];
    if delta.abs() <= BAND * page[axis] {
        0
    } else if delta > 0.0 {
        1
    } else {
        -1
    }
}

/// Fraction of the matched views `(gold index, candidate index)` in place; `None` when fewer
/// than two gold views store a position (nothing to arrange) or none matched.
pub(crate) fn arrangement(
    gold: &SheetFacts,
    candidate: &SheetFacts,
    matched: &[(usize, usize)],
) -> Option<f64> {
    if gold.views.iter().filter(|v| v.position.is_some()).count() < 2 {
        return None;
    }
    if matched.is_empty() {
        return Some(0.0);
    }
    let gold_page = gold.page_size.unwrap_or(DEFAULT_PAGE);
    let candidate_page = candidate.page_size.unwrap_or(DEFAULT_PAGE);
    let position = |facts: &SheetFacts, idx: usize| facts.views.get(idx).and_then(|v| v.position);
    let in_place = matched
        .iter()
        .filter(|(gold_a, cand_a)| {
            let Some(ga) = position(gold, *gold_a) else {
                // Nothing to hold the candidate to.
                return true;
            };
            let ca = position(candidate, *cand_a);
            matched
                .iter()
                .filter(|(gold_b, _)| gold_b != gold_a)
                .all(|(gold_b, cand_b)| {
                    let Some(gb) = position(gold, *gold_b) else {
                        return true;
                    };
                    (0..2).all(|axis| {
                        let wanted = relation(ga, gb, axis, gold_page);
                        wanted == 0
                            || ca
                                .zip(position(candidate, *cand_b))
                                .is_some_and(|(ca, cb)| {
                                    relation(ca, cb, axis, candidate_page) == wanted
                                })
                    })
                })
        })
        .count();
    Some(in_place as f64 / matched.len() as f64)
}

/// Fraction of the matched views in the sheet's common scale ratio; `None` when no gold view
/// stores a scale.
pub(crate) fn scale(
    gold: &SheetFacts,
    candidate: &SheetFacts,
    matched: &[(usize, usize)],
) -> Option<f64> {
    let scale_of = |facts: &SheetFacts, idx: usize| {
        facts
            .views
            .get(idx)
            .and_then(|v| v.scale)
            .filter(|s| s.is_finite() && *s > 0.0)
    };
    if !gold.views.iter().any(|v| v.scale.is_some_and(|s| s > 0.0)) {
        return None;
    }
    if matched.is_empty() {
        return Some(0.0);
    }
    // Ratios of the views both sides store a scale for; a view without one is out of scale.
    let ratios: Vec<Option<f64>> = matched
        .iter()
        .map(|(g, c)| Some(scale_of(candidate, *c)? / scale_of(gold, *g)?))
        .collect();
    let near = |a: f64, b: f64| (a - b).abs() <= SCALE_TOLERANCE * b;
    let count_near = |r: f64| ratios.iter().flatten().filter(|o| near(**o, r)).count();
    let mut common: Option<(f64, usize)> = None;
    for ratio in ratios.iter().flatten() {
        let n = count_near(*ratio);
        if common.is_none_or(|(_, best)| n > best) {
            common = Some((*ratio, n));
        }
    }
    let in_scale = common.map_or(0, |(_, n)| n);
    Some(in_scale as f64 / matched.len() as f64)
}
