//! `deskbroker bench` end to end: the corpus and score subcommands (corpus v1), and the oracle
//! over corpus v3's dev split with `--jobs 2` on real desktops: the three 2D tasks in LibreCAD
//! (each at least 0.99, rows in task order) and the four 3D tasks in FreeCAD (the oracle's GUI
//! recipe: each at least 0.99, every category at least 0.99, the sheet's parts full but its presentation), then the 3D gold scored
//! through `bench score` and a replay of one recorded rollout; `bench validity` on two 2D tasks.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{deskbroker, xvfb_available};

fn bench(args: &[&str], cache: &Path) -> Output {
    let output = Command::new(deskbroker())
        .arg("--log")
        .arg("warn")
        .arg("bench")
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "bench {args:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub(crate) fn librecad_available() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v librecad"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "librecad not found but DESK_REQUIRE_XVFB=1"
        );
        println!("skipped: librecad not found");
    }
    found
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn corpus_and_score_subcommands() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let public = root.path().join("public");
    let gold = root.path().join("gold");
    bench(
        &[
            "corpus",
            "--corpus-version",
            "v1",
            "--out",
            public.to_str().unwrap(),
            "--gold-out",
            gold.to_str().unwrap(),
        ],
        &cache,
    );
    let tasks = read_json(&public.join("tasks.json"));
    assert_eq!(tasks["tasks"].as_array().unwrap().len(), 28);
    assert!(public.join("references/task-001.png").exists());
    assert!(!public.join("task-001.dxf").exists(), "no gold in public");

    // The gold itself scores 1, through the cached corpus; a non-DXF scores 0.
    let output = bench(
        &[
            "score",
            "--corpus-version",
            "v1",
            "--task",
            "task-001",
            "--candidate",
            gold.join("task-001.dxf").to_str().unwrap(),
        ],
        &cache,
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["score"], 1.0, "{report}");
    let junk = root.path().join("junk.dxf");
    std::fs::write(&junk, "not a drawing").unwrap();
    let output = bench(
        &[
            "score",
            "--corpus-version",
            "v1",
            "--task",
            "task-001",
            "--candidate",
            junk.to_str().unwrap(),
        ],
        &cache,
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["score"], 0.0);
    assert_eq!(report["zero_reason"], "unreadable");

    // A reader that closes the pipe before the report is written (`… | head -c0`) ends the
    // command quietly with success, not with a `println!` panic.
    let mut child = Command::new(deskbroker())
        .args([
            "--log",
            "warn",
            "bench",
            "score",
            "--task",
            "task-001",
            "--candidate",
        ])
        .arg(gold.join("task-001.dxf"))
        .env("XDG_CACHE_HOME", &cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
}

