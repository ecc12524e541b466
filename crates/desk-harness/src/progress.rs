//! What a run shows while it plays, on stderr (stdout keeps the table). On a terminal: one bar
//! (rollouts done of all, how many are running, the mean score so far, an estimate of the time
//! left) with each finished rollout's line printed above it. Anywhere else (a pipe, a CI log):
//! the same facts as plain lines, one per finished rollout, with no escape sequences.
//!
//! Log lines written while the bar is drawn go through [`suspend`], which hides the bar for the
//! write, so logs and the bar never overwrite each other.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::record::RolloutRecord;

/// The bar being drawn, if any: the one [`suspend`] hides.
static ACTIVE_BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Runs `write` with the run's bar, if one is drawn, hidden; a log writer calls this so its
/// lines land above the bar instead of through it.
pub fn suspend<R>(write: impl FnOnce() -> R) -> R {
    let bar = ACTIVE_BAR
        .lock()
        .ok()
        .and_then(|active| active.as_ref().cloned());
    match bar {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// The counts a progress line or the bar's message is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Counts {
    pub(crate) total: usize,
    pub(crate) done: usize,
    pub(crate) running: usize,
    /// Sum and number of the scores of finished rollouts that were not `infra_error`.
    pub(crate) score_sum: f64,
    pub(crate) n_scored: usize,
}

impl Counts {
    /// `2 running, mean 0.9951, eta 3m10s`: the mean once a rollout was scored, the estimate
    /// once one finished (`elapsed` over the finished ones, times those left).
    pub(crate) fn status(&self, elapsed: Duration) -> String {
        let mean = match self.n_scored {
            0 => "mean -".to_owned(),
            n => format!("mean {:.4}", self.score_sum / n as f64),
        };
        let eta = match eta(elapsed, self.done, self.total) {
            Some(left) => format!("eta {}", short_duration(left)),
            None => "eta -".to_owned(),
        };
        format!("{} running, {mean}, {eta}", self.running)
    }
}

/// The time left when `done` of `total` rollouts took `elapsed`: the mean time per finished
/// rollout so far (parallel rollouts included), times the rollouts left.
pub(crate) fn eta(elapsed: Duration, done: usize, total: usize) -> Option<Duration> {
    if done == 0 {
        return None;
    }
    let left = total.saturating_sub(done) as u32;
    let per_rollout = elapsed / u32::try_from(done).unwrap_or(u32::MAX);
    Some(per_rollout.saturating_mul(left))
}

/// `45s`, `3m10s`, `1h02m`.
pub(crate) fn short_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// One finished rollout: `[3/7] task-018 done, score 0.9987, 120 actions, 45.1 s | 2 running,
/// mean 0.9950, eta 5m10s`.
pub(crate) fn finished_line(record: &RolloutRecord, counts: &Counts, elapsed: Duration) -> String {
    format!(
        "[{}/{}] {} {}{}, score {:.4}, {} actions, {:.1} s | {}",
        counts.done,
        counts.total,
        record.task_id,
        record.status.as_str(),
        if record.infra_error {
            " (infra_error, not scored)"
        } else {
            ""
        },
        record.score.score(),
        record.actions_used,
        record.wall_time_ms as f64 / 1000.0,
        counts.status(elapsed)
    )
}

/// The progress of one run.
pub(crate) struct RunProgress {
    /// The bar on a terminal; `None`: plain lines.
    bar: Option<ProgressBar>,
    counts: Counts,
    started: Instant,
}

impl RunProgress {
    /// A bar when stderr is a terminal, else plain lines.
    pub(crate) fn new(total: usize) -> RunProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {pos}/{len} rollouts [{elapsed}] {wide_bar} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            if let Ok(mut active) = ACTIVE_BAR.lock() {
                *active = Some(bar.clone());
            }
            bar
        });
        let progress = RunProgress {
            bar,
            counts: Counts {
                total,
                ..Counts::default()
            },
            started: Instant::now(),
        };
        progress.redraw();
        progress
    }

    fn redraw(&self) {
        if let Some(bar) = &self.bar {
            bar.set_position(self.counts.done as u64);
            bar.set_message(self.counts.status(self.started.elapsed()));
        }
    }

    /// A rollout started.
    pub(crate) fn started(&mut self) {
        self.counts.running += 1;
        self.redraw();
    }

    /// A rollout ended without a record (a local failure).
    pub(crate) fn failed(&mut self) {
        self.counts.running = self.counts.running.saturating_sub(1);
        self.redraw();
    }

    /// A rollout ended with `record`: its line above the bar, or on stderr.
    pub(crate) fn finished(&mut self, record: &RolloutRecord) {
        self.counts.running = self.counts.running.saturating_sub(1);
        self.counts.done += 1;
        if !record.infra_error {
            self.counts.score_sum += record.score.score();
            self.counts.n_scored += 1;
        }
        let line = finished_line(record, &self.counts, self.started.elapsed());
        match &self.bar {
            Some(bar) => bar.println(line),
            // A closed or full stderr costs the line, never the run.
            None => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
        self.redraw();
    }
}

impl Drop for RunProgress {
    /// The bar is cleared (the table follows on stdout) and [`suspend`] no longer hides it.
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            if let Ok(mut active) = ACTIVE_BAR.lock() {
                *active = None;
            }
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests;
