//! `bench run --jobs/--shard/--broker-socket` and `bench merge` against a running
//! `serve --backend fake` broker (no Xvfb): two shards merged equal one `--jobs 2` run except
//! timings, and every refusal names its conflict. The real-desktop `--jobs 2` run is in
//! `bench.rs`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{FakeServer, deskbroker};

fn bench(args: &[&str], cache: &Path) -> Output {
    Command::new(deskbroker())
        .args(["--log", "warn", "bench"])
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap()
}

fn ok(output: Output) -> Output {
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn refused(output: Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "must be refused: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// The rows without their timings.
fn rows(summary: &Value) -> Vec<Value> {
    summary["rollouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let mut row = row.clone();
            let map = row.as_object_mut().unwrap();
            assert!(map.remove("wall_time_ms").is_some());
            assert!(map.remove("total_ms").is_some());
            row
        })
        .collect()
}

#[test]
fn shards_merged_equal_one_parallel_run() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let fake = FakeServer::start(root.path(), &[]);
    let socket = fake.socket.to_str().unwrap().to_owned();
    let dir = |name: &str| root.path().join(name);
    let run = |out: &Path, attempt: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--agent",
            "oracle",
            "--task",
            "task-001",
            "--task",
            "task-002",
            "--task",
            "task-003",
            "--broker-socket",
            &socket,
            "--allow-unsandboxed",
            "--attempt-id",
            attempt,
            "--out",
        ];
        args.push(out.to_str().unwrap());
        args.extend_from_slice(extra);
        bench(&args, &cache)
    };
    let whole = dir("whole");
    let stdout = ok(run(&whole, "whole", &["--jobs", "2"])).stdout;
    let whole_summary = summary(&whole);
    let run_info = &whole_summary["run"];
    assert_eq!(run_info["jobs"], 2);
    assert_eq!(run_info["broker"]["mode"], "external");
    assert_eq!(run_info["broker"]["sandbox_required"], false);
    assert_eq!(run_info["broker"]["gold_private_path"], "operator");
    assert!(run_info["speedup"].as_f64().unwrap() > 0.0, "{run_info}");
    let order: Vec<&str> = whole_summary["rollouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["task-001", "task-002", "task-003"], "task order");
    let table = String::from_utf8_lossy(&stdout);
    let at = |task: &str| table.find(task).unwrap();
    assert!(at("task-001") < at("task-002") && at("task-002") < at("task-003"));

    // Shard 1/2 holds positions 0 and 2, shard 2/2 position 1.
    let (one, two) = (dir("shard1"), dir("shard2"));
    ok(run(&one, "s1", &["--shard", "1/2"]));
    ok(run(&two, "s2", &["--shard", "2/2", "--jobs", "3"]));
    let first = summary(&one);
    assert_eq!(first["run"]["shard"]["index"], 1);
    assert_eq!(first["run"]["shard"]["count"], 2);
    assert_eq!(first["rollouts"].as_array().unwrap().len(), 2);
    assert_eq!(summary(&two)["rollouts"][0]["task_id"], "task-002");

    let merged = dir("merged");
    ok(bench(
        &[
            "merge",
            two.to_str().unwrap(),
            one.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
        &cache,
    ));
    let merged_summary = summary(&merged);
    assert_eq!(rows(&merged_summary), rows(&whole_summary));
    for key in [
        "n_rollouts",
        "n_done",
        "n_infra_error",
        "mean_score",
        "corpus_version",
    ] {
        assert_eq!(merged_summary[key], whole_summary[key], "{key}");
    }
    assert_eq!(merged_summary["rollouts"].as_array().unwrap().len(), 3);
    assert_eq!(
        merged_summary["run"]["merged_from"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for task in ["task-001", "task-002", "task-003"] {
        assert!(
            merged
                .join(format!("rollouts/{task}/rollout.json"))
                .exists()
        );
    }
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(html.contains("rollouts/task-002/candidate.png"));

    // Refusals name the conflict and write nothing.
    let again = dir("again");
    let merge = |dirs: &[&Path], out: &Path| {
        let mut args = vec!["merge".to_owned()];
        args.extend(dirs.iter().map(|d| d.to_str().unwrap().to_owned()));
        args.extend(["--out".to_owned(), out.to_str().unwrap().to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        bench(&args, &cache)
    };
    refused(
        merge(&[&one, &whole], &again),
        &["task task-001 is in both"],
    );
    assert!(!again.exists(), "a refused merge writes nothing");
    let other = dir("other-corpus");
    std::fs::create_dir_all(&other).unwrap();
    let mut edited = summary(&two);
    edited["corpus_version"] = "deskbroker-cad-corpus-v0".into();
    std::fs::write(other.join("summary.json"), edited.to_string()).unwrap();
    std::fs::create_dir_all(other.join("rollouts")).unwrap();
    copy_rollout(&two, &other, "task-002");
    refused(
        merge(&[&one, &other], &again),
        &["corpus_version differs", "deskbroker-cad-corpus-v0"],
    );
    let mut record: Value = serde_json::from_slice(
        &std::fs::read(other.join("rollouts/task-002/rollout.json")).unwrap(),
    )
    .unwrap();
    edited["corpus_version"] = first["corpus_version"].clone();
    std::fs::write(other.join("summary.json"), edited.to_string()).unwrap();
    record["agent"]["model"] = "someone-else".into();
    std::fs::write(
        other.join("rollouts/task-002/rollout.json"),
        record.to_string(),
    )
    .unwrap();
    refused(
        merge(&[&one, &other], &again),
        &["agent differs", "oracle (someone-else)"],
    );
    refused(merge(&[&one, &two], &merged), &["already holds results"]);

    // Bad flags are refused before anything runs, never clamped.
    for (flag, value, needle) in [
        ("--jobs", "0", "at least one rollout"),
        ("--jobs", "33", "at most 32"),
        ("--shard", "0/2", "numbered from 1"),
        ("--shard", "3/2", "larger than N"),
        ("--shard", "1of2", "expected I/N"),
    ] {
        let out = dir("never");
        refused(run(&out, "never", &[flag, value]), &[needle]);
        assert!(!out.exists(), "{flag} {value}");
    }
    let missing = root.path().join("nobody.sock");
    refused(
        bench(
            &[
                "run",
                "--task",
                "task-001",
                "--broker-socket",
                missing.to_str().unwrap(),
                "--out",
                dir("never").to_str().unwrap(),
            ],
            &cache,
        ),
        &["no deskbroker answers on"],
    );
}

fn copy_rollout(from: &Path, to: &Path, task: &str) {
    let (from, to) = (
        from.join("rollouts").join(task),
        to.join("rollouts").join(task),
    );
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}
