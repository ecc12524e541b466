//! Deterministic greedy 1:1 matching: every (gold, candidate) pair with a cost, taken in order
//! of (cost, gold index, candidate index), skipping items already used.

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
