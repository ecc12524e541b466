//! The serve loop against a scripted handler, the command line, and a real mutual-TLS
//! round trip on loopback with certificates made by desk-test-support: a known client is served, a
//! client without a certificate or with one of another CA gets nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use desk_contract::DisplaySize;
use desk_contract::worker::{HelloInfo, WorkerOp, WorkerReply, WorkerValue};
use desk_test_support::write_worker_certs as make_certs;

use crate::{Duplex, Ended, Handler, Identity, ListenArgs, TcpEndpoint, serve_connection, tls};

/// Answers `hello` and `shutdown`, counts requests and disconnects.
#[derive(Default)]
struct Script {
    handled: usize,
    disconnects: usize,
}

impl Handler for Script {
    fn handle(&mut self, op: WorkerOp) -> WorkerReply {
        self.handled += 1;
        match op {
            WorkerOp::Shutdown => WorkerReply::Ok(WorkerValue::Bye),
            _ => WorkerReply::Ok(WorkerValue::Hello(HelloInfo {
                protocol_version: 3,
                display: DisplaySize {
                    width: 8,
                    height: 6,
                },
                capture_path: "test".into(),
                server_vendor: "test".into(),
                instance_id: None,
                app_pid: None,
            })),
        }
    }

    fn disconnected(&mut self) {
        self.disconnects += 1;
    }
}

fn identity() -> Identity {
    Identity {
        instance_id: "w_test".into(),
        app_pid: Some(42),
    }
}

#[test]
fn the_loop_answers_in_order_stamps_hello_and_stops_at_shutdown() {
    let input = b"{\"id\":1,\"op\":{\"type\":\"hello\"}}\n\nnot json\n{\"id\":2,\"op\":{\"type\":\"shutdown\"}}\n{\"id\":3,\"op\":{\"type\":\"hello\"}}\n";
    let mut output = Vec::new();
    let mut script = Script::default();
    let stream = Duplex {
        reader: &input[..],
        writer: &mut output,
    };
    let ended = serve_connection(stream, &mut script, Some(&identity())).unwrap();
    assert_eq!(ended, Ended::Shutdown);
    assert_eq!(
        script.handled, 2,
        "the line after shutdown is never handled"
    );
    let lines: Vec<serde_json::Value> = output
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["ok"]["instance_id"], "w_test");
    assert_eq!(lines[0]["ok"]["app_pid"], 42);
    assert_eq!(lines[1]["id"], 0);
    assert_eq!(lines[1]["error"]["kind"], "invalid_request");
    assert_eq!(lines[2]["ok"]["kind"], "bye");
    // Without an identity (stdin/stdout, the Unix socket) hello says none.
    let mut output = Vec::new();
    let stream = Duplex {
        reader: &b"{\"id\":1,\"op\":{\"type\":\"hello\"}}\n"[..],
        writer: &mut output,
    };
    let ended = serve_connection(stream, &mut Script::default(), None).unwrap();
    assert_eq!(ended, Ended::Disconnected);
    let line: serde_json::Value = serde_json::from_slice(output.trim_ascii_end()).unwrap();
    assert!(line["ok"].get("instance_id").is_none());
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

