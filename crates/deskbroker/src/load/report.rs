//! The load benchmark's numbers: latency samples per operation, their p50/p95/max, the printed
//! table and the JSON report (with the run's verdict inputs: failures, probe mismatches,
//! long-poll errors, the metrics cross-check and leftovers), from each session's results
//! ([`SessionResult`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use desk_client::ClientError;
use desk_contract::DisplaySize;
use serde_json::{Value, json};

use super::args::LoadArgs;
use super::host::Footprint;

/// One session's results.
#[derive(Debug, Default)]
pub(crate) struct SessionResult {
    pub(crate) samples: Samples,
    pub(crate) n_acknowledged: usize,
    pub(crate) typed_failures: BTreeMap<String, usize>,
    pub(crate) untyped_failures: Vec<String>,
    pub(crate) probe_mismatches: Vec<String>,
    pub(crate) long_polls_woken: usize,
    pub(crate) long_polls_timed_out: usize,
    pub(crate) long_poll_errors: Vec<String>,
    /// When each woken long-poll answered, relative to its action's response (negative:
    /// before the client had the response).
    pub(crate) wake_after_ack_ms: Vec<f64>,
    /// Execute requests sent (to compare with the broker's metrics).
    pub(crate) n_execute_requests: u64,
    pub(crate) rss_kib: u64,
    pub(crate) footprint: Footprint,
}

impl SessionResult {
    /// Records a failed call: typed when the broker answered with an error body.
    pub(super) fn failed(&mut self, what: &str, error: &ClientError) {
        match error.api_body() {
            Some(body) => {
                *self
                    .typed_failures
                    .entry(body.code.as_str().to_string())
                    .or_insert(0) += 1;
            }
            None => self.untyped_failures.push(format!("{what}: {error}")),
        }
    }
}

/// Latency samples in milliseconds, per operation name.
#[derive(Debug, Default, Clone)]
pub(crate) struct Samples {
    by_op: BTreeMap<String, Vec<f64>>,
}

impl Samples {
    pub(crate) fn add(&mut self, op: &str, ms: f64) {
        self.by_op.entry(op.to_string()).or_default().push(ms);
    }

    pub(crate) fn merge(&mut self, other: Samples) {
        for (op, values) in other.by_op {
            self.by_op.entry(op).or_default().extend(values);
        }
    }

    pub(crate) fn summaries(&self) -> BTreeMap<String, Summary> {
        self.by_op
            .iter()
            .map(|(op, values)| (op.clone(), Summary::of(values)))
            .collect()
    }
}

/// Count, p50, p95 and max of one operation, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) count: usize,
    pub(crate) p50: f64,
    pub(crate) p95: f64,
    pub(crate) max: f64,
}

impl Summary {
    /// Nearest-rank percentiles.
    pub(crate) fn of(values: &[f64]) -> Summary {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let rank = |percent: usize| {
            let idx = (sorted.len() * percent).div_ceil(100).saturating_sub(1);
            sorted.get(idx).copied().unwrap_or(f64::NAN)
        };
        Summary {
            count: sorted.len(),
            p50: rank(50),
            p95: rank(95),
            max: sorted.last().copied().unwrap_or(f64::NAN),
        }
    }

    pub(crate) fn to_json(self) -> Value {
        json!({
            "count": self.count,
            "p50_ms": round(self.p50),
            "p95_ms": round(self.p95),
            "max_ms": round(self.max),
        })
    }
}

/// Two decimals, for readable JSON.
/// A duration in milliseconds, fractional.
pub(crate) fn ms(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1_000.0
}

pub(crate) fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// The table printed at the end of a run.
pub(crate) fn table(summaries: &BTreeMap<String, Summary>) -> String {
    let mut out = format!(
        "{:<22} {:>7} {:>10} {:>10} {:>10}\n",
        "operation", "count", "p50 ms", "p95 ms", "max ms"
    );
    for (op, summary) in summaries {
        out.push_str(&format!(
            "{:<22} {:>7} {:>10.1} {:>10.1} {:>10.1}\n",
            op, summary.count, summary.p50, summary.p95, summary.max
        ));
    }
    out
}

