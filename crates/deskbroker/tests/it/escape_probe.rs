//! The escape probe (issue 8): an `escape-probe` app that tries, from inside its session's
//! sandbox, to reach the test's loopback listener and the internet, resolve a name, read the
//! broker's state directory, evidence key and SQLite file, a private corpus and `/root`, write
//! outside its workspace, signal and read the broker, and reach a display on the host. Two
//! sessions run at once and each probe also aims at the other (its display through
//! `/proc/PID/root`, its workspace, attempt file and X cookie, its app's pid). The findings come
//! back as the attempt file, through checkpoint and artifact: the save chord makes the probe try
//! everything again once both desktops are handed off. With the sandbox every attempt fails;
//! without it (`--unsafe-no-sandbox`) the same probe reports escapes, so the test can fail.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use desk_contract::api::SaveMethod;
use desk_test_support::Xvfb;
use serde_json::Value;

use crate::support::{Broker, display_socket, lease_and_reset, probe_binary, xvfb_available};

/// What one probe run reported, and how many connections the host's listener accepted.
struct Outcome {
    findings: Vec<Value>,
    accepted: usize,
    /// Attempts that must be present in every run.
    expected: Vec<String>,
    /// The broker's state directory, as the probe was told.
    state_dir: PathBuf,
}

impl Outcome {
    fn escaped(&self) -> Vec<&Value> {
        self.findings
            .iter()
            .filter(|finding| finding["escaped"] != false)
            .collect()
    }

    fn assert_all_attempted(&self) {
        for attempt in &self.expected {
            assert!(
                self.findings
                    .iter()
                    .any(|f| f["attempt"] == attempt.as_str()),
                "attempt {attempt:?} missing from {:#?}",
                self.findings
            );
        }
    }

    fn print_table(&self, title: &str) {
        println!("{title}:");
        for finding in &self.findings {
            let result = if finding["escaped"] == false {
                "blocked"
            } else {
                "ESCAPED"
            };
            println!(
                "| {} | {result} | {} |",
                finding["attempt"].as_str().unwrap_or("?"),
                finding["detail"].as_str().unwrap_or("?")
            );
        }
        println!("listener accepted {} connection(s)", self.accepted);
    }
}

