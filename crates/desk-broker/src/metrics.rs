//! Per-operation counts and latency histograms, rendered as Prometheus text (`GET /v1/metrics`).
//!
//! [`Metrics`] is fed once per HTTP request by desk-server's tracing layer with the operation
//! name (a fixed set: its route table's), the HTTP status, the error code when any and the
//! latency (`Broker::record_request`, `status.rs`). Labels never carry request data other than these, so the series count stays bounded
//! (operations × statuses × codes). Rendering adds gauges read from the store at scrape time.
//!
//! Invariant: every histogram's `_count` equals the sum of its operation's request counters, and
//! its buckets are cumulative (`le` ascending, the last one `+Inf` equal to `_count`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use desk_contract::api::SessionState;

use crate::watch::Changes;

/// Histogram bucket upper bounds, in seconds.
const BUCKETS_SECONDS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Every state a gauge reports, in a fixed order.
const STATES: [SessionState; 7] = [
    SessionState::Leased,
    SessionState::Ready,
    SessionState::Running,
    SessionState::Done,
    SessionState::Error,
    SessionState::Released,
    SessionState::Killed,
];

/// The broker's operational state shared by the router layers and the long-poll: request
/// metrics and the change counter. Part of the broker's shared state.
#[derive(Debug)]
pub(crate) struct Observability {
    /// Request counts and latency histograms.
    pub(crate) metrics: Metrics,
    /// Bumped after every broker operation; long-polls wait on it.
    pub(crate) changes: Changes,
}

impl Observability {
    pub(crate) fn new() -> Observability {
        Observability {
            metrics: Metrics::default(),
            changes: Changes::new(),
        }
    }
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Per-bucket (non-cumulative) counts; the last slot is `+Inf`.
    buckets: [u64; BUCKETS_SECONDS.len() + 1],
    sum_seconds: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let bucket_idx = BUCKETS_SECONDS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS_SECONDS.len());
        if let Some(slot) = self.buckets.get_mut(bucket_idx) {
            *slot += 1;
        }
        self.sum_seconds += seconds;
        self.count += 1;
    }
}

#[derive(Debug, Default)]
struct Table {
    /// `(op, status, code)` → requests.
    requests: BTreeMap<(&'static str, u16, String), u64>,
    /// `op` → latency histogram.
    latency: BTreeMap<&'static str, Histogram>,
}

/// Request metrics. Cheap to record into (one short lock per request).
#[derive(Debug)]
pub(crate) struct Metrics {
    table: Mutex<Table>,
    started: Instant,
    /// Long-polls currently waiting.
    waiters: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            table: Mutex::new(Table::default()),
            started: Instant::now(),
            waiters: AtomicU64::new(0),
        }
    }
}

/// Counts one waiting long-poll while alive.
pub(crate) struct WaiterGuard<'a>(&'a AtomicU64);

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while recording leaves consistent counters (each update is one statement).
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records one finished request.
    pub(crate) fn record(&self, op: &'static str, status: u16, code: Option<&str>, seconds: f64) {
        let mut table = self.lock();
        let code = code.unwrap_or("none").to_string();
        *table.requests.entry((op, status, code)).or_insert(0) += 1;
        table.latency.entry(op).or_default().observe(seconds);
    }

    /// Counts a long-poll as waiting until the guard drops.
    pub(crate) fn waiting(&self) -> WaiterGuard<'_> {
        self.waiters.fetch_add(1, Ordering::Relaxed);
        WaiterGuard(&self.waiters)
    }

    /// The Prometheus text exposition (format 0.0.4) of the request metrics plus `gauges`.
    pub(crate) fn render(&self, gauges: &Gauges) -> String {
        let table = self.lock();
        let mut out = String::new();
        out.push_str(
            "# HELP deskbroker_requests_total HTTP requests by operation, status and error code.\n",
        );
        out.push_str("# TYPE deskbroker_requests_total counter\n");
        for ((op, status, code), count) in &table.requests {
            let _ = writeln!(
                out,
                "deskbroker_requests_total{{op=\"{op}\",status=\"{status}\",code=\"{}\"}} {count}",
                escape_label(code)
            );
        }
        out.push_str(
            "# HELP deskbroker_request_duration_seconds Request latency by operation, from the \
             first byte of the request to the response.\n",
        );
        out.push_str("# TYPE deskbroker_request_duration_seconds histogram\n");
        for (op, histogram) in &table.latency {
            let mut cumulative = 0;
            for (bound, count) in BUCKETS_SECONDS.iter().zip(histogram.buckets.iter()) {
                cumulative += count;
                let _ = writeln!(
                    out,
                    "deskbroker_request_duration_seconds_bucket{{op=\"{op}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "deskbroker_request_duration_seconds_bucket{{op=\"{op}\",le=\"+Inf\"}} {}",
                histogram.count
            );
            let _ = writeln!(
                out,
                "deskbroker_request_duration_seconds_sum{{op=\"{op}\"}} {}",
                histogram.sum_seconds
            );
            let _ = writeln!(
                out,
                "deskbroker_request_duration_seconds_count{{op=\"{op}\"}} {}",
                histogram.count
            );
        }
        drop(table);
        out.push_str("# HELP deskbroker_sessions Sessions not yet released, by state.\n");
        out.push_str("# TYPE deskbroker_sessions gauge\n");
        for state in STATES {
            if state == SessionState::Released {
                continue;
            }
            let count = gauges.by_state.get(state.as_str()).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "deskbroker_sessions{{state=\"{}\"}} {count}",
                state.as_str()
            );
        }
        out.push_str("# HELP deskbroker_sessions_active Sessions not yet released.\n");
        out.push_str("# TYPE deskbroker_sessions_active gauge\n");
        let _ = writeln!(out, "deskbroker_sessions_active {}", gauges.active);
        out.push_str("# HELP deskbroker_sessions_max Most sessions not yet released at once.\n");
        out.push_str("# TYPE deskbroker_sessions_max gauge\n");
        let _ = writeln!(out, "deskbroker_sessions_max {}", gauges.max_sessions);
        out.push_str("# HELP deskbroker_status_waiters Status long-polls currently waiting.\n");
        out.push_str("# TYPE deskbroker_status_waiters gauge\n");
        let _ = writeln!(
            out,
            "deskbroker_status_waiters {}",
            self.waiters.load(Ordering::Relaxed)
        );
        out.push_str("# HELP deskbroker_uptime_seconds Seconds since the broker opened.\n");
        out.push_str("# TYPE deskbroker_uptime_seconds gauge\n");
        let _ = writeln!(
            out,
            "deskbroker_uptime_seconds {:.3}",
            self.started.elapsed().as_secs_f64()
        );
        out
    }
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Values read from the store at scrape time.
pub(crate) struct Gauges {
    pub(crate) by_state: BTreeMap<&'static str, u64>,
    pub(crate) active: u64,
    pub(crate) max_sessions: usize,
}

#[cfg(test)]
mod tests;
