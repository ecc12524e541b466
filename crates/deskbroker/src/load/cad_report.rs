//! The numbers of `load --desktops`: one [`Desk`] per desktop as the phases fill it, and the
//! JSON report and printed tables built from them (operations with p50/p95, overall and per
//! profile; memory per profile; actions/s; failures, outcomes and leftovers).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use desk_client::ClientError;
use desk_contract::DisplaySize;
use serde_json::{Value, json};

use super::args::DesktopMix;
use super::host::Footprint;
use super::report::{Samples, round, table};

/// What the mix asks of the broker's admission.
pub(super) struct Admission {
    pub(super) needed_mib: u64,
    pub(super) budget_mib: u64,
    pub(super) budget_source: &'static str,
    pub(super) max_sessions: usize,
    /// Each profile's memory estimate, MiB.
    pub(super) per_profile_mib: BTreeMap<String, u64>,
}

/// One desktop of the run.
#[derive(Debug, Default)]
pub(crate) struct Desk {
    pub(crate) index: usize,
    pub(crate) profile: String,
    pub(crate) session: Option<String>,
    /// Leased and reset.
    pub(crate) ready: bool,
    pub(crate) samples: Samples,
    pub(crate) n_acknowledged: usize,
    /// `op: code: message` of every call the broker refused.
    pub(crate) typed_failures: Vec<String>,
    pub(crate) untyped_failures: Vec<String>,
    /// Its script's wall time, ms (0 when it did not finish).
    pub(crate) script_ms: f64,
    /// The larger of its two readings (after reset, after the script), KiB.
    pub(crate) pss_kib: u64,
    pub(crate) rss_kib: u64,
    pub(crate) footprint: Footprint,
    pub(crate) artifact: Option<Vec<u8>>,
    pub(crate) outcome_checked: bool,
    pub(crate) outcome_problems: Vec<String>,
}

impl Desk {
    pub(crate) fn new(index: usize, profile: &str) -> Desk {
        Desk {
            index,
            profile: profile.to_string(),
            ..Desk::default()
        }
    }

    /// A latency sample, under the operation and under `operation:profile`.
    pub(crate) fn add(&mut self, op: &str, ms: f64) {
        self.samples.add(op, ms);
        self.samples.add(&format!("{op}:{}", self.profile), ms);
    }

    /// A failed call: typed when the broker answered with an error body.
    pub(crate) fn failed(&mut self, what: &str, error: &ClientError) {
        match error.api_body() {
            Some(body) => self.typed_failures.push(format!(
                "{what}: {}: {}",
                body.code.as_str(),
                body.message
            )),
            None => self.untyped_failures.push(format!("{what}: {error}")),
        }
    }

    fn tag(&self, text: &str) -> String {
        format!("desktop {} ({}): {text}", self.index, self.profile)
    }
}

/// Everything [`build`] reports on.
pub(crate) struct Run<'a> {
    pub(crate) mix: &'a DesktopMix,
    pub(crate) admission: &'a Admission,
    pub(crate) display: DisplaySize,
    pub(crate) desks: &'a [Desk],
    pub(crate) reset_all: Duration,
    pub(crate) script_wall: Duration,
    pub(crate) release_all: Duration,
    pub(crate) state_dir: &'a Path,
    pub(crate) host: Value,
}

fn mib(kib: u64) -> f64 {
    round(kib as f64 / 1024.0)
}

/// Memory and throughput of one profile's desktops.
fn profile_row(desks: &[&Desk], script_wall: Duration) -> Value {
    let measured: Vec<&&Desk> = desks.iter().filter(|desk| desk.pss_kib > 0).collect();
    let n = measured.len().max(1) as u64;
    let pss: Vec<u64> = measured.iter().map(|desk| desk.pss_kib).collect();
    let acked: usize = desks.iter().map(|desk| desk.n_acknowledged).sum();
    let per_desktop: Vec<f64> = desks
        .iter()
        .filter(|desk| desk.script_ms > 0.0)
        .map(|desk| desk.n_acknowledged as f64 / (desk.script_ms / 1000.0))
        .collect();
    json!({
        "desktops": desks.len(),
        "measured": measured.len(),
        "pss_mib_mean": mib(pss.iter().sum::<u64>() / n),
        "pss_mib_min": mib(pss.iter().copied().min().unwrap_or(0)),
        "pss_mib_max": mib(pss.iter().copied().max().unwrap_or(0)),
        "pss_mib_total": mib(pss.iter().sum()),
        "rss_mib_mean": mib(measured.iter().map(|desk| desk.rss_kib).sum::<u64>() / n),
        "actions_acknowledged": acked,
        "actions_per_second": round(acked as f64 / script_wall.as_secs_f64().max(1e-9)),
        "actions_per_second_per_desktop_mean": round(
            per_desktop.iter().sum::<f64>() / per_desktop.len().max(1) as f64
        ),
    })
}

