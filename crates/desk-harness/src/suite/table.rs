//! The summary as people read it: the terminal table and the per-drawing-type means that the
//! table and the report show.

use desk_cad::DrawingType;

use super::Summary;

/// A drawing type as the table and the report print it.
pub fn kind_name(kind: DrawingType) -> &'static str {
    match kind {
        DrawingType::TwoD => "2d",
        DrawingType::ThreeD => "3d",
    }
}

/// The mean score of one drawing type's rollouts.
#[derive(Debug, Clone, PartialEq)]
pub struct KindMean {
    /// `2d` or `3d`.
    pub kind: &'static str,
    /// Rollouts of this type that were not `infra_error`.
    pub n_scored: usize,
    /// Their mean score (0 when there are none).
    pub mean_score: f64,
}

/// The mean score per drawing type present in `summary`, 2D first.
pub fn kind_means(summary: &Summary) -> Vec<KindMean> {
    [DrawingType::TwoD, DrawingType::ThreeD]
        .into_iter()
        .filter(|kind| summary.rollouts.iter().any(|row| row.drawing_type == *kind))
        .map(|kind| {
            let scores: Vec<f64> = summary
                .rollouts
                .iter()
                .filter(|row| row.drawing_type == kind && !row.infra_error)
                .map(|row| row.score)
                .collect();
            KindMean {
                kind: kind_name(kind),
                n_scored: scores.len(),
                mean_score: if scores.is_empty() {
                    0.0
                } else {
                    scores.iter().sum::<f64>() / scores.len() as f64
                },
            }
        })
        .collect()
}

/// The summary as a fixed-width terminal table.
pub fn format_table(summary: &Summary) -> String {
    let mut out = format!(
        "{:<9} {:<4} {:<3} {:<5} {:<10} {:<24} {:>7} {:>7} {:>5} {:>8}\n",
        "task", "kind", "lvl", "split", "agent", "status", "score", "actions", "turns", "wall s"
    );
    for row in &summary.rollouts {
        out.push_str(&format!(
            "{:<9} {:<4} {:<3} {:<5} {:<10} {:<24} {:>7.4} {:>7} {:>5} {:>8.1}\n",
            row.task_id,
            kind_name(row.drawing_type),
            format!("{:?}", row.level),
            format!("{:?}", row.split).to_ascii_lowercase(),
            row.agent.agent,
            row.status.as_str(),
            row.score,
            row.actions_used,
            row.n_turns,
            row.wall_time_ms as f64 / 1000.0
        ));
    }
    out.push_str(&format!(
        "{} rollouts, {} done, {} infra_error (not scored), mean score {:.4}, total {:.1} s \
         ({}, {})\n",
        summary.n_rollouts,
        summary.n_done,
        summary.n_infra_error,
        summary.mean_score,
        summary.total_ms as f64 / 1000.0,
        summary.contract_version,
        summary.corpus_version
    ));
    for kind in kind_means(summary) {
        out.push_str(&format!(
            "{}: {} scored, mean score {:.4}\n",
            kind.kind, kind.n_scored, kind.mean_score
        ));
    }
    out
}
