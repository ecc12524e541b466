//! `bench run --settle-validate-ms`'s table (`docs/settle.md`, "Validation mode"): per task and
//! overall, how many actions were validated, how many settled frames equalled the later frame
//! (same, or a caret only), and the differences by kind; every difference is listed in
//! `settle-validation.json` (mode 0600) beside the summary with its action, rule, box, kind
//! and the settled frame to look at. With `--settle-validate-every N` the table says it covers
//! the sample: each session's actions 0, N, 2N, ….

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use anyhow::{Context, Result};
use desk_contract::settle::{SettleRule, ValidationKind};
use desk_harness::RolloutRecord;
use desk_harness::Summary;
use serde::Serialize;

/// The file listing every difference, in the out directory.
pub(crate) const MISMATCH_FILE: &str = "settle-validation.json";

/// One task's (or the run's) counts.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    /// Actions with a validation (stable settles in validation mode).
    pub(crate) validated: u64,
    /// The later frame was pixel-identical.
    pub(crate) same: u64,
    /// Only a caret-sized rectangle changed.
    pub(crate) caret: u64,
    /// Anything more changed.
    pub(crate) differ: u64,
    /// Of those, decided by the quiet-time rule rather than the idle rule.
    pub(crate) differ_quiet_timer: u64,
    /// Of those, decided by the idle rule with an undated timer (`app_idle_undated_timer`).
    pub(crate) differ_undated: u64,
    /// The differences by kind (`unknown`: a worker that did not classify).
    pub(crate) by_kind: BTreeMap<&'static str, u64>,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.validated += other.validated;
        self.same += other.same;
        self.caret += other.caret;
        self.differ += other.differ;
        self.differ_quiet_timer += other.differ_quiet_timer;
        self.differ_undated += other.differ_undated;
        for (kind, count) in &other.by_kind {
            *self.by_kind.entry(kind).or_default() += count;
        }
    }

    /// Same or caret only, in percent of the validated (100 when none was).
    pub(crate) fn percent(&self) -> f64 {
        if self.validated == 0 {
            return 100.0;
        }
        (self.same + self.caret) as f64 * 100.0 / self.validated as f64
    }
}

/// One difference, as `settle-validation.json` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Mismatch {
    task_id: String,
    action_index: u64,
    action_type: String,
    intent: String,
    rule: SettleRule,
    wait_ms: u64,
    after_ms: u64,
    changed_pixels: u64,
    changed_box: Option<[u32; 4]>,
    kind: Option<ValidationKind>,
    /// The settled frame, relative to the out directory.
    frame: Option<String>,
}

/// Counts one rollout's receipts; its differences go to `mismatches`.
pub(crate) fn count(
    record: &RolloutRecord,
    rollout_dir: &str,
    mismatches: &mut Vec<Mismatch>,
) -> Counts {
    let mut counts = Counts::default();
    for item in record.trace.iter().flat_map(|turn| &turn.items) {
        let Some(receipt) = &item.receipt else {
            continue;
        };
        let Some(validation) = &receipt.settle.validation else {
            continue;
        };
        counts.validated += 1;
        if validation.changed_pixels == 0 {
            counts.same += 1;
        } else if validation.same_but_caret() {
            counts.caret += 1;
        } else {
            counts.differ += 1;
            match receipt.settle.rule {
                SettleRule::AppIdle => {}
                SettleRule::AppIdleUndatedTimer => counts.differ_undated += 1,
                _ => counts.differ_quiet_timer += 1,
            }
            let kind = validation.kind.map_or("unknown", ValidationKind::as_str);
            *counts.by_kind.entry(kind).or_default() += 1;
            mismatches.push(Mismatch {
                task_id: record.task_id.clone(),
                action_index: item.action_index,
                action_type: item.action_type.clone(),
                intent: item.intent.clone(),
                rule: receipt.settle.rule,
                wait_ms: receipt.settle.wait_ms,
                after_ms: validation.after_ms,
                changed_pixels: validation.changed_pixels,
                changed_box: validation.changed_box,
                kind: validation.kind,
                frame: item
                    .frame
                    .as_ref()
                    .map(|frame| format!("{rollout_dir}/{frame}")),
            });
        }
    }
    counts
}

