//! The watchdog's readback channel (containment G005), through the real binaries: `serve
//! --backend fake` starts its watchdog, `deskbroker readback` asks the watchdog (not the broker)
//! and prints an answer signed with the evidence key that echoes a fresh nonce. It answers while
//! the broker is SIGSTOPped, shows the limits the watchdog took from the signed policy it
//! verified itself, names a killed session's reason, refuses a malformed nonce, and an answer
//! checked with another key is refused.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use desk_broker::watchdog::readback::{Readback, query, socket_path};
use desk_client::Client;
use desk_contract::api::LeaseRequest;
use desk_evidence::{SigningKey, VerifyingKey};

use crate::support::{FakeServer, deskbroker};

fn readback_cli(state_dir: &Path) -> Readback {
    serde_json::from_slice(&cli(&[
        "readback".as_ref(),
        "--state-dir".as_ref(),
        state_dir.as_os_str(),
    ]))
    .unwrap()
}

/// Runs `deskbroker ARGS`, which must succeed; its stdout.
fn cli(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let output = Command::new(deskbroker()).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn wait_for_socket(state_dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while UnixStream::connect(socket_path(state_dir)).is_err() {
        assert!(Instant::now() < deadline, "no watchdog readback socket");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn raw_exchange(state_dir: &Path, line: &str) -> String {
    let stream = UnixStream::connect(socket_path(state_dir)).unwrap();
    (&stream).write_all(line.as_bytes()).unwrap();
    let mut answer = String::new();
    BufReader::new(&stream).read_line(&mut answer).unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watchdog_answers_signed_and_nonce_bound_even_with_the_broker_stopped() {
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(root.path(), &["--max-task-minutes", "30"]);
    let state_dir = root.path().join("state");
    wait_for_socket(&state_dir);
    let mode = std::fs::metadata(socket_path(&state_dir))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the readback socket is operator-only");

    let client = Client::new(server.socket.clone());
    let lease = client
        .lease(&LeaseRequest {
            task_id: "readback".into(),
            attempt_id: "a1".into(),
            profile: None,
        })
        .await
        .unwrap();

    let pid = server.pid().to_string();
    assert!(
        Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let stopped = readback_cli(&state_dir);
    assert!(
        Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap()
            .success()
    );
    // The watchdog verified the broker's signed default policy itself and took its limits
    // from it (no flag names refused actions or idle time); the 30 minute flag tightens its
    // 60 minute task limit.
    assert_eq!(stopped.limits.max_task_ms, Some(30 * 60 * 1000));
    assert_eq!(stopped.limits.max_refused_actions, Some(50));
    assert_eq!(stopped.limits.idle_limit_ms, Some(900 * 1000));
    let policy_sha256 = stopped.policy_sha256.as_deref().expect("a verified policy");
    assert_eq!(policy_sha256.len(), 64, "{policy_sha256}");
    assert_eq!(stopped.broker_alive, Some(true));
    let session = stopped
        .sessions
        .iter()
        .find(|session| session.session_id == lease.session_id)
        .expect("the leased session in the readback");
    assert!(session.killed.is_none());
    assert_eq!(session.due, None);

    // Signed by the watchdog's own key, not the broker's evidence key.
    let key = VerifyingKey::read(&desk_broker::watchdog::key::public_key_path(&state_dir)).unwrap();
    let evidence = VerifyingKey::read(&state_dir.join("evidence").join("evidence.pub")).unwrap();
    assert_ne!(key, evidence);
    let nonce = "n0nce-of-this-exchange";
    assert_eq!(query(&state_dir, nonce, &key).unwrap().nonce, nonce);
    let other = SigningKey::generate().unwrap().verifying_key();
    for wrong in [other, evidence] {
        let refused = query(&state_dir, nonce, &wrong).unwrap_err().to_string();
        assert!(refused.contains("signature"), "{refused}");
    }
    let bad = raw_exchange(&state_dir, "{\"nonce\": \"short\"}\n");
    assert!(bad.contains("\"error\""), "{bad}");
    let unknown = raw_exchange(&state_dir, "{\"nonce\": \"0123456789abcdef\", \"x\": 1}\n");
    assert!(unknown.contains("\"error\""), "{unknown}");
    let signed = raw_exchange(&state_dir, "{\"nonce\": \"0123456789abcdef\"}\n");
    let envelope = desk_evidence::Envelope::parse(signed.trim_end().as_bytes()).unwrap();
    envelope.verify(&key).unwrap();
    let answer: Readback = envelope.decode_payload().unwrap();
    assert_eq!(answer.nonce, "0123456789abcdef");

    let killed = Command::new(deskbroker())
        .args([
            "kill",
            &lease.session_id,
            "--reason",
            "readback test",
            "--state-dir",
        ])
        .arg(&state_dir)
        .output()
        .unwrap();
    assert!(
        killed.status.success(),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
    let after = readback_cli(&state_dir);
    let session = after
        .sessions
        .iter()
        .find(|session| session.session_id == lease.session_id)
        .expect("the killed session in the readback");
    assert_eq!(session.state, "killed");
    let kill = session.killed.as_ref().expect("its tombstone");
    assert_eq!(kill.reason, "readback test");
    assert_eq!(kill.source, "operator");
}

#[test]
fn the_watchdog_takes_its_limits_from_the_operators_signed_policy() {
    let root = tempfile::tempdir().unwrap();
    let keys = root.path().join("keys");
    let os = |path: &Path| path.as_os_str().to_owned();
    cli(&[
        "policy".as_ref(),
        "keygen".as_ref(),
        "--out-dir".as_ref(),
        os(&keys).as_os_str(),
    ]);
    let example = String::from_utf8(cli(&["policy".as_ref(), "example".as_ref()])).unwrap();
    let yaml = root.path().join("policy.yaml");
    std::fs::write(
        &yaml,
        example.replace("max_refused_actions: 20", "max_refused_actions: 7"),
    )
    .unwrap();
    let signed = root.path().join("policy.signed.json");
    cli(&[
        "policy".as_ref(),
        "sign".as_ref(),
        "--key".as_ref(),
        os(&keys.join("policy.key")).as_os_str(),
        "--out".as_ref(),
        os(&signed).as_os_str(),
        os(&yaml).as_os_str(),
    ]);
    let policy = signed.display().to_string();
    let public = keys.join("policy.pub").display().to_string();
    let _server = FakeServer::start(root.path(), &["--policy", &policy, "--policy-pub", &public]);
    let state_dir = root.path().join("state");
    wait_for_socket(&state_dir);
    let answer = readback_cli(&state_dir);
    assert_eq!(answer.limits.max_refused_actions, Some(7), "{answer:?}");
    assert_eq!(answer.limits.max_task_ms, Some(30 * 60 * 1000));
    assert!(answer.policy_sha256.is_some());
}
