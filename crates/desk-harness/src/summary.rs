//! `summary.json` and how people read it: one row per rollout, the run's means, the terminal
//! table and the per-drawing-type means that the table and the report show.

use std::path::{Path, PathBuf};

use desk_cad::DrawingType;
use serde::{Deserialize, Serialize};

use crate::agent::AgentInfo;
use crate::plan::RunInfo;
use crate::record::{ROLLOUT_FILE, RolloutRecord, RolloutStatus};

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Task id.
    pub task_id: String,
    /// `2d` or `3d` (results written before 3D tasks existed are `2d`).
    #[serde(default = "two_d")]
    pub drawing_type: desk_cad::DrawingType,
    /// Level.
    pub level: desk_cad::Level,
    /// Split.
    pub split: desk_cad::Split,
    /// Agent.
    pub agent: AgentInfo,
    /// How it ended.
    pub status: RolloutStatus,
    /// Ended by the infrastructure; excluded from the mean score.
    #[serde(default)]
    pub infra_error: bool,
    /// Score in [0, 1].
    pub score: f64,
    /// Actions executed.
    pub actions_used: u64,
    /// Turns.
    pub n_turns: u32,
    /// Wall time from the handoff, ms.
    pub wall_time_ms: u64,
    /// Whole rollout, ms.
    pub total_ms: u64,
    /// The rollout's record, relative to the out directory.
    pub record: String,
    /// The workspace policy the rollout ran under (see `RolloutRecord::policy_sha256`).
    #[serde(default)]
    pub policy_sha256: Option<String>,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Benchmark contract version.
    pub contract_version: String,
    /// Corpus version.
    pub corpus_version: String,
    /// Scorer version.
    pub scorer_version: String,
    /// deskbroker version.
    pub broker_version: String,
    /// App, X server, window manager, OS and deskbroker versions of the run.
    #[serde(default)]
    pub versions: crate::versions::SoftwareVersions,
    /// Rollouts run.
    pub n_rollouts: usize,
    /// Rollouts ended by the infrastructure (`infra_error`), not counted in the mean.
    #[serde(default)]
    pub n_infra_error: usize,
    /// Mean score over the rollouts that were not `infra_error` (0 when there are none).
    pub mean_score: f64,
    /// Rollouts that ended with `done`.
    pub n_done: usize,
    /// Milliseconds of the whole run.
    pub total_ms: u64,
    /// One row per rollout, in run order.
    pub rollouts: Vec<SummaryRow>,
    /// How the run was spread out: jobs, shard, broker, speed-up, memory per desktop.
    #[serde(default)]
    pub run: RunInfo,
}

/// The directory of a task's rollout inside an out directory.
pub fn rollout_dir(out_dir: &Path, task_id: &str) -> PathBuf {
    out_dir.join("rollouts").join(task_id)
}

/// The summary of `records` in their order; `total_ms` is the run's wall time.
pub(crate) fn summarize(
    records: &[RolloutRecord],
    broker_version: &str,
    versions: &crate::versions::SoftwareVersions,
    total_ms: u64,
) -> Summary {
    let rows: Vec<SummaryRow> = records
        .iter()
        .map(|record| SummaryRow {
            task_id: record.task_id.clone(),
            drawing_type: record.drawing_type,
            level: record.level,
            split: record.split,
            agent: record.agent.clone(),
            status: record.status,
            infra_error: record.infra_error,
            score: record.score.score(),
            actions_used: record.actions_used,
            n_turns: record.n_turns,
            wall_time_ms: record.wall_time_ms,
            total_ms: record.total_ms,
            record: format!("rollouts/{}/{ROLLOUT_FILE}", record.task_id),
            policy_sha256: record.policy_sha256.clone(),
        })
        .collect();
    let scored: Vec<f64> = rows
        .iter()
        .filter(|row| !row.infra_error)
        .map(|row| row.score)
        .collect();
    let mean_score = if scored.is_empty() {
        0.0
    } else {
        scored.iter().sum::<f64>() / scored.len() as f64
    };
    Summary {
        contract_version: desk_cad::CONTRACT_VERSION.to_owned(),
        corpus_version: desk_cad::CORPUS_VERSION.to_owned(),
        scorer_version: desk_cad::score::SCORER_VERSION.to_owned(),
        broker_version: broker_version.to_owned(),
        versions: versions.clone(),
        n_rollouts: rows.len(),
        n_infra_error: rows.len() - scored.len(),
        mean_score,
        n_done: rows
            .iter()
            .filter(|row| row.status == RolloutStatus::Done)
            .count(),
        total_ms,
        rollouts: rows,
        run: RunInfo::default(),
    }
}

fn two_d() -> desk_cad::DrawingType {
    desk_cad::DrawingType::TwoD
}

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