/// In validation mode (`--settle-validate-ms`, one action in `every` validated), prints the
/// table and writes [`MISMATCH_FILE`]; otherwise nothing.
pub(crate) fn print(out: &Path, summary: &Summary, every: u32) -> Result<()> {
    if let Some(table) = table(out, summary, every)? {
        out!("{table}");
    }
    Ok(())
}

/// The validation table of a run in `out`, or `None` when no action was validated; writes
/// [`MISMATCH_FILE`] (mode 0600) when there is a table.
pub(crate) fn table(out: &Path, summary: &Summary, every: u32) -> Result<Option<String>> {
    let mut rows = Vec::new();
    let mut mismatches = Vec::new();
    for row in &summary.rollouts {
        let path = out.join(&row.record);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let record: RolloutRecord = serde_json::from_str(&text)
            .with_context(|| format!("failed to read {}", path.display()))?;
        let dir = row.record.rsplit_once('/').map_or("", |(dir, _)| dir);
        rows.push((row.task_id.clone(), count(&record, dir, &mut mismatches)));
    }
    let mut total = Counts::default();
    for (_, counts) in &rows {
        total.add(counts);
    }
    if total.validated == 0 {
        return Ok(None);
    }
    let file = out.join(MISMATCH_FILE);
    let mut writer = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&file)
        .with_context(|| format!("failed to create {}", file.display()))?;
    writer.write_all(&serde_json::to_vec_pretty(&mismatches)?)?;
    rows.push(("all".to_owned(), total));
    Ok(Some(format_rows(&rows, every)))
}

/// The table: what was sampled, one line per task and the total.
pub(crate) fn format_rows(rows: &[(String, Counts)], every: u32) -> String {
    let sample = match every {
        0 | 1 => "every stable action".to_owned(),
        every => format!(
            "stable actions 0, {every}, {}, … of each session",
            2 * every
        ),
    };
    let mut text = format!(
        "settle validation of {sample} (later frame vs settled frame; differences in \
         {MISMATCH_FILE})\n\
         {:<9} {:>9} {:>6} {:>6} {:>6} {:>9} {:>6} {:>7}  differences by kind\n",
        "task", "validated", "same", "caret", "differ", "same|car%", "quiet", "undated"
    );
    for (task, counts) in rows {
        let kinds: Vec<String> = counts
            .by_kind
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect();
        text.push_str(&format!(
            "{:<9} {:>9} {:>6} {:>6} {:>6} {:>8.2}% {:>6} {:>7}  {}\n",
            task,
            counts.validated,
            counts.same,
            counts.caret,
            counts.differ,
            counts.percent(),
            counts.differ_quiet_timer,
            counts.differ_undated,
            kinds.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_sums_tasks_and_names_kinds() {
        let mut one = Counts {
            validated: 10,
            same: 7,
            caret: 1,
            differ: 2,
            differ_quiet_timer: 1,
            ..Counts::default()
        };
        one.by_kind.insert("tooltip", 1);
        one.by_kind.insert("status_bar", 1);
        let mut two = Counts {
            validated: 30,
            same: 29,
            differ: 1,
            ..Counts::default()
        };
        two.by_kind.insert("tooltip", 1);
        let mut total = Counts::default();
        total.add(&one);
        total.add(&two);
        assert_eq!(
            (total.validated, total.same, total.caret, total.differ),
            (40, 36, 1, 3)
        );
        assert_eq!(total.by_kind.get("tooltip"), Some(&2));
        assert!((total.percent() - 92.5).abs() < 1e-9);
        assert!((Counts::default().percent() - 100.0).abs() < 1e-9);
        let rows = [("task-004".to_owned(), one), ("all".to_owned(), total)];
        let text = format_rows(&rows, 1);
        assert!(text.contains("status_bar 1, tooltip 1"), "{text}");
        assert!(text.contains("92.50%"), "{text}");
        assert!(
            text.starts_with("settle validation of every stable action"),
            "{text}"
        );
        let sampled = format_rows(&rows, 4);
        assert!(
            sampled.contains("stable actions 0, 4, 8, … of each session"),
            "{sampled}"
        );
    }
}
