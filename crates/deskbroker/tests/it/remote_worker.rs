//! A broker with `serve --worker tcp://…` driving a real Xvfb desktop through
//! `deskbroker-remote-worker --listen` over mutual TLS (`docs/worker-protocol.md`, "Transport"): lease,
//! reset, click, type, screenshot, a connection cut mid-session (the broker reconnects to the
//! same worker instance), a broker restart (it reattaches through the session's record, no
//! `/proc`), release; and the refusals: a broker whose client certificate the worker does not
//! know, a worker whose certificate the broker does not know, a client with no certificate,
//! and a worker instance that is not the session's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use desk_contract::DisplaySize;
use desk_desktop::{BackendError, RemoteWorker};
use desk_test_support::{Openbox, Xvfb};
use serde_json::json;

use crate::probe::{act, leased_probe, of_type, probe_events, typed_text};
use crate::support::{
    Broker, deskbroker, png_pixels, probe_binary, remote_worker_program, xvfb_available,
};

const DISPLAY: DisplaySize = DisplaySize {
    width: 1280,
    height: 800,
};

/// `deskbroker certs init` into `dir`: a CA, a server identity for 127.0.0.1, a client one.
fn certs(dir: &Path) -> PathBuf {
    let status = Command::new(deskbroker())
        .args(["certs", "init", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    dir.to_path_buf()
}

/// `deskbroker-remote-worker --listen tcp://127.0.0.1:0` on `xvfb`, launching the probe; killed on
/// drop.
struct ListeningWorker {
    child: Child,
    addr: SocketAddr,
}

impl ListeningWorker {
    fn start(xvfb: &Xvfb, certs: &Path, log: &Path) -> ListeningWorker {
        let mut child = Command::new(remote_worker_program())
            .args(["--listen", "tcp://127.0.0.1:0", "--cert"])
            .arg(certs.join("server.pem"))
            .arg("--key")
            .arg(certs.join("server.key"))
            .arg("--client-ca")
            .arg(certs.join("ca.pem"))
            .arg("--launch")
            .arg(probe_binary())
            .arg("--out")
            .arg(log)
            .env("DISPLAY", xvfb.display())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the worker exited"
            );
            if let Some(addr) = line.trim().strip_prefix("worker listening on ") {
                break addr.parse().unwrap();
            }
        };
        // Keep draining its log so the worker never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        ListeningWorker { child, addr }
    }
}

