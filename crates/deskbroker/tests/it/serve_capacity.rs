//! `serve --max-sessions --memory-budget-mib --health-listen` and `session drain`, through the
//! real binary over fake desktops: the admission refusals, the health listener's readiness, the
//! drain command's exit codes (`docs/exit-codes.md`).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use desk_client::Client;
use desk_contract::ErrorCode;
use desk_contract::api::LeaseRequest;
use serde_json::Value;

use crate::support::{FakeServer, deskbroker};

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on the health listener: status and body, or `None` while nothing listens.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

fn readyz(port: u16) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some((status, body)) = get(port, "/readyz") {
            return (status, serde_json::from_str(&body).unwrap());
        }
        assert!(
            Instant::now() < deadline,
            "the health listener did not come up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn drain(server: &FakeServer, wait_secs: &str) -> (Option<i32>, Value) {
    let output = Command::new(deskbroker())
        .args([
            "--log",
            "warn",
            "session",
            "drain",
            "--wait-secs",
            wait_secs,
        ])
        .arg("--socket")
        .arg(&server.socket)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let capacity = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("drain printed {stdout:?}: {error}"));
    (output.status.code(), capacity)
}

fn lease(attempt: &str) -> LeaseRequest {
    LeaseRequest {
        task_id: "t".into(),
        attempt_id: attempt.into(),
        profile: None,
    }
}

#[tokio::test]
async fn serve_admits_by_memory_reports_readiness_and_drains() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // The default profile is librecad (1024 MiB): two fit in 3000 MiB, a third does not.
    let server = FakeServer::start(
        root.path(),
        &[
            "--max-sessions",
            "5",
            "--memory-budget-mib",
            "3000",
            "--health-listen",
            &listen,
        ],
    );
    let client = Client::new(server.socket.clone());
    let (status, capacity) = readyz(port);
    assert_eq!(status, 200, "{capacity}");
    assert_eq!(get(port, "/livez").map(|(status, _)| status), Some(200));
    assert_eq!(get(port, "/v1/leases").map(|(status, _)| status), Some(404));

    let first = client.lease(&lease("a1")).await.unwrap();
    let second = client.lease(&lease("a2")).await.unwrap();
    let refused = client.lease(&lease("a3")).await.unwrap_err();
    let body = refused.api_body().expect("a typed refusal").clone();
    assert_eq!(body.code, ErrorCode::LeaseConflict);
    assert!(
        body.message
            .contains("2048 of 3000 MiB are reserved by 2 live sessions"),
        "{}",
        body.message
    );
    let (status, capacity) = readyz(port);
    assert_eq!(
        (status, &capacity["reserved_mib"]),
        (503, &Value::from(2048))
    );

    // Sessions still live: drain answers at once with exit 1 and the count.
    let (code, capacity) = drain(&server, "0");
    assert_eq!(code, Some(1), "{capacity}");
    assert_eq!(
        (&capacity["draining"], &capacity["live_sessions"]),
        (&Value::from(true), &Value::from(2))
    );
    assert_eq!(readyz(port).1["reason"], "draining");
    client.release(&first.session_id).await.unwrap();
    client.release(&second.session_id).await.unwrap();
    // Draining lasts until restart: room again, still no lease.
    let refused = client.lease(&lease("a4")).await.unwrap_err();
    assert!(
        refused.api_body().unwrap().message.contains("draining"),
        "{refused}"
    );
    let (code, capacity) = drain(&server, "5");
    assert_eq!(code, Some(0), "{capacity}");
    assert_eq!(capacity["live_sessions"], 0);
}

#[test]
fn bad_capacity_flags_are_usage_errors() {
    for flags in [
        ["--memory-budget-mib", "4G"],
        ["--memory-budget-mib", "10"],
        ["--max-sessions", "0"],
        ["--health-listen", "8080"],
    ] {
        let output = Command::new(deskbroker())
            .args(["serve", "--backend", "fake"])
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flags:?}");
    }
}
