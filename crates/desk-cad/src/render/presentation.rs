//! Presentation fidelity: how alike the trusted renders of the gold and the candidate look.
//!
//! Both drawings are rendered by this crate's own renderer (never by the app that wrote the
//! candidate), in one view fitted to their union, so an entity far from the drawing shrinks
//! everything and shows. Ink is every pixel darker than [`INK_LEVEL`]; the similarity is the
//! F1 of ink precision (candidate ink within [`TOLERANCE_PX`] of gold ink) and ink recall
//! (gold ink within the same distance of candidate ink). Identical drawings score exactly 1.

use super::{HEIGHT, View, WIDTH, svg_in_view, svg_to_pixmap};
use crate::model::Model;

/// A pixel with every channel below this is ink.
const INK_LEVEL: u8 = 160;
/// How far (Chebyshev, in pixels) ink may move and still count as in place.
const TOLERANCE_PX: usize = 3;

/// The presentation F1 in `[0, 1]`; 0 when either drawing cannot be rendered.
pub(crate) fn similarity(gold: &Model, candidate: &Model) -> f64 {
    let view = View::fit_both(gold, candidate);
    ink_f1(ink(gold, &view), ink(candidate, &view))
}

/// The presentation F1 of two drawings each fitted to its own extent (for drawings whose
/// coordinates are not comparable, e.g. sheets on pages of different sizes and scales).
pub(crate) fn similarity_each_fitted(gold: &Model, candidate: &Model) -> f64 {
    ink_f1(
        ink(gold, &View::fit(gold)),
        ink(candidate, &View::fit(candidate)),
    )
}

fn ink_f1(gold_ink: Option<Vec<bool>>, candidate_ink: Option<Vec<bool>>) -> f64 {
    let (Some(gold_ink), Some(candidate_ink)) = (gold_ink, candidate_ink) else {
        return 0.0;
    };
    let (n_gold, n_candidate) = (count(&gold_ink), count(&candidate_ink));
    if n_gold == 0 || n_candidate == 0 {
        return if n_gold == n_candidate { 1.0 } else { 0.0 };
    }
    let near_gold = dilate(&gold_ink);
    let near_candidate = dilate(&candidate_ink);
    let precision = overlap(&candidate_ink, &near_gold) as f64 / n_candidate as f64;
    let recall = overlap(&gold_ink, &near_candidate) as f64 / n_gold as f64;
    if precision + recall <= 0.0 {
        return 0.0;
    }
    let f1 = 2.0 * precision * recall / (precision + recall);
    (f1 * 1e6).round() / 1e6
}

fn ink(model: &Model, view: &View) -> Option<Vec<bool>> {
    let pixmap = svg_to_pixmap(&svg_in_view(model, view)).ok()?;
    Some(
        pixmap
            .pixels()
            .iter()
            .map(|p| p.red() < INK_LEVEL && p.green() < INK_LEVEL && p.blue() < INK_LEVEL)
            .collect(),
    )
}

fn count(mask: &[bool]) -> usize {
    mask.iter().filter(|v| **v).count()
}

fn overlap(a: &[bool], b: &[bool]) -> usize {
    a.iter().zip(b).filter(|(x, y)| **x && **y).count()
}

/// The mask grown by [`TOLERANCE_PX`] in every direction (a square window, separably), each
/// pass a running count of the set pixels in the window.
fn dilate(mask: &[bool]) -> Vec<bool> {
    let (w, h) = (WIDTH as usize, HEIGHT as usize);
    let mut rows = vec![false; mask.len()];
    for (row, out) in mask.chunks_exact(w).zip(rows.chunks_exact_mut(w)) {
        window_any(row, out);
    }
    // Down the columns: one running count per column, row by row.
    let row = |y: usize| rows.get(y * w..(y + 1) * w).unwrap_or_default();
    let mut counts: Vec<usize> = vec![0; w];
    for y in 0..TOLERANCE_PX.min(h) {
        for (count, set) in counts.iter_mut().zip(row(y)) {
            *count += usize::from(*set);
        }
    }
    let mut out = vec![false; mask.len()];
    for (y, out_row) in out.chunks_exact_mut(w).enumerate() {
        for (count, set) in counts.iter_mut().zip(row(y + TOLERANCE_PX)) {
            *count += usize::from(*set);
        }
        if y > TOLERANCE_PX {
            for (count, set) in counts.iter_mut().zip(row(y - TOLERANCE_PX - 1)) {
                *count -= usize::from(*set);
            }
        }
        for (slot, count) in out_row.iter_mut().zip(&counts) {
            *slot = *count > 0;
        }
    }
    out
}

/// For a line of `n` values, whether any value within [`TOLERANCE_PX`] of each is set.
fn window_any(values: &[bool], out: &mut [bool]) {
    let mut count = values.iter().take(TOLERANCE_PX).filter(|v| **v).count();
    for (idx, slot) in out.iter_mut().enumerate() {
        if values.get(idx + TOLERANCE_PX).copied().unwrap_or(false) {
            count += 1;
        }
        if idx > TOLERANCE_PX && values.get(idx - TOLERANCE_PX - 1).copied().unwrap_or(false) {
            count -= 1;
        }
        *slot = count > 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Entity, Geometry, Point};

    fn plate(offset: f64) -> Model {
        Model {
            entities: vec![
                Entity::new(Geometry::Polyline {
                    points: vec![
                        Point::new(0.0, 0.0),
                        Point::new(100.0, 0.0),
                        Point::new(100.0, 60.0),
                        Point::new(0.0, 60.0),
                    ],
                    closed: true,
                }),
                Entity::new(Geometry::Circle {
                    center: Point::new(30.0 + offset, 30.0),
                    r: 10.0,
                }),
            ],
        }
    }

    #[test]
    fn identical_drawings_score_one_and_a_moved_hole_less() {
        assert_eq!(similarity(&plate(0.0), &plate(0.0)), 1.0);
        let moved = similarity(&plate(0.0), &plate(20.0));
        assert!(moved < 0.95 && moved > 0.3, "{moved}");
        let mut dashed = plate(0.0);
        dashed.entities[1].linetype = Some("HIDDEN".to_owned());
        let hidden = similarity(&plate(0.0), &dashed);
        assert!(hidden < 1.0 && hidden > moved, "{hidden}");
        assert_eq!(similarity(&plate(0.0), &Model::default()), 0.0);
    }
}
