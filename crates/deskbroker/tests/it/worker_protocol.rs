//! The worker JSONL protocol itself (`docs/worker-protocol.md`), table-driven: literal request
//! lines sent to `deskbroker-worker` over stdin/stdout on a private Xvfb, and what each answer
//! must be. Nothing here uses the launcher or desk-contract's types, so the same table holds a
//! worker written in another language to the protocol.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use desk_test_support::Xvfb;
use serde_json::Value;

use crate::support::worker_program;

const SETTLE: &str = r#"{"quiet_after_change_ms":40,"quiet_without_change_ms":60,"max_ms":500}"#;

/// What one answer must be: its id and either `ok.kind` or `error.kind`, plus a check on the
/// whole answer and the binary attachment that followed its line (empty when none).
struct Expect {
    id: u64,
    ok: Option<&'static str>,
    error: Option<&'static str>,
    check: fn(&Value, &[u8]) -> bool,
}

fn any(_: &Value, _: &[u8]) -> bool {
    true
}

fn table() -> Vec<(String, Expect)> {
    let execute = |id: u64, action: &str| {
        format!(r#"{{"id":{id},"op":{{"type":"execute","action":{action},"settle":{SETTLE}}}}}"#)
    };
    let ok = |id, kind, check| Expect {
        id,
        ok: Some(kind),
        error: None,
        check,
    };
    let refused = |id| Expect {
        id,
        ok: None,
        error: Some("invalid_request"),
        check: any,
    };
    vec![
        (
            r#"{"id":1,"op":{"type":"hello"}}"#.to_string(),
            ok(1, "hello", |v, _| {
                v["ok"]["protocol_version"] == desk_contract::worker::WORKER_PROTOCOL_VERSION
                    && v["ok"]["display"] == serde_json::json!({"width": 320, "height": 240})
            }),
        ),
        (
            r#"{"id":2,"op":{"type":"capture"}}"#.to_string(),
            // The frame's PNG is not in the JSON: it follows the line, as many bytes as
            // `attachment_len` says.
            ok(2, "frame", |v, png| {
                v["ok"]["width"] == 320
                    && v["ok"].get("png").is_none()
                    && v["attachment_len"] == png.len()
                    && png.starts_with(b"\x89PNG\r\n\x1a\n")
            }),
        ),
        (
            r#"{"id":3,"op":{"type":"facts"}}"#.to_string(),
            ok(3, "facts", |v, png| {
                v["ok"]["held"] == serde_json::json!([])
                    && v.get("attachment_len").is_none()
                    && png.is_empty()
            }),
        ),
        (
            execute(4, r#"{"type":"move","to":{"x":10,"y":20},"duration_ms":0}"#),
            ok(4, "outcome", |v, png| {
                v["ok"]["events"].as_array().is_some_and(|events| {
                    events.len() == 1
                        && events[0]["type"] == "mouse_move"
                        && events[0]["x"] == 10
                        && events[0]["y"] == 20
                }) && v["ok"]["settle"]["outcome"] == "stable"
                    && v["ok"]["focus_after"]["pointer"] == serde_json::json!({"x": 10, "y": 20})
                    && v["attachment_len"] == png.len()
                    && png.starts_with(b"\x89PNG")
            }),
        ),
        (
            execute(5, r#"{"type":"done"}"#),
            ok(5, "outcome", |v, _| {
                v["ok"]["events"] == serde_json::json!([])
                    && v["ok"]["settle"]["outcome"] == "skipped"
            }),
        ),
        // Out of bounds: refused before input, under the request's own id.
        (
            execute(
                6,
                r#"{"type":"click","at":{"x":320,"y":0},"button":"left","modifiers":[]}"#,
            ),
            refused(6),
        ),
        // Unparseable lines are answered with id 0.
        ("not json".to_string(), refused(0)),
        (
            r#"{"id":8,"op":{"type":"teleport"}}"#.to_string(),
            refused(0),
        ),
        (
            r#"{"id":9,"op":{"type":"hello"},"extra":true}"#.to_string(),
            refused(0),
        ),
        (
            execute(10, r#"{"type":"move","to":{"x":1,"y":1},"speed":9}"#),
            refused(0),
        ),
        // The worker is still in order after the refusals.
        (
            r#"{"id":11,"op":{"type":"release_held"}}"#.to_string(),
            ok(11, "released", |v, _| {
                v["ok"]["released"] == serde_json::json!([])
            }),
        ),
        (
            r#"{"id":12,"op":{"type":"shutdown"}}"#.to_string(),
            ok(12, "bye", any),
        ),
    ]
}

#[test]
fn the_worker_answers_the_protocol_table() {
    let Some(xvfb) = Xvfb::start(320, 240) else {
        return;
    };
    let mut worker = Command::new(worker_program())
        .env("DISPLAY", xvfb.display())
        .env_remove("DESKBROKER_WORKER_SOCKET")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = worker.stdin.take().unwrap();
    let mut stdout = BufReader::new(worker.stdout.take().unwrap());
    for (request, expect) in table() {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let answer: Value = serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("{request}: answer {line:?} is not JSON: {error}"));
        let mut attachment = vec![0u8; answer["attachment_len"].as_u64().unwrap_or(0) as usize];
        stdout.read_exact(&mut attachment).unwrap();
        assert_eq!(answer["id"], expect.id, "{request}: {line}");
        match (expect.ok, expect.error) {
            (Some(kind), _) => assert_eq!(answer["ok"]["kind"], kind, "{request}: {line}"),
            (None, Some(kind)) => {
                assert_eq!(answer["error"]["kind"], kind, "{request}: {line}");
                assert!(answer["error"]["message"].is_string(), "{line}");
            }
            (None, None) => unreachable!("every expectation names a kind"),
        }
        assert!((expect.check)(&answer, &attachment), "{request}: {line}");
    }
    // After `bye` the worker closes its output and exits cleanly.
    let mut rest = String::new();
    assert_eq!(stdout.read_line(&mut rest).unwrap(), 0, "{rest}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = worker.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the worker did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}
