//! The load benchmark's numbers: latency samples per operation, their p50/p95/max, the printed
//! table and the JSON report.

use std::collections::BTreeMap;

use serde_json::{Value, json};

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