/// The JSON report of a run.
pub(crate) fn build(
    args: &LoadArgs,
    display: DisplaySize,
    results: &[SessionResult],
    wall: Duration,
    (rss_before_kib, rss_peak_kib): (u64, u64),
    metrics: Result<String>,
    state_dir: &Path,
) -> Value {
    let mut samples = Samples::default();
    let mut typed: BTreeMap<String, usize> = BTreeMap::new();
    let (mut untyped, mut mismatches, mut poll_errors, mut leftovers) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut wake_after_ack = Vec::new();
    let (mut n_acked, mut n_woken, mut n_timed_out, mut n_execute) = (0, 0, 0, 0);
    let mut session_rss_mib = Vec::new();
    for (session_idx, result) in results.iter().enumerate() {
        samples.merge(result.samples.clone());
        for (code, count) in &result.typed_failures {
            *typed.entry(code.clone()).or_insert(0) += count;
        }
        let tag = |text: &String| format!("session {session_idx}: {text}");
        untyped.extend(result.untyped_failures.iter().map(tag));
        mismatches.extend(result.probe_mismatches.iter().map(tag));
        poll_errors.extend(result.long_poll_errors.iter().map(tag));
        leftovers.extend(result.footprint.leftovers().iter().map(tag));
        wake_after_ack.extend(&result.wake_after_ack_ms);
        n_acked += result.n_acknowledged;
        n_execute += result.n_execute_requests;
        n_woken += result.long_polls_woken;
        n_timed_out += result.long_polls_timed_out;
        session_rss_mib.push(result.rss_kib as f64 / 1024.0);
    }
    if let Ok(entries) = std::fs::read_dir(desk_desktop::StateDir::new(state_dir).sessions()) {
        for entry in entries.flatten() {
            leftovers.push(format!("session directory {} left", entry.path().display()));
        }
    }
    let summaries = samples.summaries();
    let n_sessions = results.len().max(1);
    let mean_session_mib = session_rss_mib.iter().sum::<f64>() / n_sessions as f64;
    let broker_growth_mib =
        rss_peak_kib.saturating_sub(rss_before_kib) as f64 / 1024.0 / n_sessions as f64;
    let (metrics_counts, metrics_error) = match &metrics {
        Ok(text) => (requests_per_op(text), None),
        Err(error) => (BTreeMap::new(), Some(format!("{error:#}"))),
    };
    // The broker's own count of execute requests must match what the clients sent.
    let metrics_mismatch = match (&metrics_error, metrics_counts.get("execute")) {
        (Some(error), _) => Some(format!("metrics unavailable: {error}")),
        (None, Some(counted)) if *counted == n_execute => None,
        (None, counted) => Some(format!(
            "the broker's metrics count {} execute requests, the clients sent {n_execute}",
            counted.copied().unwrap_or(0)
        )),
    };
    json!({
        "sessions": results.len(),
        "actions_per_session": args.actions,
        "display": display.to_string(),
        "wall_seconds": round(wall.as_secs_f64()),
        "actions_acknowledged": n_acked,
        "actions_per_second": round(n_acked as f64 / wall.as_secs_f64().max(1e-9)),
        "typed_failures": typed,
        "untyped_failures": untyped,
        "operations": summaries
            .iter()
            .map(|(op, summary)| (op.clone(), summary.to_json()))
            .collect::<serde_json::Map<String, Value>>(),
        "long_poll": {
            "woken_by_action": n_woken,
            "timed_out_unchanged": n_timed_out,
            "answered_relative_to_action_response_ms": Summary::of(&wake_after_ack).to_json(),
            "errors": poll_errors,
        },
        "probe_mismatches": mismatches,
        "checkpoint": "skipped: the probe profile has no save chord",
        "memory": {
            "session_processes_rss_mib": session_rss_mib.iter().map(|v| round(*v)).collect::<Vec<_>>(),
            "session_processes_rss_mib_mean": round(mean_session_mib),
            "broker_process_rss_before_mib": round(rss_before_kib as f64 / 1024.0),
            "broker_process_rss_after_mib": round(rss_peak_kib as f64 / 1024.0),
            "broker_rss_growth_mib_per_session": round(broker_growth_mib),
            "per_session_total_mib": round(mean_session_mib + broker_growth_mib),
        },
        "broker_metrics_requests": metrics_counts,
        "broker_metrics_mismatch": metrics_mismatch,
        "leftovers": leftovers,
        "table": table(&summaries),
    })
}

/// Prints the table and the headline numbers.
pub(crate) fn print_summary(report: &Value) -> anyhow::Result<()> {
    outln!(
        "deskbroker load — {} sessions × {} actions on {}, {} s wall",
        report["sessions"],
        report["actions_per_session"],
        report["display"].as_str().unwrap_or("?"),
        report["wall_seconds"]
    );
    outln!();
    out!("{}", report["table"].as_str().unwrap_or_default());
    outln!();
    outln!(
        "acknowledged actions: {} ({} actions/s); typed failures: {}; untyped failures: {}",
        report["actions_acknowledged"],
        report["actions_per_second"],
        report["typed_failures"],
        report["untyped_failures"].as_array().map_or(0, Vec::len)
    );
    outln!(
        "long-polls: {} woken by their action, {} timed out unchanged, errors: {}",
        report["long_poll"]["woken_by_action"],
        report["long_poll"]["timed_out_unchanged"],
        report["long_poll"]["errors"].as_array().map_or(0, Vec::len)
    );
    outln!(
        "memory per session: {} MiB session processes (mean) + {} MiB broker growth = {} MiB",
        report["memory"]["session_processes_rss_mib_mean"],
        report["memory"]["broker_rss_growth_mib_per_session"],
        report["memory"]["per_session_total_mib"]
    );
    outln!(
        "probe logs: {} mismatches; leftovers after release: {}",
        report["probe_mismatches"].as_array().map_or(0, Vec::len),
        report["leftovers"].as_array().map_or(0, Vec::len)
    );
    outln!(
        "checkpoint: {}",
        report["checkpoint"].as_str().unwrap_or_default()
    );
    Ok(())
}

/// Sums `deskbroker_requests_total` per operation from the metrics text.
fn requests_per_op(metrics: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("deskbroker_requests_total{op=\"") else {
            continue;
        };
        let Some((op, tail)) = rest.split_once('"') else {
            continue;
        };
        let value = tail
            .rsplit(' ')
            .next()
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(0);
        *counts.entry(op.to_string()).or_insert(0) += value;
    }
    counts
}
