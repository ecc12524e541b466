//! How a run is spread out: `--jobs N` rollouts at once (each on its own desktop, one broker),
//! `--shard I/N` (a deterministic slice of the selected tasks), and what the summary records
//! about it (the broker, the speed-up, memory per desktop).
//!
//! Shards are 1-based: `I/N` with `1 <= I <= N` keeps the selected tasks at 0-based positions
//! `p` with `p % N == I - 1`. Every task is in exactly one shard of `N`, whatever the machine.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::HarnessError;

mod jobs;

pub use jobs::{DefaultJobs, JobsBasis, MAX_JOBS, default_jobs};

/// The most shards a run can be split into.
pub const MAX_SHARDS: u32 = 10_000;

/// Parses `--jobs`: 1 to [`MAX_JOBS`]; anything else is refused, never clamped.
pub fn parse_jobs(text: &str) -> Result<u32, HarnessError> {
    let refuse = |reason: String| HarnessError::InvalidJobs {
        value: text.to_owned(),
        reason,
    };
    let jobs: u32 = text
        .trim()
        .parse()
        .map_err(|_| refuse("not a whole number".to_owned()))?;
    if jobs == 0 {
        return Err(refuse("at least one rollout must run".to_owned()));
    }
    if jobs > MAX_JOBS {
        return Err(refuse(format!("at most {MAX_JOBS} rollouts run at once")));
    }
    Ok(jobs)
}

/// One shard of a run: `index` of `count`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based shard number.
    pub index: u32,
    /// How many shards the selection is split into.
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Parses `I/N` (1-based, `1 <= I <= N <= MAX_SHARDS`).
    pub fn parse(text: &str) -> Result<Shard, HarnessError> {
        let refuse = |reason: &str| HarnessError::InvalidShard {
            spec: text.to_owned(),
            reason: reason.to_owned(),
        };
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| refuse("expected I/N, e.g. 1/4"))?;
        let number = |part: &str| -> Option<u32> {
            // Digits only: no sign, no spaces, no leading `+`.
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse().ok())
                .flatten()
        };
        let index = number(index).ok_or_else(|| refuse("I is not a whole number"))?;
        let count = number(count).ok_or_else(|| refuse("N is not a whole number"))?;
        if count == 0 || count > MAX_SHARDS {
            return Err(refuse("N must be between 1 and 10000"));
        }
        if index == 0 {
            return Err(refuse("shards are numbered from 1"));
        }
        if index > count {
            return Err(refuse("I is larger than N"));
        }
        Ok(Shard { index, count })
    }

    /// The shard's slice of `items`, in their order: positions `p` with `p % N == I - 1`.
    pub fn select<T: Clone>(&self, items: &[T]) -> Vec<T> {
        let count = self.count as usize;
        let offset = (self.index - 1) as usize;
        items
            .iter()
            .enumerate()
            .filter(|(position, _)| position % count == offset)
            .map(|(_, item)| item.clone())
            .collect()
    }
}

/// The broker a run played against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerStamp {
    /// `in_process` (started by `bench run`, the gold passed as a private path) or `external`
    /// (`--broker-socket`).
    pub mode: String,
    /// The external broker's socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// Whether every rollout had to hand off a verified sandbox to be played.
    pub sandbox_required: bool,
    /// Who made the gold invisible to the desktops: `checked_at_each_handoff` (in-process
    /// broker) or `operator` (an external broker must run with `--private-path GOLD`; `bench`
    /// cannot see its flags).
    pub gold_private_path: String,
}

/// Resident memory of the run's desktops, sampled while they ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DesktopMemory {
    /// Desktops sampled.
    pub desktops: usize,
    /// Mean over desktops of each one's peak proportional set size (its processes' `Pss`), KiB.
    pub mean_peak_pss_kib: u64,
    /// The largest peak `Pss` of one desktop, KiB.
    pub max_peak_pss_kib: u64,
    /// Mean over desktops of each one's peak resident set size (shared pages counted in
    /// every desktop), KiB.
    pub mean_peak_rss_kib: u64,
    /// The most `Pss` all desktops held at one sample, KiB.
    pub max_total_pss_kib: u64,
}