/// Starts a broker with `extra` serve arguments and an `escape-probe` profile, leases and
/// resets one session, checkpoints it and returns the probe's findings from the artifact.
async fn run_escape_probe(extra: &[&str]) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    // World-readable, so only the sandbox's mounts keep it out.
    let corpus = root.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(
        corpus.join("task-001.json"),
        "{\"secret\": \"reference answer\"}",
    )
    .unwrap();
    std::fs::set_permissions(&corpus, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A display on the host, as another session's would be; not :0, the number a sandboxed
    // session's own display gets in its private /tmp (the path would name the probe's own).
    let mut host_displays = vec![Xvfb::start(320, 240).expect("Xvfb")];
    while host_displays.last().map(Xvfb::display) == Some(":0") {
        host_displays.push(Xvfb::start(320, 240).expect("Xvfb"));
    }
    let other_display = host_displays.last().unwrap().display().to_string();
    let other_socket = display_socket(&other_display);

    let state_dir = root.join("state");
    let key = state_dir.join("evidence/signing.key");
    let sqlite = state_dir.join("broker.sqlite3");
    let forbid: Vec<PathBuf> = vec![
        state_dir.clone(),
        key.clone(),
        sqlite.clone(),
        corpus.clone(),
        PathBuf::from("/root"),
    ];
    // Bound writable into every sandbox: the probes' targets file (broker pid, peers).
    let pid_file = root.join("broker.pid");
    let escape_probe = probe_binary().with_file_name("desk-escape-probe");
    let mut command = vec![
        escape_probe.display().to_string(),
        "--out".into(),
        "{attempt}".into(),
        "--port".into(),
        port.to_string(),
        "--targets-file".into(),
        pid_file.display().to_string(),
        "--other-display-socket".into(),
        other_socket.display().to_string(),
    ];
    for path in &forbid {
        command.push("--forbid".into());
        command.push(path.display().to_string());
    }
    std::fs::create_dir_all(root.join("profiles")).unwrap();
    let profile = format!(
        r#"name = "escape-probe"
command = {command:?}
read_only = [{escape:?}]
save_keys = ["ctrl", "s"]
save_timeout_ms = 15000
[attempt]
filename = "findings.ndjson"
template = "fresh"
[window]
class = "deskescape"
maximize = true
timeout_ms = 20000
"#,
        escape = escape_probe.display().to_string(),
    );
    std::fs::write(root.join("profiles/escape-probe.toml"), profile).unwrap();
    let broker = Broker::start_with(root, None, &pid_file, extra);
    std::fs::write(&pid_file, broker.pid().to_string()).unwrap();
    for path in &forbid {
        assert!(path.exists(), "{} must exist on the host", path.display());
    }

    let client = broker.client();
    // Two sessions at once, each probe aimed at the other.
    let mut sessions = Vec::new();
    for n in 1..=2 {
        sessions.push(leased_and_reset(&client, n).await);
    }
    let peers: Vec<Peer> = sessions
        .iter()
        .map(|s| Peer::of(&broker.session_dir(s)))
        .collect();
    let mut targets = format!("{}\n", broker.pid());
    let mut expected_peer: Vec<Vec<String>> = Vec::new();
    for (me, other) in [(&peers[0], &peers[1]), (&peers[1], &peers[0])] {
        assert_ne!(me.display, other_display, "the probe's own display");
        let aims = other.targets();
        for (kind, target) in &aims {
            let line = serde_json::json!({"for": me.workspace, "kind": kind, "target": target});
            targets.push_str(&format!("{line}\n"));
        }
        expected_peer.push(aims.iter().map(|(k, t)| format!("peer {k} {t}")).collect());
    }
    std::fs::write(&pid_file, targets).unwrap();

    let mut findings: Vec<Value> = Vec::new();
    for session in &sessions {
        // The findings written before the window was mapped are the reset's file; the save
        // chord makes the probe try everything again, with both desktops handed off.
        let checkpoint = client.checkpoint(session).await.unwrap();
        assert_eq!(checkpoint.method, SaveMethod::ControllerSave);
        let artifact = client.artifact(session).await.unwrap();
        assert_eq!(artifact.filename, "findings.ndjson");
        assert_eq!(artifact.sha256, checkpoint.sha256);
        let bytes = desk_contract::b64::decode(&artifact.bytes_base64).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let session_findings: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert!(
            session_findings.iter().all(|finding| finding["round"] == 2),
            "the artifact holds the round the save chord started: {session_findings:#?}"
        );
        findings.extend(session_findings);
    }
    for session in &sessions {
        client.release(session).await.unwrap();
    }

    let port_addr = format!("127.0.0.1:{port}");
    let mut expected: Vec<String> = vec![
        format!("tcp_connect {port_addr}"),
        "tcp_connect 1.1.1.1:53".into(),
        "resolve example.com".into(),
        "write into /".into(),
        "write into /usr".into(),
        "write into /etc".into(),
        format!("signal broker {}", broker.pid()),
        format!("read broker memory {}", broker.pid()),
        format!("connect display socket {}", other_socket.display()),
        format!(
            "connect abstract display socket @{}",
            other_socket.display()
        ),
    ];
    expected.extend(forbid.iter().map(|p| format!("read {}", p.display())));
    expected.extend(expected_peer.into_iter().flatten());
    // Let a connection the probe may have opened be counted.
    std::thread::sleep(std::time::Duration::from_millis(100));
    Outcome {
        findings,
        accepted: accepted.load(Ordering::SeqCst),
        expected,
        state_dir,
    }
}

