//! `deskbroker bench validity`: checks the judges against held-out perturbations of every
//! selected task's gold (`desk_cad::validity`), a few tasks at once, and writes
//! `validity.json`. The corpus is generated in memory (3D golds are rebuilt from their specs by
//! the trusted builder), so no cache or gold directory is read.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use desk_cad::validity::{TaskValidity, ValidityGold, validate_task};
use desk_cad::{CorpusVersion, DrawingType, Split, generate_corpus_version};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::corpus::{SplitArg, parse_corpus_version};

/// The report file in `--out`.
const REPORT_FILE: &str = "validity.json";

#[derive(Debug, Args)]
pub(crate) struct ValidityArgs {
    /// Which split to check.
    #[arg(long, value_enum, default_value = "dev")]
    pub(crate) split: SplitArg,
    /// Check only these task ids (repeatable, e.g. --task task-004 --task task-031); overrides
    /// --split.
    #[arg(long = "task")]
    pub(crate) tasks: Vec<String>,
    /// Tasks checked at once. A 3D task runs its sandboxed freecadcmd processes one after
    /// another (about 10 s a task), so more jobs than cores gains nothing.
    #[arg(long, default_value_t = 1)]
    pub(crate) jobs: usize,
    /// Out directory: validity.json, and with --keep-files every case's file under
    /// files/<task>/.
    #[arg(long, default_value = "validity-out")]
    pub(crate) out: PathBuf,
    /// Keep the perturbed and invalid files (otherwise removed once judged).
    #[arg(long)]
    pub(crate) keep_files: bool,
    /// The corpus version: v1 (28 2D tasks), v2 (50 tasks, 21 2D + 29 3D) or v3 (v2 with the
    /// drafting categories in its 2D tasks).
    #[arg(long, value_parser = parse_corpus_version, default_value = "v3")]
    pub(crate) corpus_version: CorpusVersion,
}

/// The `validity.json` document.
#[derive(Debug, Serialize)]
struct ValidityRun {
    corpus_version: String,
    passed: bool,
    wall_ms: u64,
    tasks: Vec<TaskValidity>,
    /// Tasks whose judge itself failed (no sandbox, a gold that did not build).
    errors: Vec<TaskError>,
}

#[derive(Debug, Serialize)]
struct TaskError {
    task: String,
    error: String,
}

struct Item<'a> {
    id: String,
    gold: ValidityGold<'a>,
}

pub(crate) fn validity(args: &ValidityArgs) -> Result<()> {
    let started = Instant::now();
    let (drawings, parts) = generate_corpus_version(args.corpus_version);
    let mut items: Vec<(Item<'_>, Split)> = drawings
        .iter()
        .map(|d| {
            (
                item(d.task.id.as_str(), ValidityGold::Drawing(&d.gold)),
                d.task.split,
            )
        })
        .collect();
    items.extend(parts.iter().map(|p| {
        (
            item(p.task.id.as_str(), ValidityGold::Part(&p.part)),
            p.task.split,
        )
    }));
    for id in &args.tasks {
        if !items.iter().any(|(item, _)| &item.id == id) {
            bail!("unknown task {id}");
        }
    }
    let items: Vec<Item<'_>> = items
        .into_iter()
        .filter(|(item, split)| match (args.tasks.is_empty(), args.split) {
            (false, _) => args.tasks.contains(&item.id),
            (true, SplitArg::All) => true,
            (true, SplitArg::Dev) => *split == Split::Dev,
            (true, SplitArg::Eval) => *split == Split::Eval,
        })
        .map(|(item, _)| item)
        .collect();
    if items.is_empty() {
        bail!("no task selected");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("failed to create {}", args.out.display()))?;
    let results = run_all(&items, args);
    if !args.keep_files {
        // Every job's directory is gone by now; a non-empty one (another run's) stays.
        let _ = std::fs::remove_dir(args.out.join("files"));
    }
    let mut run = ValidityRun {
        corpus_version: args.corpus_version.as_str().to_owned(),
        passed: true,
        wall_ms: 0,
        tasks: Vec::new(),
        errors: Vec::new(),
    };
    for (item, result) in items.iter().zip(results) {
        match result {
            Ok(report) => run.tasks.push(report),
            Err(error) => run.errors.push(TaskError {
                task: item.id.clone(),
                error,
            }),
        }
    }
    run.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    run.passed = run.errors.is_empty() && run.tasks.iter().all(TaskValidity::passed);
    out!("{}", format_table(&run));
    let path = args.out.join(REPORT_FILE);
    let mut json = serde_json::to_vec_pretty(&run)?;
    json.push(b'\n');
    std::fs::write(&path, json).with_context(|| format!("failed to write {}", path.display()))?;
    outln!("report: {}", path.display());
    if !run.passed {
        let n_failed = run.tasks.iter().filter(|t| !t.passed()).count() + run.errors.len();
        bail!(
            "{n_failed} task(s) failed judge validity (see {})",
            path.display()
        );
    }
    Ok(())
}

fn item<'a>(id: &str, gold: ValidityGold<'a>) -> Item<'a> {
    Item {
        id: id.to_owned(),
        gold,
    }
}

