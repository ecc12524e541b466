//! Deterministic greedy 1:1 matching of gold items to candidate items.
//!
//! Every (gold, candidate) pair within tolerance gets a cost; pairs are taken in order of
//! (cost, gold index, candidate index), skipping items already used. With the tight
//! tolerances the scorer uses, ambiguous pairs are rare and greedy equals optimal in practice.
//! [`match_by_category`] is the one matching the score and the overlay use.

use crate::normalize::{Item, item_cost};
use crate::score::Category;

/// Returns matched `(gold_idx, candidate_idx)` pairs sorted by gold index.
pub(crate) fn greedy_match(
    n_gold: usize,
    n_candidate: usize,
    cost: impl Fn(usize, usize) -> Option<f64>,
) -> Vec<(usize, usize)> {
    let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
    for gold_idx in 0..n_gold {
        for candidate_idx in 0..n_candidate {
            if let Some(c) = cost(gold_idx, candidate_idx) {
                pairs.push((c, gold_idx, candidate_idx));
            }
        }
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut gold_used = vec![false; n_gold];
    let mut candidate_used = vec![false; n_candidate];
    let mut matched = Vec::new();
    for (_, gold_idx, candidate_idx) in pairs {
        if !gold_used[gold_idx] && !candidate_used[candidate_idx] {
            gold_used[gold_idx] = true;
            candidate_used[candidate_idx] = true;
            matched.push((gold_idx, candidate_idx));
        }
    }
    matched.sort();
    matched
}

/// One category's matching: the gold's and the candidate's items of the category, in their
/// order, and the matched pairs as indices into those two lists.
pub(crate) struct CategoryMatch<'a, T> {
    /// The gold's items of the category.
    pub(crate) gold: Vec<&'a T>,
    /// The candidate's items of the category.
    pub(crate) candidate: Vec<&'a T>,
    /// Matched `(gold, candidate)` indices.
    pub(crate) pairs: Vec<(usize, usize)>,
}

/// Matches the items of `category` in `gold` and `candidate` (each element carrying an item,
/// reached through `item`) with the scorer's greedy matcher: the one matching the score, the
/// overlay and anything else that shows what was matched use.
pub(crate) fn match_by_category<'a, T>(
    category: Category,
    gold: &'a [T],
    candidate: &'a [T],
    item: impl Fn(&T) -> &Item,
) -> CategoryMatch<'a, T> {
    let gold: Vec<&T> = gold
        .iter()
        .filter(|element| item(element).category() == category)
        .collect();
    let candidate: Vec<&T> = candidate
        .iter()
        .filter(|element| item(element).category() == category)
        .collect();
    let pairs = greedy_match(gold.len(), candidate.len(), |g, c| {
        item_cost(item(gold[g]), item(candidate[c]))
    });
    CategoryMatch {
        gold,
        candidate,
        pairs,
    }
}