/// Leases and resets session `n` with the escape probe.
async fn leased_and_reset(client: &desk_client::Client, n: u32) -> String {
    let started = std::time::Instant::now();
    let (session, reset) =
        lease_and_reset(client, "escape", &format!("escape-{n}"), "escape-probe").await;
    println!(
        "lease and reset {n} with the escape probe: {} ms",
        started.elapsed().as_millis()
    );
    assert!(reset.window.maximized, "the probe's window was handed off");
    session
}

/// A running session as another session's probe aims at it, seen from the host.
struct Peer {
    /// The workspace's real path (the same inside its sandbox).
    workspace: String,
    /// Its display name inside its sandbox, e.g. `:0`.
    display: String,
    /// A host pid of its app (the program inside the recorded wrapper when there is one).
    app: u32,
}

impl Peer {
    fn of(session_dir: &std::path::Path) -> Peer {
        let workspace = std::fs::canonicalize(session_dir.join("workspace")).unwrap();
        let display = desk_desktop::launcher::recorded_display(session_dir).unwrap();
        let wrapper = desk_desktop::launcher::recorded_processes(session_dir)
            .into_iter()
            .find(|p| p.role == "app")
            .unwrap()
            .pid;
        let children = std::fs::read_to_string(format!("/proc/{wrapper}/task/{wrapper}/children"))
            .unwrap_or_default();
        let app = children
            .split_whitespace()
            .next()
            .map_or(wrapper, |pid| pid.parse().unwrap());
        Peer {
            workspace: workspace.display().to_string(),
            display,
            app,
        }
    }

    /// What the other probe tries on this session; each exists from the host.
    fn targets(&self) -> Vec<(&'static str, String)> {
        let number = self.display.trim_start_matches(':');
        let targets = vec![
            (
                "connect",
                format!("/proc/{}/root/tmp/.X11-unix/X{number}", self.app),
            ),
            ("read", self.workspace.clone()),
            (
                "read",
                format!("{}/attempt/findings.ndjson", self.workspace),
            ),
            ("read", format!("{}/run/xauthority", self.workspace)),
            ("signal", self.app.to_string()),
        ];
        for (kind, target) in &targets {
            if *kind != "signal" {
                assert!(
                    std::path::Path::new(target).exists(),
                    "{target} must exist on the host"
                );
            }
        }
        targets
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_escape_probe_reaches_nothing_from_inside_its_sandbox() {
    if !xvfb_available() {
        return;
    }
    let outcome = run_escape_probe(&[]).await;
    outcome.print_table("escape probe, sandboxed");
    outcome.assert_all_attempted();
    assert!(
        outcome.escaped().is_empty(),
        "escapes: {:#?}",
        outcome.escaped()
    );
    assert_eq!(outcome.accepted, 0, "the host's listener was reached");
}

/// The same probe without the sandbox escapes: the test above can fail.
#[tokio::test(flavor = "multi_thread")]
async fn the_escape_probe_escapes_an_unsandboxed_desktop() {
    if !xvfb_available() {
        return;
    }
    let outcome = run_escape_probe(&["--unsafe-no-sandbox"]).await;
    outcome.print_table("escape probe, --unsafe-no-sandbox");
    outcome.assert_all_attempted();
    let escaped = |attempt: &str| {
        outcome.findings.iter().any(|f| {
            f["attempt"]
                .as_str()
                .is_some_and(|a| a.starts_with(attempt))
                && f["escaped"] == true
        })
    };
    // The probe runs as the broker's user on the host: its state and the loopback are open.
    let state = format!("read {}", outcome.state_dir.display());
    assert!(escaped(&state), "{:#?}", outcome.findings);
    assert!(escaped("tcp_connect 127.0.0.1"), "{:#?}", outcome.findings);
    assert!(escaped("signal broker"), "{:#?}", outcome.findings);
    assert!(outcome.accepted >= 1);
}
