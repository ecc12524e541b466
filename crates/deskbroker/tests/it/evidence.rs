//! Signed evidence through the whole stack: a probe session on a real desktop, exported with
//! `deskbroker evidence export` (live and after release) and checked with `deskbroker evidence
//! verify`; then each kind of tampering makes verify fail and name the bad record or file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use crate::probe::{ProbeSession, act, leased_probe};
use crate::support::{Broker, deskbroker, xvfb_available};

/// Changes a copy of a bundle in place.
type Tamper = Box<dyn Fn(&Path)>;

fn run(args: &[&str]) -> Output {
    Command::new(deskbroker()).args(args).output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub(crate) fn export(state_dir: &Path, session: &str, out: &Path) {
    let output = run(&[
        "evidence",
        "export",
        session,
        "--state-dir",
        state_dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "export failed: {}", text(&output));
}

pub(crate) fn verify(bundle: &Path, key: &Path) -> (bool, String) {
    let output = run(&[
        "evidence",
        "verify",
        bundle.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    (output.status.success(), text(&output))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if entry.file_name() == name {
            return Some(path);
        }
    }
    None
}

/// Every file below `root`, as `/`-separated paths relative to it, sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn journal_lines(bundle: &Path) -> Vec<String> {
    std::fs::read_to_string(bundle.join("evidence.ndjson"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_journal(bundle: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(bundle.join("evidence.ndjson"), text).unwrap();
}

fn signature_of(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).unwrap();
    value["signature_b64"].as_str().unwrap().to_string()
}

fn flip_last_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_probe_session_exports_verifies_and_every_tampering_is_named() {
    if !xvfb_available() {
        return;
    }
    let started = std::time::Instant::now();
    let probe = ProbeSession::start("evidence").await;
    let key = probe.broker.state_dir.join("evidence").join("evidence.pub");
    assert!(key.is_file(), "the broker publishes its evidence key");

    act(
        &probe.client,
        &probe.session,
        "click-1",
        0,
        json!({"type": "click", "x": 200, "y": 150, "intent": "focus the probe"}),
    )
    .await
    .unwrap();
    act(
        &probe.client,
        &probe.session,
        "type-1",
        1,
        json!({"type": "type", "text": "evidence", "intent": "type a word"}),
    )
    .await
    .unwrap();

    // Exported while the session is live, the bundle already verifies.
    let live = probe.root.path().join("live-bundle");
    export(&probe.broker.state_dir, &probe.session, &live);
    let (ok, output) = verify(&live, &key);
    assert!(ok, "live bundle: {output}");
    assert!(output.contains("released: false"), "{output}");

    act(
        &probe.client,
        &probe.session,
        "key-1",
        2,
        json!({"type": "key", "keys": ["ctrl", "a"], "intent": "select all"}),
    )
    .await
    .unwrap();
    probe.client.screenshot(&probe.session).await.unwrap();
    // The app "saves": the attempt file changes, so the checkpoint is `already_saved`.
    let session_dir = probe.broker.state_dir.join("sessions").join(&probe.session);
    let attempt = find_file(&session_dir, "attempt.txt").expect("attempt file");
    std::fs::write(&attempt, "saved by the probe test\n").unwrap();
    let checkpoint = probe.client.checkpoint(&probe.session).await.unwrap();
    let artifact = probe.client.artifact(&probe.session).await.unwrap();
    assert_eq!(artifact.sha256, checkpoint.sha256);

    // Before release the bundle carries the logs, both frames and the artifact; the tampering
    // cases below work on it.
    let bundle = probe.root.path().join("bundle");
    export(&probe.broker.state_dir, &probe.session, &bundle);
    let (ok, output) = verify(&bundle, &key);
    assert!(ok, "bundle: {output}");
    assert!(output.starts_with("OK "), "{output}");
    assert!(
        output.contains("3 actions, 3 receipts, 2 frames") && output.contains("released: false"),
        "{output}"
    );
    assert!(output.contains(&checkpoint.sha256), "{output}");
    let evidence_dir = probe.broker.state_dir.join("evidence").join(&probe.session);
    let before = tree(&probe.broker.state_dir);
    assert!(
        evidence_dir.join("artifact/attempt.txt").is_file(),
        "{before:#?}"
    );
    assert_eq!(
        std::fs::read_dir(evidence_dir.join("frames"))
            .unwrap()
            .count(),
        2,
        "{before:#?}"
    );

    // A root broker keeps the workspace (attempt directory, home) out of the state directory.
    let workspace = std::fs::read_link(session_dir.join("workspace")).ok();
    probe.client.release(&probe.session).await.unwrap();
    assert!(
        !session_dir.exists(),
        "release deletes the session directory"
    );
    if let Some(workspace) = workspace {
        assert!(
            !workspace.exists(),
            "{} survived release",
            workspace.display()
        );
    }
    // Release deletes the attempt data: of the session, the state directory keeps only the
    // signed journal (its records hold every digest) and the workspace's removal record.
    let after = tree(&probe.broker.state_dir);
    let of_session: Vec<&String> = after
        .iter()
        .filter(|path| path.contains(&probe.session))
        .collect();
    assert_eq!(
        of_session,
        [
            &format!("evidence/{}/evidence.ndjson", probe.session),
            &format!("workspaces/{}.json", probe.session)
        ],
        "before release: {before:#?}\nafter: {after:#?}"
    );
    let removal =
        std::fs::read_to_string(probe.broker.state_dir.join(of_session[1].as_str())).unwrap();
    assert!(removal.contains("destroyed"), "{removal}");
    assert!(
        !after.iter().any(|path| path.ends_with(".png")
            || path.ends_with("attempt.txt")
            || path.ends_with("events.json")),
        "{after:#?}"
    );
    println!(
        "state directory: {} files before release, {} after",
        before.len(),
        after.len()
    );

    // After release the bundle verifies the journal and lists what release deleted.
    let released = probe.root.path().join("released-bundle");
    export(&probe.broker.state_dir, &probe.session, &released);
    let (ok, output) = verify(&released, &key);
    assert!(ok, "released bundle: {output}");
    assert!(
        output.contains("0 frames, 1 files, released: true")
            && output
                .contains("not retained: [artifact/attempt.txt, events.json, frame_events.json]")
            && output.contains(&checkpoint.sha256),
        "{output}"
    );
    let lines = journal_lines(&released);
    // session_started, workspace_launched, screenshot, 3 × (accepted, receipt), screenshot,
    // checkpoint, artifact, session_released.
    assert_eq!(lines.len(), 13, "{lines:#?}");

    let mut cases: Vec<(&str, Tamper, Vec<&str>)> = Vec::new();
    cases.push((
        "one byte of a record",
        Box::new(|dir| {
            let mut lines = journal_lines(dir);
            lines[3] = lines[3].replacen("focus the probe", "focus the probf", 1);
            write_journal(dir, &lines);
        }),
        vec!["line 4 (seq 3, kind action_accepted): signature does not verify"],
    ));
    cases.push((
        "a record's signature",
        Box::new(|dir| {
            let mut lines = journal_lines(dir);
            let other = signature_of(&lines[5]);
            lines[4] = lines[4].replace(&signature_of(&lines[4]), &other);
            write_journal(dir, &lines);
        }),
        vec!["line 5 (seq 4, kind action_receipt): signature does not verify"],
    ));
    cases.push((
        "the artifact",
        Box::new(|dir| flip_last_byte(&dir.join("artifact").join("attempt.txt"))),
        vec!["bundle file artifact/attempt.txt"],
    ));
    cases.push((
        "events.json",
        Box::new(|dir| flip_last_byte(&dir.join("events.json"))),
        vec!["bundle file events.json"],
    ));
    cases.push((
        "the last record dropped",
        Box::new(|dir| {
            let mut lines = journal_lines(dir);
            lines.pop();
            write_journal(dir, &lines);
        }),
        vec!["manifest", "journal"],
    ));
    cases.push((
        "frame_events.json",
        Box::new(|dir| flip_last_byte(&dir.join("frame_events.json"))),
        vec!["bundle file frame_events.json"],
    ));
    cases.push((
        "a dropped record",
        Box::new(|dir| {
            let mut lines = journal_lines(dir);
            lines.remove(4);
            write_journal(dir, &lines);
        }),
        vec!["line 5 (seq 5, kind action_accepted)", "expected seq 4"],
    ));
    cases.push((
        "two reordered records",
        Box::new(|dir| {
            let mut lines = journal_lines(dir);
            lines.swap(5, 6);
            write_journal(dir, &lines);
        }),
        vec!["line 6 (seq 6, kind action_receipt)"],
    ));
    for (what, tamper, named) in &cases {
        let copy = probe
            .root
            .path()
            .join(format!("tampered-{}", what.replace(' ', "-")));
        copy_dir(&bundle, &copy);
        tamper(&copy);
        let (ok, output) = verify(&copy, &key);
        assert!(!ok, "{what}: tampered bundle verified: {output}");
        assert!(output.contains("FAILED"), "{what}: {output}");
        for name in named {
            assert!(
                output.contains(name),
                "{what}: {name} not named in {output}"
            );
        }
    }

    println!("evidence real-stack test took {:?}", started.elapsed());
}

/// `(kind, settle_outcome)` of every record of a bundle's journal.
fn kinds(bundle: &Path) -> Vec<String> {
    journal_lines(bundle)
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let payload = &value["payload"];
            match payload["body"]["settle_outcome"].as_str() {
                Some(outcome) => format!("{} {outcome}", payload["kind"].as_str().unwrap()),
                None => payload["kind"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_killed_after_input_leaves_a_verifiable_journal_closed_in_doubt() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), Some("kill_after_input"), &log);
    let session = leased_probe(&broker, "evidence-crash").await;
    let click = json!({"type": "click", "x": 200, "y": 150, "intent": "click before the crash"});
    let lost = act(&broker.client(), &session, "crash-1", 0, click).await;
    assert!(lost.is_err(), "the response must be lost: {lost:?}");
    broker.wait_exit(std::time::Duration::from_secs(10));

    broker.restart(None);
    let key = broker.state_dir.join("evidence").join("evidence.pub");
    let bundle = root.path().join("after-restart");
    export(&broker.state_dir, &session, &bundle);
    let (ok, output) = verify(&bundle, &key);
    assert!(ok, "{output}");
    assert_eq!(
        kinds(&bundle),
        [
            "session_started",
            "workspace_launched",
            "screenshot",
            "action_accepted",
            "action_receipt in_doubt"
        ]
    );

    broker.client().release(&session).await.unwrap();
    let released = root.path().join("released");
    export(&broker.state_dir, &session, &released);
    let (ok, output) = verify(&released, &key);
    assert!(ok && output.contains("released: true"), "{output}");
    assert_eq!(kinds(&released).last().unwrap(), "session_released");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_journal_continues_across_a_broker_restart_that_keeps_the_desktop() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let mut broker = Broker::start(root.path(), None, &log);
    let session = leased_probe(&broker, "evidence-restart").await;
    let click = |intent: &str| json!({"type": "click", "x": 220, "y": 160, "intent": intent});
    act(
        &broker.client(),
        &session,
        "before",
        0,
        click("before the restart"),
    )
    .await
    .unwrap();

    // SIGKILL with no action in flight: the next broker reattaches the desktop and reopens the
    // journal, verifying it, where the last one left off.
    broker.restart(None);
    let client = broker.client();
    act(&client, &session, "after", 1, click("after the restart"))
        .await
        .unwrap();
    client.release(&session).await.unwrap();

    let bundle = root.path().join("bundle");
    export(&broker.state_dir, &session, &bundle);
    let key = broker.state_dir.join("evidence").join("evidence.pub");
    let (ok, output) = verify(&bundle, &key);
    assert!(ok && output.contains("2 actions, 2 receipts"), "{output}");
    assert_eq!(
        kinds(&bundle),
        [
            "session_started",
            "workspace_launched",
            "screenshot",
            "action_accepted",
            "action_receipt stable",
            "action_accepted",
            "action_receipt stable",
            "session_released"
        ]
    );
    assert_launch_receipt(&bundle);
}

/// The signed launch receipt lists what runs in the sandbox at handoff: the desktop's own
/// programs and the app, nothing prohibited, with the population's digest.
fn assert_launch_receipt(bundle: &Path) {
    let launched: serde_json::Value = journal_lines(bundle)
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|value| value["payload"]["kind"] == "workspace_launched")
        .expect("a launch receipt")["payload"]["body"]
        .clone();
    assert_eq!(launched["sandbox"], "on", "{launched}");
    assert_eq!(launched["prohibited"], 0, "{launched}");
    let processes = launched["processes"].as_array().unwrap();
    assert_eq!(
        launched["process_population_count"].as_u64(),
        Some(processes.len() as u64)
    );
    let programs: Vec<&str> = processes
        .iter()
        .filter_map(|process| process["exe"].as_str())
        .collect();
    for wanted in ["Xvfb", "openbox", "deskbroker-worker", "desk-probe"] {
        assert!(
            programs.iter().any(|program| program.ends_with(wanted)),
            "{wanted} not in the launch receipt: {programs:?}"
        );
    }
    assert_eq!(
        launched["process_population_sha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(launched["workspace_facts_sha256"].is_string(), "{launched}");
}
