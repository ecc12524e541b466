//! `bench merge`: shard or run out directories into one result, equal to an unsharded run's
//! except for timings.
//!
//! Every source must have been scored under the same contract, corpus and scorer versions, by
//! the same agent configuration, with the same sandbox requirement, and no task may appear
//! twice; anything else is a [`MergeConflict`] naming the conflict, and nothing is written.
//! Rows and records come out in task-id order, which is the corpus order every run selects
//! in. The merged `total_ms` is the longest source's (shards run side by side).

use std::path::{Path, PathBuf};

use crate::error::{HarnessError, MergeConflict, read_json, write_json};
use crate::plan::{MergedSource, RunInfo, speedup};
use crate::record::RolloutRecord;
use crate::summary::{Summary, rollout_dir, summarize};

struct Source {
    dir: PathBuf,
    summary: Summary,
    records: Vec<RolloutRecord>,
}

fn agent_label(info: &crate::agent::AgentInfo) -> String {
    match &info.model {
        Some(model) => format!("{} ({model})", info.agent),
        None => info.agent.clone(),
    }
}

fn check_versions(first: &Source, other: &Source) -> Result<(), MergeConflict> {
    let pairs = [
        (
            "contract_version",
            &first.summary.contract_version,
            &other.summary.contract_version,
        ),
        (
            "corpus_version",
            &first.summary.corpus_version,
            &other.summary.corpus_version,
        ),
        (
            "scorer_version",
            &first.summary.scorer_version,
            &other.summary.scorer_version,
        ),
    ];
    for (what, a, b) in pairs {
        if a != b {
            return Err(MergeConflict::Version {
                what,
                first: a.clone(),
                first_dir: first.dir.display().to_string(),
                second: b.clone(),
                second_dir: other.dir.display().to_string(),
            });
        }
    }
    if first.summary.run.broker.sandbox_required != other.summary.run.broker.sandbox_required {
        return Err(MergeConflict::Sandbox {
            first_dir: first.dir.display().to_string(),
            second_dir: other.dir.display().to_string(),
        });
    }
    Ok(())
}

fn read_source(dir: &Path) -> Result<Source, HarnessError> {
    let summary: Summary = read_json(&dir.join("summary.json"))?;
    let mut records = Vec::with_capacity(summary.rollouts.len());
    for row in &summary.rollouts {
        let record: RolloutRecord = read_json(&dir.join(&row.record))?;
        if record.task_id != row.task_id {
            return Err(MergeConflict::RecordMismatch {
                dir: dir.display().to_string(),
                task_id: row.task_id.clone(),
                record: row.record.clone(),
            }
            .into());
        }
        records.push(record);
    }
    Ok(Source {
        dir: dir.to_owned(),
        summary,
        records,
    })
}

/// Checks every source against the first, then copies each rollout directory into `out` and
/// writes the merged `summary.json` and `report.html`.
pub fn merge_runs(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(Summary, Vec<RolloutRecord>), HarnessError> {
    let sources = dirs
        .iter()
        .map(|dir| read_source(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let first = sources.first().ok_or(MergeConflict::NoRuns)?;
    let mut seen: Vec<(&str, &Path)> = Vec::new();
    let mut agent: Option<(&crate::agent::AgentInfo, &Path)> = None;
    for source in &sources {
        check_versions(first, source)?;
        for record in &source.records {
            match agent {
                None => agent = Some((&record.agent, &source.dir)),
                Some((info, dir)) if *info != record.agent => {
                    return Err(MergeConflict::Agent {
                        first: agent_label(info),
                        first_dir: dir.display().to_string(),
                        second: agent_label(&record.agent),
                        second_dir: source.dir.display().to_string(),
                    }
                    .into());
                }
                Some(_) => {}
            }
            if let Some((_, dir)) = seen.iter().find(|(task, _)| *task == record.task_id) {
                return Err(MergeConflict::DuplicateTask {
                    task_id: record.task_id.clone(),
                    first_dir: dir.display().to_string(),
                    second_dir: source.dir.display().to_string(),
                }
                .into());
            }
            seen.push((&record.task_id, &source.dir));
        }
    }
    if out.join("summary.json").exists() || out.join("rollouts").exists() {
        return Err(MergeConflict::OutNotEmpty(out.display().to_string()).into());
    }
    let mut records: Vec<RolloutRecord> = Vec::new();
    for source in &sources {
        for record in &source.records {
            copy_dir(
                &rollout_dir(&source.dir, &record.task_id),
                &rollout_dir(out, &record.task_id),
            )?;
            records.push(record.clone());
        }
    }
    records.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    let wall_ms = sources
        .iter()
        .map(|source| source.summary.total_ms)
        .max()
        .unwrap_or(0);
    let mut summary = summarize(
        &records,
        &first.summary.broker_version,
        &first.summary.versions,
        wall_ms,
    );
    let sum_rollout_ms: u64 = summary.rollouts.iter().map(|row| row.total_ms).sum();
    summary.run = RunInfo {
        jobs: sources
            .iter()
            .map(|source| source.summary.run.jobs)
            .max()
            .unwrap_or(1),
        jobs_reason: None,
        shard: None,
        broker: first.summary.run.broker.clone(),
        sum_rollout_ms,
        speedup: speedup(sum_rollout_ms, wall_ms),
        memory: None,
        merged_from: sources
            .iter()
            .map(|source| MergedSource {
                dir: source.dir.display().to_string(),
                shard: source.summary.run.shard,
                n_rollouts: source.records.len(),
            })
            .collect(),
    };
    write_json(&out.join("summary.json"), &summary)?;
    crate::report::write_report(out, &summary, &records)?;
    Ok((summary, records))
}

/// Copies a directory tree (files and directories only; links are not followed).
fn copy_dir(from: &Path, to: &Path) -> Result<(), HarnessError> {
    let io = |op: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| HarnessError::Io { op, path, source }
    };
    std::fs::create_dir_all(to).map_err(io("create directory", to))?;
    for entry in std::fs::read_dir(from).map_err(io("read directory", from))? {
        let entry = entry.map_err(io("read directory", from))?;
        let kind = entry.file_type().map_err(io("stat", &entry.path()))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(io("copy", &entry.path()))?;
        }
    }
    Ok(())
}