#[test]
fn endpoints_and_listen_flags_are_parsed_strictly() {
    let endpoint = TcpEndpoint::parse("tcp://[::1]:7000").unwrap();
    assert_eq!((endpoint.host.as_str(), endpoint.port), ("::1", 7000));
    assert_eq!(endpoint.authority(), "[::1]:7000");
    assert_eq!(
        TcpEndpoint::parse("tcp://worker.example:443")
            .unwrap()
            .to_string(),
        "tcp://worker.example:443"
    );
    for bad in [
        "worker:1",
        "tcp://worker",
        "tcp://:1",
        "tcp://w:99999",
        "http://w:1",
        "tcp://a/b:1",
    ] {
        assert!(TcpEndpoint::parse(bad).is_err(), "{bad}");
    }
    let full = strings(&[
        "--listen",
        "tcp://0.0.0.0:7000",
        "--cert",
        "c.pem",
        "--key",
        "k.pem",
        "--client-ca",
        "ca.pem",
        "--launch",
        "notepad.exe",
        "--key",
        "x",
    ]);
    let args = ListenArgs::parse(&full).unwrap();
    assert_eq!(args.launch, strings(&["notepad.exe", "--key", "x"]));
    assert_eq!(args.key, Path::new("k.pem"));
    // Every one of the four is required: no plaintext, no unauthenticated clients.
    for missing in ["--listen", "--cert", "--key", "--client-ca"] {
        let position = full.iter().position(|arg| arg == missing).unwrap();
        let mut without = full.clone();
        without.drain(position..position + 2);
        assert!(ListenArgs::parse(&without).is_err(), "{missing}");
    }
    assert!(ListenArgs::parse(&strings(&["--listen", "tcp://h:1", "--insecure"])).is_err());
}

/// Says hello over TLS with `config`; the answer line, or the error that ended the exchange.
fn hello_over(
    addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> Result<String, std::io::Error> {
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    stream.write_all(b"{\"id\":1,\"op\":{\"type\":\"hello\"}}\n")?;
    let mut line = String::new();
    BufReader::new(&mut stream).read_line(&mut line)?;
    if line.is_empty() {
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest)?;
    }
    Ok(line)
}

#[test]
fn mutual_tls_serves_a_known_client_and_refuses_the_others() {
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    make_certs(ours.path());
    make_certs(theirs.path());
    let args = ListenArgs::parse(&strings(&[
        "--listen",
        "tcp://127.0.0.1:0",
        "--cert",
        &ours.path().join("server.pem").display().to_string(),
        "--key",
        &ours.path().join("server.key").display().to_string(),
        "--client-ca",
        &ours.path().join("ca.pem").display().to_string(),
    ]))
    .unwrap();
    let (listener, config) = args.bind().unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut script = Script::default();
        crate::listen::serve(listener, config, &identity(), &mut script)
    });
    let known = tls::broker_config(
        &ours.path().join("ca.pem"),
        &ours.path().join("client.pem"),
        &ours.path().join("client.key"),
    )
    .unwrap();
    let answer = hello_over(addr, known).unwrap();
    assert!(answer.contains("\"instance_id\":\"w_test\""), "{answer}");

    // A client certificate of another CA: the worker ends the session with an alert.
    let stranger = tls::broker_config(
        &ours.path().join("ca.pem"),
        &theirs.path().join("client.pem"),
        &theirs.path().join("client.key"),
    )
    .unwrap();
    assert!(hello_over(addr, stranger).is_err());
    // No client certificate at all.
    let roots = tls::pinned_roots(&ours.path().join("ca.pem")).unwrap();
    let anonymous = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    assert!(hello_over(addr, Arc::new(anonymous)).is_err());
    // A worker whose certificate the broker's pinned CA did not sign.
    let pinned_elsewhere = tls::broker_config(
        &theirs.path().join("ca.pem"),
        &ours.path().join("client.pem"),
        &ours.path().join("client.key"),
    )
    .unwrap();
    assert!(hello_over(addr, pinned_elsewhere).is_err());
    // The known client is still served after the refusals.
    let again = tls::broker_config(
        &ours.path().join("ca.pem"),
        &ours.path().join("client.pem"),
        &ours.path().join("client.key"),
    )
    .unwrap();
    assert!(
        hello_over(addr, again)
            .unwrap()
            .contains("\"kind\":\"hello\"")
    );
}

#[test]
fn unreadable_certificate_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let error = tls::read_certs(&empty).unwrap_err().to_string();
    assert!(
        error.contains("empty.pem") && error.contains("no certificate"),
        "{error}"
    );
    assert!(tls::read_key(&dir.path().join("missing.key")).is_err());
}
