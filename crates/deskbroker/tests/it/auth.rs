//! Real-stack tests of transport and authentication: a `deskbroker serve` subprocess, the probe
//! window recording exactly the input it receives, lease tokens, the Unix peer-uid allowlist,
//! TLS with and without client certificates (identities from `deskbroker certs init`) and
//! orchestration credentials (`deskbroker certs token`).
//!
//! Every refusal is checked twice: by the answer, and by the probe's log, which must not have
//! grown (nothing reached the desktop).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use desk_client::{Client, ClientError, RemoteConfig};
use desk_contract::api::{LeaseRequest, LeaseToken, ResetRequest};
use serde_json::json;

use crate::probe::{act, of_type, probe_events, wait_for_events};
use crate::support::{certs, deskbroker, probe_binary, xvfb_available};

/// A broker subprocess with the probe profile and extra `serve` flags; SIGKILLed on drop.
struct Served {
    child: Child,
    socket: PathBuf,
    state_dir: PathBuf,
    port: Option<u16>,
    log: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Served {
    fn start(root: &Path, probe_log: &Path, tls: bool, extra: &[String]) -> Served {
        let profiles = root.join("profiles");
        crate::support::write_probe_profile(
            &profiles,
            "probe",
            &probe_binary(),
            &probe_log.display().to_string(),
            &[&probe_binary()],
        );
        crate::support::share_probe_log(root, probe_log);
        let socket = root.join("broker.sock");
        let state_dir = root.join("state");
        let port = tls.then(free_port);
        let mut command =
            crate::support::serve_command(&deskbroker(), &socket, &state_dir, &profiles);
        command
            .args(extra)
            .args(["--log", "debug"])
            .env_remove("DESKBROKER_FAULT")
            .env_remove("RUST_LOG")
            .env(desk_desktop::sandbox::EXTRA_WRITABLE_ENV, probe_log)
            .stderr(std::fs::File::create(root.join("broker.log")).unwrap())
            .stdin(Stdio::null());
        if let Some(port) = port {
            command.args(["--listen", &format!("127.0.0.1:{port}")]);
        }
        let child = command.spawn().unwrap();
        let served = Served {
            child,
            socket,
            state_dir,
            port,
            log: root.join("broker.log"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let tcp_up =
                port.is_none_or(|port| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
            if served.socket.exists() && tcp_up {
                break;
            }
            assert!(Instant::now() < deadline, "broker did not start listening");
            std::thread::sleep(Duration::from_millis(20));
        }
        served
    }

    /// Asserts that none of `secrets` appears in the broker's log (written at debug level).
    fn assert_log_free_of(&self, secrets: &[String]) {
        let log = std::fs::read_to_string(&self.log).unwrap();
        assert!(log.contains("latency_ms"), "the broker log is empty: {log}");
        for secret in secrets {
            assert!(
                !log.contains(secret.as_str()),
                "a credential leaked into the log"
            );
        }
    }

    fn remote(&self, certs: &Path, identity: Option<&Path>, credential: Option<String>) -> Client {
        let config = RemoteConfig {
            url: format!("https://127.0.0.1:{}", self.port.unwrap()),
            ca: certs.join("ca.pem"),
            identity: identity.map(|dir| (dir.join("client.pem"), dir.join("client.key"))),
            credential,
        };
        Client::remote(&config).unwrap().with_private_tokens()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Ok(sessions) = std::fs::read_dir(self.state_dir.join("sessions")) {
            for session in sessions.flatten() {
                desk_desktop::launcher::reap_recorded(session.path());
            }
        }
    }
}

fn certs_init(dir: &Path) {
    certs(&["init", "--dir", dir.to_str().unwrap()]);
}

fn token(dir: &Path, scope: &str, ttl: &str) -> String {
    let key = dir.join("orchestrator.key");
    certs(&[
        "token",
        "--key",
        key.to_str().unwrap(),
        "--scope",
        scope,
        "--ttl",
        ttl,
    ])
    .trim()
    .to_string()
}

fn lease_request(attempt: &str) -> LeaseRequest {
    LeaseRequest {
        task_id: "auth".into(),
        attempt_id: attempt.into(),
        profile: Some("probe".into()),
    }
}

fn click(x: i64) -> serde_json::Value {
    json!({"type": "click", "x": x, "y": 200, "button": "left", "intent": "auth probe click"})
}

fn refused_code(result: Result<impl std::fmt::Debug, ClientError>) -> String {
    match result {
        Err(ClientError::Api(body)) => body.code.as_str().to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lease_tokens_guard_the_desktop_over_the_unix_socket() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let served = Served::start(root.path(), &log, false, &[]);
    let owner = Client::new(&served.socket).with_private_tokens();
    let lease = owner.lease(&lease_request("a1")).await.unwrap();
    let session = lease.session_id.clone();
    assert!(
        !format!("{lease:?}").contains(lease.lease_token.expose()),
        "Debug must redact the token"
    );
    owner
        .reset(
            &session,
            &ResetRequest {
                request_id: "r1".into(),
            },
        )
        .await
        .unwrap();
    let other = owner.lease(&lease_request("a2")).await.unwrap();
    let baseline = probe_events(&log).len();

    let intruder = Client::new(&served.socket).with_private_tokens();
    let no_token = act(&intruder, &session, "c0", 0, click(100)).await;
    assert_eq!(refused_code(no_token), "unauthorized");
    for (name, token) in [
        ("garbage", LeaseToken::new("garbage")),
        ("another lease's", other.lease_token.clone()),
    ] {
        intruder.set_lease_token(&session, token);
        let result = act(&intruder, &session, "c0", 0, click(100)).await;
        assert_eq!(refused_code(result), "unauthorized", "{name} token");
        let result = intruder.screenshot(&session).await;
        assert_eq!(refused_code(result), "unauthorized", "{name} token");
    }
    // A released lease's token is refused for what needs a live lease.
    owner.release(&other.session_id).await.unwrap();
    intruder.set_lease_token(&other.session_id, other.lease_token.clone());
    let result = act(&intruder, &other.session_id, "c0", 0, click(100)).await;
    assert_eq!(refused_code(result), "invalid_state", "released lease");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        probe_events(&log).len(),
        baseline,
        "a refused request reached the desktop"
    );

    // The owner's token works, and the probe sees exactly its click.
    act(&owner, &session, "c1", 0, click(300)).await.unwrap();
    let events = wait_for_events(&log, baseline + 2);
    let presses = of_type(&events[baseline..], "button_press");
    assert_eq!(presses.len(), 1, "{presses:?}");
    assert_eq!(presses[0]["root_x"], 300);
    assert_private(&served.state_dir);
    owner.release(&session).await.unwrap();
    served.assert_log_free_of(&[
        lease.lease_token.expose().to_string(),
        other.lease_token.expose().to_string(),
    ]);
}

/// Asserts that every directory under `state_dir` (itself included) is 0700 and every file
/// 0600 or stricter, for whatever the broker's own uid owns (this test runs with umask 022).
fn assert_private(state_dir: &Path) {
    use std::os::unix::fs::MetadataExt as _;
    let own_uid = nix::unistd::geteuid().as_raw();
    let mut pending = vec![state_dir.to_path_buf()];
    let mut n_checked = 0;
    while let Some(path) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path).unwrap();
        if metadata.uid() != own_uid || metadata.file_type().is_symlink() {
            continue;
        }
        let mode = metadata.mode() & 0o7777;
        assert_eq!(mode & 0o077, 0, "{} is {mode:04o}", path.display());
        n_checked += 1;
        if metadata.is_dir() {
            pending.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        }
    }
    assert!(
        n_checked > 8,
        "only {n_checked} entries under {}",
        state_dir.display()
    );
}

#[test]
fn a_state_or_socket_directory_others_can_reach_is_refused_at_startup() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().unwrap();
    let state_dir = root.path().join("state");
    // A state directory from an earlier run (not empty) that group and others can read.
    std::fs::create_dir_all(state_dir.join("sessions")).unwrap();
    std::fs::set_permissions(&state_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let serve = |socket: &Path| {
        Command::new(deskbroker())
            .arg("serve")
            .arg("--socket")
            .arg(socket)
            .arg("--state-dir")
            .arg(&state_dir)
            .output()
            .unwrap()
    };
    let output = serve(&root.path().join("b.sock"));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("chmod 700"), "{stderr}");
    std::fs::set_permissions(&state_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let output = serve(&shared.join("b.sock"));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("socket directory"), "{stderr}");
    assert!(!shared.join("b.sock").exists());
    // A missing socket directory is created 0700.
    let fresh = root.path().join("run/deskbroker");
    let mut child = Command::new(deskbroker())
        .arg("serve")
        .arg("--socket")
        .arg(fresh.join("b.sock"))
        .arg("--state-dir")
        .arg(&state_dir)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !fresh.join("b.sock").exists() {
        assert!(Instant::now() < deadline, "broker did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o7777;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(mode, 0o700);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_uid_outside_the_allowlist_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("probe.ndjson");
    let other_uid = (nix::unistd::geteuid().as_raw() + 1).to_string();
    let served = Served::start(root.path(), &log, false, &["--allow-uid".into(), other_uid]);
    let client = Client::new(&served.socket);
    assert_eq!(
        refused_code(client.lease(&lease_request("a1")).await),
        "unauthorized"
    );
    assert_eq!(refused_code(client.openapi().await), "unauthorized");
    assert!(
        !served.state_dir.join("sessions").exists() || {
            std::fs::read_dir(served.state_dir.join("sessions"))
                .unwrap()
                .next()
                .is_none()
        }
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mutual_tls_end_to_end_and_its_refusals() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let certs_dir = root.path().join("certs");
    let foreign_dir = root.path().join("foreign");
    certs_init(&certs_dir);
    certs_init(&foreign_dir);
    let log = root.path().join("probe.ndjson");
    let flags = |name: &str| certs_dir.join(name).display().to_string();
    let served = Served::start(
        root.path(),
        &log,
        true,
        &[
            "--tls-cert".into(),
            flags("server.pem"),
            "--tls-key".into(),
            flags("server.key"),
            "--client-ca".into(),
            flags("ca.pem"),
            "--lease-ttl-secs".into(),
            "4".into(),
        ],
    );

    // Lease, reset and one click over mutual TLS.
    let client = served.remote(&certs_dir, Some(&certs_dir), None);
    let lease = client.lease(&lease_request("tls")).await.unwrap();
    let session = lease.session_id.clone();
    client
        .reset(
            &session,
            &ResetRequest {
                request_id: "r1".into(),
            },
        )
        .await
        .unwrap();
    let baseline = probe_events(&log).len();
    act(&client, &session, "c1", 0, click(250)).await.unwrap();
    let events = wait_for_events(&log, baseline + 2);
    assert_eq!(of_type(&events[baseline..], "button_press").len(), 1);
    let baseline = events.len();

    // A client certificate of another CA, or none, fails; so does trusting another CA.
    let mut refusals = Vec::new();
    for (name, client) in [
        (
            "foreign client cert",
            served.remote(&certs_dir, Some(&foreign_dir), None),
        ),
        ("no client cert", served.remote(&certs_dir, None, None)),
        (
            "foreign server CA",
            served.remote(&foreign_dir, Some(&certs_dir), None),
        ),
    ] {
        client.set_lease_token(&session, lease.lease_token.clone());
        let result = act(&client, &session, "c2", 1, click(260)).await;
        match result {
            Err(ClientError::Api(body)) => panic!("{name}: reached the router: {body:?}"),
            Err(error) => {
                let mut chain = format!("{name}: {error}");
                let mut source = std::error::Error::source(&error);
                while let Some(cause) = source {
                    chain.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                refusals.push(chain);
            }
            Ok(_) => panic!("{name}: accepted"),
        }
    }
    println!("{refusals:#?}");
    // The broker refused the certificates in the handshake (a TLS alert), not in HTTP.
    assert!(refusals[0].contains("fatal alert"), "{}", refusals[0]);
    assert!(
        refusals[1].contains("CertificateRequired"),
        "{}",
        refusals[1]
    );
    assert!(
        refusals[2].contains("invalid peer certificate"),
        "{}",
        refusals[2]
    );

    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", served.port.unwrap())).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "plain HTTP was answered");

    // The lease expires (4 s TTL): its token no longer reaches the desktop.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    let result = act(&client, &session, "c3", 1, click(270)).await;
    assert_eq!(refused_code(result), "lease_expired");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        probe_events(&log).len(),
        baseline,
        "a refused request reached the desktop"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn orchestration_credentials_admit_leasing_over_tls() {
    let root = tempfile::tempdir().unwrap();
    let certs_dir = root.path().join("certs");
    let foreign_dir = root.path().join("foreign");
    certs_init(&certs_dir);
    certs_init(&foreign_dir);
    let log = root.path().join("probe.ndjson");
    let flags = |name: &str| certs_dir.join(name).display().to_string();
    let served = Served::start(
        root.path(),
        &log,
        true,
        &[
            "--tls-cert".into(),
            flags("server.pem"),
            "--tls-key".into(),
            flags("server.key"),
            "--orchestrator-pub".into(),
            flags("orchestrator.pub"),
        ],
    );
    let expired = token(&certs_dir, "lease", "1ms");
    std::thread::sleep(Duration::from_millis(20));
    let cases = [
        ("none", None),
        ("expired", Some(expired)),
        ("wrong scope", Some(token(&certs_dir, "metrics", "5m"))),
        ("bad signature", Some(token(&foreign_dir, "lease", "5m"))),
        ("garbage", Some("not-a-credential".to_string())),
    ];
    let secrets: Vec<String> = cases.iter().filter_map(|(_, c)| c.clone()).collect();
    for (attempt_idx, (name, credential)) in cases.into_iter().enumerate() {
        let client = served.remote(&certs_dir, None, credential.clone());
        let result = client
            .lease(&lease_request(&format!("c{attempt_idx}")))
            .await;
        let code = refused_code(result);
        assert_eq!(code, "unauthorized", "{name}");
    }
    let valid = token(&certs_dir, "lease", "5m");
    let client = served.remote(&certs_dir, None, Some(valid));
    let lease = client.lease(&lease_request("ok")).await.unwrap();
    // The credential does not open session routes: the lease token does.
    let status = client.status(&lease.session_id).await.unwrap();
    assert_eq!(status.session_id, lease.session_id);
    // Cost of a request with its checks: a fresh TLS connection per request vs the Unix socket.
    let local = Client::new(&served.socket).with_private_tokens();
    local.set_lease_token(&lease.session_id, lease.lease_token.clone());
    for (name, client) in [("tls", &client), ("unix", &local)] {
        let mut samples = Vec::new();
        for _ in 0..30 {
            let started = Instant::now();
            client.status(&lease.session_id).await.unwrap();
            samples.push(started.elapsed());
        }
        samples.sort();
        println!(
            "status over {name} (connection + auth + handler): p50 {:?}, p95 {:?}",
            samples[15], samples[28]
        );
    }
    client.forget_lease_token(&lease.session_id);
    assert_eq!(
        refused_code(client.status(&lease.session_id).await),
        "unauthorized"
    );
    served.assert_log_free_of(&[&secrets[..], &[lease.lease_token.expose().to_string()]].concat());
}

#[test]
fn tcp_without_tls_is_refused_at_startup() {
    let root = tempfile::tempdir().unwrap();
    let output = Command::new(deskbroker())
        .arg("serve")
        .arg("--socket")
        .arg(root.path().join("b.sock"))
        .arg("--state-dir")
        .arg(root.path().join("state"))
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("requires TLS"), "{stderr}");
}

/// More idle connections than the cap (and than the broker's open-file limit, lowered to 256
/// once it listens) on the Unix socket and the TLS listener: a legitimate client still gets its
/// answers on both. Before the cap, the broker ran out of descriptors and answered nobody.
#[tokio::test(flavor = "multi_thread")]
async fn idle_connection_floods_leave_both_listeners_answering() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let root = tempfile::tempdir().unwrap();
    let certs_dir = root.path().join("certs");
    certs_init(&certs_dir);
    let flags = |name: &str| certs_dir.join(name).display().to_string();
    let served = Served::start(
        root.path(),
        &root.path().join("probe.ndjson"),
        true,
        &[
            "--tls-cert".into(),
            flags("server.pem"),
            "--tls-key".into(),
            flags("server.key"),
            "--max-connections".into(),
            "32".into(),
        ],
    );
    let status = Command::new("prlimit")
        .arg(format!("--pid={}", served.child.id()))
        .arg("--nofile=256:")
        .status()
        .unwrap();
    assert!(status.success(), "prlimit");
    let local = Client::new(&served.socket);
    let remote = served.remote(&certs_dir, None, None);
    let answered_within = |client: Client| async move {
        let started = Instant::now();
        let answer = tokio::time::timeout(Duration::from_secs(10), client.openapi()).await;
        assert!(matches!(answer, Ok(Ok(_))), "no answer: {answer:?}");
        started.elapsed()
    };
    let before = (
        answered_within(local.clone()).await,
        answered_within(remote.clone()).await,
    );
    // 300 idle connections on the socket, 300 that completed TLS and then said nothing.
    let mut held_unix = Vec::new();
    for _ in 0..300 {
        held_unix.push(std::os::unix::net::UnixStream::connect(&served.socket).unwrap());
    }
    let mut held_tls = Vec::new();
    let connector = tls_connector(&certs_dir);
    for _ in 0..300 {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", served.port.unwrap()))
            .await
            .unwrap();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        if let Ok(Ok(stream)) =
            tokio::time::timeout(Duration::from_secs(5), connector.connect(name, tcp)).await
        {
            held_tls.push(stream);
        }
    }
    assert!(
        held_tls.len() > 32,
        "only {} TLS connections held",
        held_tls.len()
    );
    let during = (
        answered_within(local.clone()).await,
        answered_within(remote.clone()).await,
    );
    eprintln!(
        "openapi latency before the flood: unix {:?}, tls {:?}; with 300+{} idle: unix {:?}, tls {:?}",
        before.0,
        before.1,
        held_tls.len(),
        during.0,
        during.1
    );
    drop(held_unix);
    drop(held_tls);
}

fn tls_connector(certs_dir: &Path) -> tokio_rustls::TlsConnector {
    use rustls_pki_types::pem::PemObject as _;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_file_iter(certs_dir.join("ca.pem")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
}
