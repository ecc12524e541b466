//! What `bench run` prints when its stderr is a pipe (a CI log): no escape sequences, quiet
//! logs by default, one header line naming the jobs chosen and why, one progress line per
//! finished rollout, and the jobs again below the table on stdout. On real LibreCAD desktops
//! through the in-process broker (two L1 tasks, the default jobs), and against a fake broker,
//! which needs no Xvfb.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::bench::librecad_available;
use crate::support::{FakeServer, deskbroker, xvfb_available};

/// `deskbroker [--log LEVEL] bench run ARGS` with stderr piped and no log settings inherited.
fn bench_run(log: Option<&str>, args: &[&str], cache: &Path) -> Output {
    let mut command = Command::new(deskbroker());
    if let Some(level) = log {
        command.args(["--log", level]);
    }
    let output = command
        .args(["bench", "run"])
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("RUST_LOG")
        .env_remove("DESKBROKER_LOG")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Checks the piped stderr and stdout of a default-jobs run of `tasks`; returns the jobs.
fn check_piped(output: &Output, tasks: &[&str], out: &Path) -> u64 {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("stderr:\n{stderr}\nstdout:\n{stdout}");
    assert!(!stderr.contains('\x1b'), "no escape sequence in a pipe");
    assert!(!stdout.contains('\x1b'), "no escape sequence in a pipe");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.len() < 50, "{} lines: quiet by default", lines.len());
    assert!(
        !stderr.contains(" INFO ") && !stderr.contains(" DEBUG "),
        "no info logs by default"
    );

    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let jobs = summary["run"]["jobs"].as_u64().unwrap();
    let reason = summary["run"]["jobs_reason"].as_str().unwrap();
    assert!(reason.starts_with("default: min("), "{reason}");
    assert!(
        reason.contains(" cores") || reason.contains(" core,"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("{} tasks", tasks.len())),
        "{reason}"
    );
    assert!(reason.ends_with(&format!(") = {jobs}")) || reason.contains(&format!(") = {jobs},")));
    assert!((1..=tasks.len() as u64).contains(&jobs), "{jobs}");
    assert_eq!(
        lines[0],
        format!(
            "bench run: {} rollouts, {jobs} at once ({reason})",
            tasks.len()
        )
    );
    assert!(
        stdout.contains(&format!("jobs: {jobs} ({reason})")),
        "{stdout}"
    );

    // One line per finished rollout, numbered in finishing order, each naming its task.
    let progress: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.starts_with('['))
        .collect();
    assert_eq!(progress.len(), tasks.len(), "{progress:?}");
    for (idx, line) in progress.iter().enumerate() {
        assert!(
            line.starts_with(&format!("[{}/{}] ", idx + 1, tasks.len())),
            "{line}"
        );
        assert!(tasks.iter().any(|task| line.contains(task)), "{line}");
        for needle in [", score ", " running, mean ", ", eta "] {
            assert!(line.contains(needle), "{needle:?} in {line}");
        }
    }
    let last = progress[tasks.len() - 1];
    assert!(
        last.contains("0 running") && last.ends_with("eta 0s"),
        "{last}"
    );
    jobs
}

#[test]
fn a_piped_run_on_real_desktops_prints_short_plain_progress() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let tasks = ["task-001", "task-004"];
    let output = bench_run(
        None,
        &[
            "--task",
            tasks[0],
            "--task",
            tasks[1],
            "--out",
            out.to_str().unwrap(),
        ],
        &root.path().join("cache"),
    );
    let jobs = check_piped(&output, &tasks, &out);
    let reason = String::from_utf8_lossy(&output.stderr);
    assert!(
        reason.contains("per librecad desktop") && reason.contains("8 broker sessions"),
        "LibreCAD's memory limit and the in-process broker's cap: {reason}"
    );
    println!("default jobs here: {jobs}");
}

#[test]
fn a_piped_run_against_a_fake_broker_prints_plain_progress_and_logs_on_request() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let fake = FakeServer::start(root.path(), &[]);
    let socket = fake.socket.to_str().unwrap().to_owned();
    let tasks = ["task-001", "task-002", "task-003"];
    let run = |log: Option<&str>, out: &Path| {
        let mut args = vec!["--agent", "oracle", "--allow-unsandboxed"];
        for task in tasks {
            args.extend(["--task", task]);
        }
        args.extend(["--broker-socket", &socket, "--out", out.to_str().unwrap()]);
        bench_run(log, &args, &cache)
    };
    let out = root.path().join("quiet");
    let output = run(None, &out);
    check_piped(&output, &tasks, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not the broker's"), "{stderr}");

    // `--log` brings the logs back, still without colour in a pipe.
    let out = root.path().join("loud");
    let output = run(Some("debug"), &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(" DEBUG ") && stderr.contains("rollout started"),
        "{stderr}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr}");
}

/// On a terminal (a pseudo-terminal from util-linux `script`), the same run draws a bar
/// (escape sequences, counts, running, mean, eta) with each rollout's line above it, and the
/// table follows.
#[test]
fn a_run_on_a_terminal_draws_a_bar() {
    let found = Command::new("sh")
        .args(["-c", "command -v script"])
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        println!("skipped: script (util-linux) not found");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let fake = FakeServer::start(root.path(), &[]);
    let out = root.path().join("out");
    let command = format!(
        "stty cols 100 rows 40; {} bench run --agent oracle --allow-unsandboxed --task task-001 \
         --task task-002 --task task-003 --broker-socket {} --out {}",
        deskbroker().display(),
        fake.socket.display(),
        out.display()
    );
    // `script` runs the command on a new pseudo-terminal and copies what it draws to stdout.
    let output = Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .env("XDG_CACHE_HOME", root.path().join("cache"))
        .env_remove("RUST_LOG")
        .env_remove("DESKBROKER_LOG")
        .output()
        .unwrap();
    let drawn = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{drawn}");
    assert!(
        drawn.contains('\x1b'),
        "a bar is drawn with escapes: {drawn}"
    );
    for needle in [
        "bench run: 3 rollouts, ",
        "/3 rollouts [",
        " running, mean ",
        "[3/3] ",
        "jobs: ",
        "3 rollouts, 3 done",
    ] {
        assert!(drawn.contains(needle), "{needle:?} in {drawn}");
    }
}
