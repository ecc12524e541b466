//! The benchmark with the screenshot gate on (issue 29, "Done means"): `bench run --policy`
//! with the repository's `scripts/bench-gate-policy.yaml` (the default workspace, no approvals,
//! a `screenshot_gate`), signed here, the oracle on task-004 in LibreCAD on a real desktop with
//! real tesseract. The task scores as it does without the gate (at least 0.99, as in `bench.rs`'s
//! dev split), and the session's verified journal holds one gate decision for the reset's frame
//! and one per action, every one `allow`: a benign CAD screen is never withheld. About 15 s.

use std::path::Path;
use std::process::Command;

use desk_evidence::RecordBody;

use crate::bench::librecad_available;
use crate::screenshot_gate::tools_available;
use crate::support::{deskbroker, signed_policy_args, xvfb_available};

#[test]
fn the_oracle_scores_the_same_with_the_gate_on_and_nothing_is_withheld() {
    if !xvfb_available() || !librecad_available() || !tools_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench-gate-policy.yaml"),
    )
    .unwrap();
    let policy = signed_policy_args(root.path(), &yaml, 44);
    let out = root.path().join("gate");
    let output = Command::new(deskbroker())
        .args(["--log", "warn", "bench", "run", "--task", "task-004"])
        .args(["--agent", "oracle", "--jobs", "1", "--out"])
        .arg(&out)
        .args(&policy)
        .env("XDG_CACHE_HOME", root.path().join("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{stdout}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let row = &summary["rollouts"][0];
    assert_eq!(row["task_id"], "task-004", "{row}");
    assert!(row["score"].as_f64().unwrap() >= 0.99, "{row}");

    let state = out.join("state");
    let key = desk_evidence::VerifyingKey::read(&state.join("evidence/evidence.pub")).unwrap();
    let journals: Vec<_> = std::fs::read_dir(state.join("evidence"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("evidence.ndjson"))
        .filter(|path| path.is_file())
        .collect();
    assert_eq!(journals.len(), 1, "one session: {journals:?}");
    let records = desk_evidence::read_journal(&journals[0], &key).unwrap();
    let (mut actions, mut verdicts) = (0, Vec::new());
    for record in &records {
        match &record.record().body {
            RecordBody::ActionReceipt(_) => actions += 1,
            RecordBody::ScreenshotGateDecision(decision) => {
                verdicts.push(decision.verdict.clone());
            }
            _ => {}
        }
    }
    assert!(actions > 10, "the oracle acted: {actions}");
    assert_eq!(
        verdicts.len(),
        actions + 1,
        "the reset's frame and each action's"
    );
    assert!(
        verdicts.iter().all(|verdict| verdict == "allow"),
        "{verdicts:?}"
    );
}
