//! Matching of gold items to candidate items, category by category, with the greedy matcher
//! (`greedy.rs`): every (gold, candidate) pair within tolerance gets a cost; pairs are taken
//! in order of (cost, gold index, candidate index), skipping items already used. With the
//! tight tolerances the scorer uses, ambiguous pairs are rare and greedy equals optimal in
//! practice.
//! [`match_by_category`] is the one matching the score and the overlay use.

use crate::category::Category;
use crate::greedy::greedy_match;
use crate::normalize::{Item, item_cost};

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