/// The JSON report; `ok` is decided by the caller from its lists.
pub(crate) fn build(run: &Run<'_>) -> Value {
    let mut samples = Samples::default();
    let (mut typed, mut untyped, mut outcomes, mut leftovers) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for desk in run.desks {
        samples.merge(desk.samples.clone());
        typed.extend(desk.typed_failures.iter().map(|text| desk.tag(text)));
        untyped.extend(desk.untyped_failures.iter().map(|text| desk.tag(text)));
        outcomes.extend(desk.outcome_problems.iter().map(|text| desk.tag(text)));
        if desk.ready && !desk.outcome_checked && desk.outcome_problems.is_empty() {
            outcomes.push(desk.tag("its outcome was not checked"));
        }
        leftovers.extend(desk.footprint.leftovers().iter().map(|text| desk.tag(text)));
    }
    if let Ok(entries) = std::fs::read_dir(desk_desktop::StateDir::new(run.state_dir).sessions()) {
        for entry in entries.flatten() {
            leftovers.push(format!("session directory {} left", entry.path().display()));
        }
    }
    let mut profiles = serde_json::Map::new();
    for (name, _) in &run.mix.0 {
        let desks: Vec<&Desk> = run
            .desks
            .iter()
            .filter(|desk| desk.profile == *name)
            .collect();
        profiles.insert(name.clone(), profile_row(&desks, run.script_wall));
    }
    let all: Vec<&Desk> = run.desks.iter().collect();
    let overall = profile_row(&all, run.script_wall);
    let summaries = samples.summaries();
    json!({
        "mode": "desktops",
        "desktops": run.mix.0.iter().cloned().collect::<BTreeMap<String, usize>>(),
        "display": run.display.to_string(),
        "admission": {
            "needed_mib": run.admission.needed_mib,
            "memory_budget_mib": run.admission.budget_mib,
            "memory_budget_from": run.admission.budget_source,
            "max_sessions": run.admission.max_sessions,
            "memory_limit_mib_per_profile": run.admission.per_profile_mib,
        },
        "desktops_ready": run.desks.iter().filter(|desk| desk.ready).count(),
        "time_to_reset_all_s": round(run.reset_all.as_secs_f64()),
        "script_phase_s": round(run.script_wall.as_secs_f64()),
        "release_all_s": round(run.release_all.as_secs_f64()),
        "actions_acknowledged": overall["actions_acknowledged"],
        "actions_per_second": overall["actions_per_second"],
        "memory": { "all": overall, "per_profile": profiles },
        "operations": summaries
            .iter()
            .map(|(op, summary)| (op.clone(), summary.to_json()))
            .collect::<serde_json::Map<String, Value>>(),
        "typed_failures": typed,
        "untyped_failures": untyped,
        "outcome_problems": outcomes,
        "outcomes_checked": run.desks.iter().filter(|desk| desk.outcome_checked).count(),
        "leftovers": leftovers,
        "host": run.host,
        "table": table(&summaries),
        "memory_table": memory_table(run),
    })
}

fn memory_table(run: &Run<'_>) -> String {
    let mut out = format!(
        "{:<10} {:>8} {:>13} {:>13} {:>13} {:>14} {:>9}\n",
        "profile",
        "desktops",
        "PSS mean MiB",
        "PSS min MiB",
        "PSS max MiB",
        "PSS total MiB",
        "actions/s"
    );
    let mut rows: Vec<(String, Vec<&Desk>)> = run
        .mix
        .0
        .iter()
        .map(|(name, _)| {
            let desks = run
                .desks
                .iter()
                .filter(|desk| desk.profile == *name)
                .collect();
            (name.clone(), desks)
        })
        .collect();
    rows.push(("all".to_string(), run.desks.iter().collect()));
    for (name, desks) in rows {
        let row = profile_row(&desks, run.script_wall);
        let number = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
        out.push_str(&format!(
            "{:<10} {:>8} {:>13.1} {:>13.1} {:>13.1} {:>14.1} {:>9.2}\n",
            name,
            desks.len(),
            number("pss_mib_mean"),
            number("pss_mib_min"),
            number("pss_mib_max"),
            number("pss_mib_total"),
            number("actions_per_second")
        ));
    }
    out
}

/// Prints the tables and the headline numbers.
pub(crate) fn print_summary(report: &Value) -> anyhow::Result<()> {
    let count = |key: &str| report[key].as_array().map_or(0, Vec::len);
    outln!(
        "deskbroker load --desktops {} on {}: time to reset all {} s, scripts {} s, release all \
         {} s",
        report["desktops"],
        report["display"].as_str().unwrap_or("?"),
        report["time_to_reset_all_s"],
        report["script_phase_s"],
        report["release_all_s"]
    );
    outln!();
    out!("{}", report["table"].as_str().unwrap_or_default());
    outln!();
    out!("{}", report["memory_table"].as_str().unwrap_or_default());
    outln!();
    outln!(
        "actions: {} acknowledged, {} actions/s; host load average {} before, {} after the \
         scripts",
        report["actions_acknowledged"],
        report["actions_per_second"],
        report["host"]["load_average_before"],
        report["host"]["load_average_after_scripts"]
    );
    outln!(
        "failures: {} refused (typed), {} untyped; outcomes checked {}, problems {}; leftovers \
         after release: {}",
        count("typed_failures"),
        count("untyped_failures"),
        report["outcomes_checked"],
        count("outcome_problems"),
        count("leftovers")
    );
    for key in [
        "typed_failures",
        "untyped_failures",
        "outcome_problems",
        "leftovers",
    ] {
        for line in report[key].as_array().into_iter().flatten().take(10) {
            outln!("  {key}: {}", line.as_str().unwrap_or_default());
        }
    }
    Ok(())
}

/// Whether the run passed: every desktop ready with its outcome checked and right, no failure
/// of any kind, nothing left.
pub(crate) fn passed(report: &Value, n_desktops: usize) -> bool {
    let empty = |key: &str| report[key].as_array().is_some_and(Vec::is_empty);
    report["desktops_ready"] == json!(n_desktops)
        && report["outcomes_checked"] == json!(n_desktops)
        && [
            "typed_failures",
            "untyped_failures",
            "outcome_problems",
            "leftovers",
        ]
        .into_iter()
        .all(empty)
}