/// How the run was spread out, recorded in `summary.json` as `run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Rollouts at once (`--jobs`).
    pub jobs: u32,
    /// Why that many: `--jobs`, or the default's bounds (see [`default_jobs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs_reason: Option<String>,
    /// This run's shard, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The broker.
    #[serde(default)]
    pub broker: BrokerStamp,
    /// Sum of the rollouts' `total_ms` (lease to release).
    pub sum_rollout_ms: u64,
    /// `sum_rollout_ms` / the run's wall time: how many rollouts ran at once on average.
    pub speedup: f64,
    /// Memory per desktop, when the desktops were on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<DesktopMemory>,
    /// For a merged run: the out directories merged, in order, with their shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedSource>,
}

/// One run a merge read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedSource {
    /// Its out directory, as given.
    pub dir: String,
    /// Its shard, when it was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Its rollouts.
    pub n_rollouts: usize,
}

/// Reads the memory of the run's desktops once every rollout has ended.
pub type MemoryReading = std::sync::Arc<dyn Fn() -> Option<DesktopMemory> + Send + Sync>;

/// What a run needs besides the suite configuration.
#[derive(Clone)]
pub struct RunPlan {
    /// Rollouts at once, 1 to [`MAX_JOBS`].
    pub jobs: u32,
    /// Why that many, recorded (see [`RunInfo::jobs_reason`]).
    pub jobs_reason: Option<String>,
    /// The shard the tasks were cut to, recorded only (the caller selects).
    pub shard: Option<Shard>,
    /// The broker, recorded.
    pub broker: BrokerStamp,
    /// Memory per desktop, when the caller sampled it.
    pub memory: Option<MemoryReading>,
}

impl fmt::Debug for RunPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunPlan")
            .field("jobs", &self.jobs)
            .field("jobs_reason", &self.jobs_reason)
            .field("shard", &self.shard)
            .field("broker", &self.broker)
            .field("memory", &self.memory.is_some())
            .finish()
    }
}

impl Default for RunPlan {
    fn default() -> Self {
        RunPlan {
            jobs: 1,
            jobs_reason: None,
            shard: None,
            broker: BrokerStamp::default(),
            memory: None,
        }
    }
}

/// The order rollouts start in: the positions of `items` by `budget_s` (each task's wall-time
/// budget) from longest to shortest, equal budgets in their given order. With `--jobs N` the
/// long tasks (3D, 1,800 s budget) start first and the short ones fill the jobs that finish
/// early, so the jobs end closer together than in corpus order, where a run's last 3D task
/// started last and ran alone while the other job idled. Results are still kept in task order.
pub fn start_order<T>(items: &[T], budget_s: impl Fn(&T) -> u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&index| std::cmp::Reverse(budget_s(&items[index])));
    order
}

/// Sum of rollout durations over wall time, rounded to two decimals (0 for an empty run).
pub(crate) fn speedup(sum_rollout_ms: u64, wall_ms: u64) -> f64 {
    if wall_ms == 0 {
        return 0.0;
    }
    (sum_rollout_ms as f64 / wall_ms as f64 * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_selection() {
        let tasks: Vec<u32> = (0..10).collect();
        let mut seen = Vec::new();
        for index in 1..=3 {
            let shard = Shard::parse(&format!("{index}/3")).unwrap();
            seen.extend(shard.select(&tasks));
        }
        seen.sort_unstable();
        assert_eq!(seen, tasks);
        assert_eq!(
            Shard::parse("2/3").unwrap().select(&tasks),
            vec![1, 4, 7],
            "positions modulo N"
        );
        assert_eq!(
            Shard::parse("4/4").unwrap().select(&[1, 2]),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn long_budgets_start_first_and_ties_keep_their_order() {
        let budgets = [900_u64, 900, 1800, 900, 1800, 1800];
        assert_eq!(start_order(&budgets, |b| *b), vec![2, 4, 5, 0, 1, 3]);
        assert_eq!(start_order(&[] as &[u64], |b| *b), Vec::<usize>::new());
    }

    #[test]
    fn malformed_shards_and_jobs_are_refused() {
        for bad in [
            "", "1", "0/2", "3/2", "1/0", "a/2", "1/b", "-1/2", "+1/2", " 1/2", "1/2/3", "1/10001",
        ] {
            assert!(
                matches!(Shard::parse(bad), Err(HarnessError::InvalidShard { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(Shard::parse("2/2").unwrap().to_string(), "2/2");
        for bad in ["0", "33", "-1", "x", "1.5", ""] {
            assert!(
                matches!(parse_jobs(bad), Err(HarnessError::InvalidJobs { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(parse_jobs("32").unwrap(), 32);
        assert_eq!(parse_jobs("1").unwrap(), 1);
    }
}