/// Checks every item, `--jobs` at a time; results in item order.
fn run_all(items: &[Item<'_>], args: &ValidityArgs) -> Vec<Result<TaskValidity, String>> {
    let progress = ProgressBar::new(items.len() as u64);
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} validity {pos}/{len} [{elapsed_precise}] {bar:30} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.enable_steady_tick(Duration::from_millis(200));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<TaskValidity, String>>>> =
        Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.max(1) {
            scope.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let result = check(item, args);
                    log_result(&item.id, &result);
                    progress.inc(1);
                    progress.set_message(item.id.clone());
                    let idx = items.iter().position(|other| other.id == item.id);
                    if let (Ok(mut slots), Some(idx)) = (results.lock(), idx) {
                        slots[idx] = Some(result);
                    }
                }
            });
        }
    });
    progress.finish_and_clear();
    let slots = results.into_inner().unwrap_or_default();
    slots
        .into_iter()
        .map(|slot| slot.unwrap_or_else(|| Err("not checked".to_owned())))
        .collect()
}

fn check(item: &Item<'_>, args: &ValidityArgs) -> Result<TaskValidity, String> {
    let work = args.out.join("files").join(&item.id);
    let _ = std::fs::remove_dir_all(&work);
    // The cases are copies of scorer-private gold: owner-only, like the gold directory.
    crate::policy_cmd::create_private_dir(&work).map_err(|error| format!("{error:#}"))?;
    let result = validate_task(&item.id, item.gold, &work).map_err(|error| format!("{error:#}"));
    if !args.keep_files {
        let _ = std::fs::remove_dir_all(&work);
    }
    result
}

fn log_result(id: &str, result: &Result<TaskValidity, String>) {
    match result {
        Ok(report) if report.passed() => tracing::info!(
            task = id,
            min_margin = report.min_margin(),
            elapsed_ms = report.elapsed_ms,
            "judge validity held"
        ),
        Ok(report) => {
            tracing::warn!(task = id, failed = ?report.failures(), "judge validity failed")
        }
        Err(error) => tracing::error!(task = id, error = %error, "judge validity could not run"),
    }
}

/// The per-task table: task, kind, cases passed, the gold's score, the least margin between
/// the gold and a perturbed attempt, the task's time, and what failed.
fn format_table(run: &ValidityRun) -> String {
    use std::fmt::Write as _;
    let mut table = String::new();
    let _ = writeln!(
        table,
        "{:<10} {:<4} {:>7} {:>6} {:>10} {:>8}  status",
        "task", "kind", "cases", "gold", "min margin", "time s"
    );
    for task in &run.tasks {
        let n_passed = task.cases.iter().filter(|c| c.pass).count();
        let kind = serde_json::to_value(task.kind).ok();
        let kind = kind.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        let status = if task.passed() {
            "ok".to_owned()
        } else {
            format!("FAIL: {}", task.failures().join(", "))
        };
        let _ = writeln!(
            table,
            "{:<10} {:<4} {:>3}/{:<3} {:>6.3} {:>10.4} {:>8.1}  {status}",
            task.task,
            kind,
            n_passed,
            task.cases.len(),
            task.gold_score,
            task.min_margin(),
            task.elapsed_ms as f64 / 1000.0,
        );
    }
    for error in &run.errors {
        let _ = writeln!(table, "{:<10} error: {}", error.task, error.error);
    }
    for (kind, name) in [(DrawingType::ThreeD, "3D"), (DrawingType::TwoD, "2D")] {
        let mut times: Vec<u64> = run
            .tasks
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| t.elapsed_ms)
            .collect();
        times.sort_unstable();
        if let Some(median) = median_ms(&times) {
            let _ = writeln!(
                table,
                "median per {name} task: {:.1} s ({} tasks)",
                median / 1000.0,
                times.len()
            );
        }
    }
    let n_cases: usize = run.tasks.iter().map(|t| t.cases.len()).sum();
    let _ = writeln!(
        table,
        "{} tasks, {n_cases} cases, {} in {:.1} s",
        run.tasks.len() + run.errors.len(),
        if run.passed { "all held" } else { "FAILED" },
        run.wall_ms as f64 / 1000.0
    );
    table
}

/// The median of sorted times, in ms; none when empty.
fn median_ms(sorted: &[u64]) -> Option<f64> {
    let n = sorted.len();
    let mid = sorted.get(n / 2).copied()? as f64;
    Some(if n.is_multiple_of(2) {
        (sorted.get(n / 2 - 1).copied().unwrap_or_default() as f64 + mid) / 2.0
    } else {
        mid
    })
}
