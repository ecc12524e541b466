//! The Windows worker's TCP listener under Wine: `desk-win-worker --listen` with mutual TLS
//! (`desk_worker_io::listen`), reached from Linux the way a broker reaches it. A broker with a
//! certificate of the worker's client CA is served: `hello` names the worker instance and the
//! launched app, the handoff binds notepad, typed text arrives exactly once (read back with
//! `WM_GETTEXT`) and a frame decodes; a client without a certificate gets no answer; a new
//! connection finds the same instance and nothing is replayed. Opt-in like the rest of this
//! suite (`DESK_WIN_WORKER_EXE`, `scripts/wine-conformance.sh`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use desk_contract::desktop::{Handoff, WindowRules};
use desk_contract::worker::{WorkerOp, WorkerReply, WorkerRequest, WorkerResponse, WorkerValue};
use desk_contract::{InputAction, SettlePolicy};
use desk_test_support::write_worker_certs;

use super::{Wine, decode, edit_text, wine_desktop};

/// A Unix path as the Windows program under Wine opens it (drive Z: is the Unix root).
fn wine_path(path: &Path) -> String {
    format!("Z:{}", path.display().to_string().replace('/', "\\"))
}

/// One TLS connection to the worker, speaking the worker protocol.
struct TlsClient {
    stream: BufReader<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
    next_id: u64,
}

impl TlsClient {
    fn connect(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> std::io::Result<Self> {
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let connection = rustls::ClientConnection::new(config, name).unwrap();
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Self {
            stream: BufReader::new(rustls::StreamOwned::new(connection, tcp)),
            next_id: 0,
        })
    }

    fn request(&mut self, op: WorkerOp) -> std::io::Result<WorkerReply> {
        self.next_id += 1;
        let mut line = serde_json::to_vec(&WorkerRequest {
            id: self.next_id,
            op,
        })
        .unwrap();
        line.push(b'\n');
        self.stream.get_mut().write_all(&line)?;
        self.stream.get_mut().flush()?;
        let mut text = String::new();
        if self.stream.read_line(&mut text)? == 0 {
            return Err(std::io::Error::other("the worker closed the connection"));
        }
        let mut response: WorkerResponse = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("unreadable answer {text:?}: {error}"));
        let mut png = vec![0u8; usize::try_from(response.attachment_len).unwrap()];
        self.stream.read_exact(&mut png)?;
        response.attach_png(png).unwrap();
        assert_eq!(response.id, self.next_id, "answer out of order");
        Ok(response.reply)
    }

    fn hello(&mut self) -> desk_contract::worker::HelloInfo {
        match self.request(WorkerOp::Hello).unwrap() {
            WorkerReply::Ok(WorkerValue::Hello(hello)) => hello,
            other => panic!("hello failed: {other:?}"),
        }
    }
}

#[test]
fn the_worker_serves_a_broker_over_mutual_tls_under_wine() {
    let Some((exe, _xvfb, wine, _prefix_dir)) = wine_desktop() else {
        return;
    };
    let certs = tempfile::tempdir().unwrap();
    write_worker_certs(certs.path());
    let cert = |name: &str| wine_path(&certs.path().join(name));
    let mut child = wine
        .command("wine")
        .arg(&exe)
        .args(["--listen", "tcp://127.0.0.1:0", "--cert"])
        .arg(cert("server.pem"))
        .arg("--key")
        .arg(cert("server.key"))
        .arg("--client-ca")
        .arg(cert("ca.pem"))
        .args(["--launch", "notepad.exe"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (mut addr, mut pid) = (None, None);
        let mut line = String::new();
        while addr.is_none() || pid.is_none() {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "worker exited");
            let text = line.trim();
            if let Some(rest) = text.strip_prefix("worker listening on ") {
                addr = Some(rest.parse::<SocketAddr>().unwrap());
            } else if let Some(rest) = text.strip_prefix("launched pid ") {
                pid = Some(rest.parse::<u32>().unwrap());
            }
        }
        std::thread::spawn(move || for _ in stderr.lines().map_while(Result::ok) {});
        drive(&wine, &exe, certs.path(), addr.unwrap(), pid.unwrap());
    }));
    let _ = child.kill();
    let _ = child.wait();
    wine.kill_all();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

fn drive(wine: &Wine, exe: &Path, certs: &Path, addr: SocketAddr, pid: u32) {
    let broker = || {
        desk_worker_io::tls::broker_config(
            &certs.join("ca.pem"),
            &certs.join("client.pem"),
            &certs.join("client.key"),
        )
        .unwrap()
    };
    // A client without a certificate is never served.
    let roots = desk_worker_io::tls::pinned_roots(&certs.join("ca.pem")).unwrap();
    let anonymous = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let refused = TlsClient::connect(addr, Arc::new(anonymous))
        .and_then(|mut client| client.request(WorkerOp::Hello));
    assert!(
        refused.is_err(),
        "served without a client certificate: {refused:?}"
    );

    let mut client = TlsClient::connect(addr, broker()).unwrap();
    let hello = client.hello();
    let instance = hello
        .instance_id
        .clone()
        .expect("a listening worker names itself");
    assert_eq!(hello.app_pid, Some(pid), "{hello:?}");
    assert_eq!(hello.capture_path, "gdi", "{hello:?}");
    let rules = WindowRules {
        class: Some("Notepad".into()),
        title_prefix: None,
        ready_title_contains: Some("Notepad".into()),
        maximize: true,
        overlays: vec![],
        timeout_ms: 60_000,
        prohibited: vec![],
    };
    let handoff: Handoff = match client
        .request(WorkerOp::AwaitApp {
            pid,
            rules,
            settle: SettlePolicy::default(),
        })
        .unwrap()
    {
        WorkerReply::Ok(WorkerValue::Handoff(handoff)) => *handoff,
        other => panic!("await_app failed: {other:?}"),
    };
    assert_eq!(handoff.window.class, "Notepad");
    decode(&handoff.frame);

    let text = "over tls 7";
    match client
        .request(WorkerOp::Execute {
            action: InputAction::Type { text: text.into() },
            settle: SettlePolicy::default(),
            generation: None,
        })
        .unwrap()
    {
        WorkerReply::Ok(WorkerValue::Outcome(outcome)) => {
            assert_eq!(outcome.events.len(), text.len() * 2);
        }
        other => panic!("type failed: {other:?}"),
    }
    assert_eq!(edit_text(wine, exe), text);
    match client.request(WorkerOp::Capture).unwrap() {
        WorkerReply::Ok(WorkerValue::Frame(frame)) => {
            decode(&frame);
        }
        other => panic!("capture failed: {other:?}"),
    }

    // A broker that reconnects finds the same worker instance, and nothing was replayed.
    drop(client);
    let mut again = TlsClient::connect(addr, broker()).unwrap();
    assert_eq!(
        again.hello().instance_id.as_deref(),
        Some(instance.as_str())
    );
    assert_eq!(edit_text(wine, exe), text);
    let _ = again.request(WorkerOp::Shutdown);
    println!("desk-win-worker --listen under Wine: mutual TLS served, refused, reattached");
}