impl Drop for ListeningWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP relay the test can cut: every connection to it is forwarded to the worker, and
/// [`Relay::cut`] ends them all at once, as a network failure would.
struct Relay {
    addr: SocketAddr,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let accepted = Arc::clone(&open);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut open = accepted.lock().unwrap();
                open.push(client.try_clone().unwrap());
                open.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay { addr, open }
    }

    fn cut(&self) {
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn worker_args(addr: SocketAddr, certs: &Path) -> Vec<String> {
    vec![
        "--worker".into(),
        format!("tcp://{addr}"),
        "--worker-ca".into(),
        certs.join("ca.pem").display().to_string(),
        "--worker-cert".into(),
        certs.join("client.pem").display().to_string(),
        "--worker-key".into(),
        certs.join("client.key").display().to_string(),
        "--max-sessions".into(),
        "1".into(),
    ]
}

/// The probe's button presses once there are `expected` of them (X delivery is asynchronous),
/// or after 2 s.
fn presses(log: &Path, expected: usize) -> usize {
    for _ in 0..100 {
        let count = of_type(&probe_events(log), "button_press").len();
        if count >= expected {
            return count;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    of_type(&probe_events(log), "button_press").len()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_drives_a_remote_worker_over_mutual_tls_and_reconnects() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let certs = certs(&root.path().join("certs"));
    let log = root.path().join("probe.ndjson");
    let xvfb = Xvfb::start(DISPLAY.width, DISPLAY.height).unwrap();
    let _openbox = Openbox::start(&xvfb);
    let worker = ListeningWorker::start(&xvfb, &certs, &log);
    let relay = Relay::start(worker.addr);
    let args = worker_args(relay.addr, &certs);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut broker =
        Broker::start_with(root.path(), None, &root.path().join("unused.ndjson"), &args);

    // Lease and reset: the handoff binds the worker's probe, maximized and settled.
    let session = leased_probe(&broker, "remote").await;
    let client = broker.client();
    let click =
        |x: u32| json!({"type": "click", "x": x, "y": 150, "button": "left", "intent": "click"});
    act(&client, &session, "r-1", 0, click(200)).await.unwrap();
    assert_eq!(presses(&log, 1), 1);
    act(
        &client,
        &session,
        "r-2",
        1,
        json!({"type": "type", "text": "ab", "intent": "text"}),
    )
    .await
    .unwrap();
    let mut events = probe_events(&log);
    for _ in 0..100 {
        if typed_text(&events) == "ab" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        events = probe_events(&log);
    }
    assert_eq!(typed_text(&events), "ab");
    let shot = client.screenshot(&session).await.unwrap();
    assert_eq!((shot.width, shot.height), (DISPLAY.width, DISPLAY.height));
    let (pixels, _, _) = png_pixels(&shot.png_base64);
    assert!(!pixels.is_empty());

    // The network drops the connection: the next action reconnects to the same worker and
    // is delivered exactly once.
    relay.cut();
    std::thread::sleep(Duration::from_millis(200));
    act(&client, &session, "r-3", 2, click(300)).await.unwrap();
    assert_eq!(presses(&log, 2), 2);

    // A broker restart reattaches through the session's record, not /proc.
    broker.restart(None);
    let client = broker.client();
    act(&client, &session, "r-4", 3, click(400)).await.unwrap();
    assert_eq!(presses(&log, 3), 3);
    client.release(&session).await.unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        of_type(&probe_events(&log), "button_press").len(),
        3,
        "never replayed"
    );

    // Refusals, each before anything is sent.
    let direct = format!("tcp://{}", worker.addr);
    let other = certs_other(root.path());
    let unknown_client = RemoteWorker::new(
        &direct,
        &certs.join("ca.pem"),
        &other.join("client.pem"),
        &other.join("client.key"),
    )
    .unwrap();
    let refused = unknown_client.check(DISPLAY, None).unwrap_err();
    assert!(
        matches!(refused, BackendError::WorkerTlsRefused(_)),
        "{refused:?}"
    );
    let unknown_worker = RemoteWorker::new(
        &direct,
        &other.join("ca.pem"),
        &certs.join("client.pem"),
        &certs.join("client.key"),
    )
    .unwrap();
    let refused = unknown_worker.check(DISPLAY, None).unwrap_err();
    assert!(
        matches!(refused, BackendError::WorkerTlsRefused(_)),
        "{refused:?}"
    );
    assert_no_client_certificate_is_refused(worker.addr, &certs);
    let known = RemoteWorker::new(
        &direct,
        &certs.join("ca.pem"),
        &certs.join("client.pem"),
        &certs.join("client.key"),
    )
    .unwrap();
    let instance = known.check(DISPLAY, None).unwrap();
    let mismatch = known
        .check(DISPLAY, Some("w_00000000000000000000000000000000"))
        .unwrap_err();
    assert!(
        matches!(mismatch, BackendError::WorkerMismatch(_)),
        "{mismatch:?}"
    );
    assert_eq!(known.check(DISPLAY, Some(&instance)).unwrap(), instance);
    let unreachable = RemoteWorker::new(
        &format!(
            "tcp://{}",
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
        ),
        &certs.join("ca.pem"),
        &certs.join("client.pem"),
        &certs.join("client.key"),
    )
    .unwrap();
    // The listener above is dropped at once: nothing answers on its port.
    let refused = unreachable.check(DISPLAY, None).unwrap_err();
    assert!(
        matches!(refused, BackendError::WorkerUnreachable(_)),
        "{refused:?}"
    );
    assert_eq!(of_type(&probe_events(&log), "button_press").len(), 3);
}

fn certs_other(root: &Path) -> PathBuf {
    certs(&root.join("other-certs"))
}

/// A TLS client that trusts the worker but presents no certificate gets no answer to `hello`.
fn assert_no_client_certificate_is_refused(addr: SocketAddr, certs: &Path) {
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(certs.join("ca.pem")).unwrap();
    for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(&ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let _ = tls.write_all(b"{\"id\":1,\"op\":{\"type\":\"hello\"}}\n");
    let mut answer = Vec::new();
    let read = tls.read_to_end(&mut answer);
    assert!(
        read.is_err() && answer.is_empty(),
        "a client without a certificate must get no answer: {read:?} {:?}",
        String::from_utf8_lossy(&answer)
    );
}