#[test]
fn oracle_runs_the_dev_split_in_librecad_and_freecad() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let out = root.path().join("dev");
    let output = bench(
        &[
            "run",
            "--split",
            "dev",
            "--agent",
            "oracle",
            "--jobs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
        &cache,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["contract_version"], "deskbroker-bench-contract-v1");
    let run = &summary["run"];
    println!("run: {run}");
    assert_eq!(run["jobs"], 2);
    assert_eq!(run["broker"]["mode"], "in_process");
    assert_eq!(run["broker"]["sandbox_required"], true);
    // Two desktops at once: the rollouts' durations add up to more than the wall time.
    assert!(run["speedup"].as_f64().unwrap() > 1.0, "{run}");
    assert_eq!(run["memory"]["desktops"], 7, "every desktop sampled: {run}");
    let pss = run["memory"]["mean_peak_pss_kib"].as_u64().unwrap();
    assert!(
        pss > 20_000,
        "a desktop with LibreCAD holds more than 20 MB: {run}"
    );
    assert!(
        run["memory"]["max_total_pss_kib"].as_u64().unwrap() > pss,
        "two desktops were up at once: {run}"
    );
    let rows = summary["rollouts"].as_array().unwrap();
    assert_eq!(rows.len(), 7, "the dev split has seven tasks");
    let order: Vec<&str> = rows
        .iter()
        .map(|row| row["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "task-004", "task-011", "task-018", "task-025", "task-032", "task-039", "task-046"
        ]
    );
    assert!(stdout.contains("3d: 4 scored"), "per-kind means: {stdout}");
    for row in &rows[3..] {
        let task = row["task_id"].as_str().unwrap();
        assert_eq!(row["drawing_type"], "3d", "{row}");
        assert_eq!(row["status"], "done", "{row}");
        assert_eq!(row["infra_error"], false, "{row}");
        assert!(row["score"].as_f64().unwrap() >= 0.99, "{row}");
        let dir = out.join("rollouts").join(task);
        let record = read_json(&dir.join("rollout.json"));
        assert_eq!(record["corpus_version"], "deskbroker-cad-corpus-v3");
        assert_eq!(record["budgets"]["wall_time_s"], 1800);
        assert_eq!(record["workspace"]["sandbox"], "on", "{task}");
        assert!(
            record["versions"]["app"]
                .as_str()
                .unwrap()
                .starts_with("freecad"),
            "{task}: {}",
            record["versions"]
        );
        // FreeCAD was leased, handed off and checkpointed; the 3D judge read the document.
        assert_eq!(record["artifact"]["path"], "attempt.FCStd", "{task}");
        assert!(dir.join("attempt.FCStd").is_file());
        assert_eq!(
            record["score"]["scorer_version"],
            desk_cad::score3d::SOLID_SCORER_VERSION
        );
        assert!(record["score"]["zero_reason"].is_null(), "{task}");
        // The part through Part primitives and booleans, the sheet through TechDraw: every
        // category of the judge is full, the sheet's views, arrangement (the oracle places each
        // view in its cell of the gold's grid), scale, dimensions and notes included, and its
        // presentation nearly so: the seam edges its fused primitives leave are not drawn
        // (scorer v6; v5 drew them: 0.81-0.84 on the plates). Scorer v6 measured 0.9994-1.0.
        // Callouts (v7) full: the oracle adds no centre line or cosmetic edge, and types a
        // section's symbol (1.0 on all 29 3D tasks; the dev split's have no section).
        let sheet = &record["score"]["sheet"];
        for category in record["score"]["categories"].as_array().unwrap() {
            assert!(
                category["score"].as_f64().unwrap() >= 0.99,
                "{task}: {category}"
            );
        }
        for item in [
            "views_f1",
            "arrangement",
            "dimensions_f1",
            "notes_f1",
            "callouts",
        ] {
            assert_eq!(sheet[item], 1.0, "{task}: {sheet}");
        }
        assert!(
            sheet["presentation"].as_f64().unwrap() >= 0.99,
            "{task}: {sheet}"
        );
        assert!(
            sheet["scale"].is_null() || sheet["scale"] == 1.0,
            "{task}: {sheet}"
        );
    }
    // The 3D gold stays private, and scores the maximum through `bench score`.
    let corpus = cache.join("deskbroker/corpus/deskbroker-cad-corpus-v3");
    assert!(corpus.join("private/task-025.FCStd").is_file());
    assert!(corpus.join("public/references/task-025.png").is_file());
    assert!(!corpus.join("public/task-025.FCStd").exists());
    let output = bench(
        &[
            "score",
            "--task",
            "task-025",
            "--candidate",
            corpus.join("private/task-025.FCStd").to_str().unwrap(),
        ],
        &cache,
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["scorer_version"],
        desk_cad::score3d::SOLID_SCORER_VERSION
    );
    assert!(report["score"].as_f64().unwrap() >= 0.999, "{report}");
    for row in &rows[..3] {
        let task = row["task_id"].as_str().unwrap();
        assert!(stdout.contains(task), "the table lists {task}");
        assert_eq!(row["status"], "done", "{row}");
        assert!(row["score"].as_f64().unwrap() >= 0.99, "{row}");
        let dir = out.join("rollouts").join(task);
        let record = read_json(&dir.join("rollout.json"));
        assert_eq!(record["corpus_version"], "deskbroker-cad-corpus-v3");
        assert_eq!(
            record["versions"]["app"]
                .as_str()
                .unwrap()
                .split(' ')
                .next(),
            Some("librecad")
        );
        assert_eq!(record["budgets"]["max_actions"], 5000);
        assert_eq!(record["budgets"]["wall_time_s"], 900);
        for key in [
            "events",
            "frame_events",
            "reference",
            "candidate_render",
            "overlay",
        ] {
            let rel = record["paths"][key].as_str().unwrap();
            assert!(dir.join(rel).exists(), "{task}: {key} {rel}");
        }
        let frame = record["trace"][0]["items"][0]["frame"].as_str().unwrap();
        assert!(dir.join(frame).exists());
        assert_eq!(
            record["artifact"]["sha256"].as_str().unwrap().len(),
            64,
            "{task}"
        );
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("rollouts/task-004/candidate.png"));

    // Replaying the recorded L1 rollout reproduces the drawing.
    let replay = root.path().join("replay");
    let recorded = out.join("rollouts/task-004/rollout.json");
    bench(
        &[
            "run",
            "--agent",
            "replay",
            "--replay",
            recorded.to_str().unwrap(),
            "--out",
            replay.to_str().unwrap(),
        ],
        &cache,
    );
    let summary = read_json(&replay.join("summary.json"));
    let rows = summary["rollouts"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["task_id"], "task-004");
    assert!(rows[0]["score"].as_f64().unwrap() >= 0.99, "{}", rows[0]);
}

/// `bench validity` on two 2D tasks (pure Rust, no FreeCAD): the table, `validity.json`, and a
/// refused unknown task.
#[test]
fn validity_subcommand_checks_the_judges() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("validity");
    let out_arg = out.to_str().unwrap();
    let args = [
        "validity", "--task", "task-001", "--task", "task-021", "--jobs", "2",
    ];
    let output = bench(&[&args[..], &["--out", out_arg]].concat(), root.path());
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("min margin"), "{table}");
    assert!(table.contains("task-021   2d"), "{table}");
    let report = read_json(&out.join("validity.json"));
    assert_eq!(report["passed"], true, "{report}");
    let tasks = report["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(ids, ["task-001", "task-021"]);
    assert!(tasks.iter().all(|t| t["gold_score"] == 1.0));
    assert!(
        !out.join("files").exists(),
        "case files are removed unless kept"
    );
    let refused = Command::new(deskbroker())
        .args([
            "--log", "warn", "bench", "validity", "--task", "task-999", "--out", out_arg,
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown task task-999"));
}
