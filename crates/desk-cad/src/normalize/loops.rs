//! Hatch boundary loops: how far two closed loops are, as sets matched 1:1.

use crate::category::POINT_TOL_MM;
use crate::model::Point;

/// How far apart two closed loops are: the largest vertex distance under the best cyclic
/// shift, in either direction; `None` when their vertex counts differ.
pub(super) fn loop_cost(gold: &[Point], candidate: &[Point]) -> Option<f64> {
    let n = gold.len();
    if n != candidate.len() || n == 0 {
        return None;
    }
    let mut best = f64::INFINITY;
    for shift in 0..n {
        for reversed in [false, true] {
            let cost = (0..n)
                .map(|idx| {
                    let other = if reversed {
                        candidate[(shift + n - idx) % n]
                    } else {
                        candidate[(shift + idx) % n]
                    };
                    gold[idx].dist(other)
                })
                .fold(0.0, f64::max);
            best = best.min(cost);
        }
    }
    Some(best)
}

/// Loops matched 1:1 in any order: the worst matched cost, `None` unless all match.
pub(super) fn loops_cost(gold: &[Vec<Point>], candidate: &[Vec<Point>]) -> Option<f64> {
    if gold.len() != candidate.len() {
        return None;
    }
    let pairs = crate::greedy::greedy_match(gold.len(), candidate.len(), |g, c| {
        loop_cost(&gold[g], &candidate[c]).filter(|cost| *cost <= POINT_TOL_MM)
    });
    (pairs.len() == gold.len()).then(|| {
        pairs
            .iter()
            .filter_map(|(g, c)| loop_cost(&gold[*g], &candidate[*c]))
            .fold(0.0, f64::max)
    })
}
