//! The wire, byte for byte (issue 31): recorded HTTP exchanges with `deskbroker serve --backend
//! fake`, replayed against today's binary and compared.
//!
//! One scripted conversation ([`script`]) runs over the broker's Unix socket as raw HTTP/1.1
//! (one connection per request, `Connection: close`): a lease, reset, screenshot, actions (ok,
//! invalid, a duplicate request id replayed and one conflicting, a skipped index), programs,
//! control claim / stop / restart, zoom, capabilities, checkpoint, artifact, events, status,
//! release, the kill switch, metrics, the whole OpenAPI document, the 401/404/405/413 refusals,
//! the clipboard (off by default) and the review routes' refusals. Each exchange is one file
//! under `tests/wire/` holding the request, then the response's status line, headers (without
//! `date`) and body, after normalization.
//!
//! Normalization, done by this recorder on both sides so the fixtures and the replay compare
//! the same way; it replaces only what is random per run:
//! - random identifiers ([`RANDOM_IDS`]: session ids `s_` + 32 hex digits, screenshot ids
//!   `shot_` + 24 hex digits, kill record ids `kill-` + 32 hex digits) and the lease tokens of lease answers, wherever they appear, by
//!   placeholders numbered in order of first appearance over the conversation (`<session_1>`,
//!   `<shot_3>`, `<lease_token_2>`), so the same id twice still reads the same; the temporary
//!   directory by `<root>`;
//! - in bodies, the number after `"<key>":` for each key in [`VOLATILE`] (wall-clock times and
//!   measured durations) by `"<volatile>"`, in the text itself, so field order and every other
//!   byte stay as sent; a `null` stays `null`;
//! - the `content-length` of a body that normalization changed by `<normalized>`;
//! - the metrics exposition is reduced to its metric names and label sets, without values.
//!
//! Everything else (status, header names, order and values, the field order of JSON bodies,
//! the PNG and DXF bytes, error messages) must be identical.
//!
//! Re-record (after a deliberate change of the wire):
//! `DESK_WIRE_RECORD=1 cargo test -p deskbroker --test wire`; to record from another binary,
//! also set `DESK_WIRE_BINARY=/path/to/deskbroker`. Recording removes the old files first. The
//! fixtures were recorded from the binary built at commit 7fc0c94; `00-openapi` and
//! `44-accessibility` were re-recorded for two deliberate changes since (b20734a, 7c9c654).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// JSON keys whose values are wall-clock times or measured durations, different on every run
/// (found by recording twice and comparing).
const VOLATILE: &[&str] = &[
    "expires_at",
    "timestamp_ms",
    "accepted_at_ms",
    "elapsed_ms",
    "observation_elapsed_ms",
    "total_ms",
    "t_in_frame_ms",
    "video_t_ms",
];

/// Random identifiers: (prefix, number of hex digits after it, placeholder name).
const RANDOM_IDS: &[(&str, usize, &str)] = &[
    ("s_", 32, "session"),
    ("shot_", 24, "shot"),
    ("kill-", 32, "kill_record"),
];

/// One request of the script; `{S}`, `{T}` and `{SHOT}` stand for the session id, the lease
/// token and the latest screenshot id, learned from earlier answers.
struct Step {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn step(name: &'static str, method: &'static str, path: &'static str) -> Step {
    Step {
        name,
        method,
        path,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

impl Step {
    fn bearer(mut self) -> Step {
        self.headers
            .push(("authorization", "Bearer {T}".to_string()));
        self
    }

    fn header(mut self, name: &'static str, value: &str) -> Step {
        self.headers.push((name, value.to_string()));
        self
    }

    fn json(mut self, body: &str) -> Step {
        self.headers
            .push(("content-type", "application/json".to_string()));
        self.body = body.as_bytes().to_vec();
        self
    }
}

fn action(request_id: &str, index: u64, action: &str) -> String {
    format!(r#"{{"request_id":"{request_id}","expected_action_index":{index},"action":{action}}}"#)
}

/// The conversation, in order.
fn script() -> Vec<Step> {
    let click = r#"{"type":"click","x":100,"y":200,"intent":"focus the drawing"}"#;
    let wait = r#"{"type":"wait","milliseconds":1,"intent":"a pause"}"#;
    vec![
        step("openapi", "GET", "/v1/openapi.json"),
        step("capabilities", "GET", "/v1/capabilities"),
        step("capability_zoom", "GET", "/v1/capabilities/zoom"),
        step("capability_unknown", "GET", "/v1/capabilities/teleport"),
        step("no_route", "GET", "/v1/nothing-here"),
        step("wrong_method", "PUT", "/v1/leases").json("{}"),
        step("lease_bad_json", "POST", "/v1/leases").json("{\"task_id\":"),
        step("lease_unknown_field", "POST", "/v1/leases")
            .json(r#"{"task_id":"t1","attempt_id":"a1","color":"red"}"#),
        step("lease_too_large", "POST", "/v1/leases").json(&format!(
            r#"{{"task_id":"{}","attempt_id":"a1"}}"#,
            "x".repeat(300 * 1024)
        )),
        step("lease", "POST", "/v1/leases").json(r#"{"task_id":"t1","attempt_id":"a1"}"#),
        step("status_no_token", "GET", "/v1/sessions/{S}"),
        step("status_wrong_token", "GET", "/v1/sessions/{S}")
            .header("authorization", "Bearer not-the-token"),
        step("status_malformed_auth", "GET", "/v1/sessions/{S}")
            .header("authorization", "Basic abc"),
        step("status_unknown_session", "GET", "/v1/sessions/nosuchsession").bearer(),
        step("status_new", "GET", "/v1/sessions/{S}").bearer(),
        step("action_before_reset", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("early", 0, wait)),
        step("reset", "POST", "/v1/sessions/{S}/reset")
            .bearer()
            .json(r#"{"request_id":"r1"}"#),
        step("reset_replay", "POST", "/v1/sessions/{S}/reset")
            .bearer()
            .json(r#"{"request_id":"r1"}"#),
        step("screenshot", "GET", "/v1/sessions/{S}/screenshot").bearer(),
        step("action_outside", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action(
                "x",
                0,
                r#"{"type":"click","x":640,"y":10,"intent":"outside"}"#,
            )),
        step("action_refused_chord", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action(
                "y",
                0,
                r#"{"type":"key","keys":["alt","f4"],"intent":"close"}"#,
            )),
        step("action_bad_schema", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("z", 0, r#"{"type":"levitate","intent":"no"}"#)),
        step("action_click", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("a0", 0, click)),
        step("action_replay", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("a0", 0, click)),
        step("action_request_id_conflict", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action(
                "a0",
                0,
                r#"{"type":"click","x":1,"y":2,"intent":"other"}"#,
            )),
        step("action_skipped_index", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("a5", 5, click)),
        step("action_type", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action(
                "a1",
                1,
                r#"{"type":"type","text":"L","intent":"line tool"}"#,
            )),
        step("action_on_screenshot", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(
                r#"{"request_id":"a2","expected_action_index":2,"screenshot_id":"{SHOT}","action":{"type":"click","x":10,"y":20,"intent":"on the image"}}"#,
            ),
        step("program", "POST", "/v1/sessions/{S}/programs")
            .bearer()
            .json(&format!(
                r#"{{"request_id":"p1","expected_action_index":3,"steps":[{wait},{click}]}}"#
            )),
        step("program_empty", "POST", "/v1/sessions/{S}/programs")
            .bearer()
            .json(r#"{"request_id":"p2","expected_action_index":4,"steps":[]}"#),
        step("control_status", "GET", "/v1/sessions/{S}/control").bearer(),
        step("control_claim", "POST", "/v1/sessions/{S}/control")
            .bearer()
            .json(r#"{"owner":"harness"}"#),
        step("control_claim_other", "POST", "/v1/sessions/{S}/control")
            .bearer()
            .json(r#"{"owner":"intruder"}"#),
        step("program_without_token", "POST", "/v1/sessions/{S}/programs")
            .bearer()
            .json(&format!(
                r#"{{"request_id":"p3","expected_action_index":4,"steps":[{wait}]}}"#
            )),
        step("stop", "POST", "/v1/sessions/{S}/stop")
            .bearer()
            .json("{}"),
        step("program_after_stop", "POST", "/v1/sessions/{S}/programs")
            .bearer()
            .json(&format!(
                r#"{{"request_id":"p4","expected_action_index":4,"control":{{"owner":"harness","generation":1}},"steps":[{wait}]}}"#
            )),
        step("control_restart", "POST", "/v1/sessions/{S}/control/restart")
            .bearer()
            .json(r#"{"owner":"harness"}"#),
        step("control_status_after", "GET", "/v1/sessions/{S}/control").bearer(),
        step("screenshot_again", "GET", "/v1/sessions/{S}/screenshot").bearer(),
        step("zoom", "POST", "/v1/sessions/{S}/zoom")
            .bearer()
            .json(r#"{"screenshot_id":"{SHOT}","x":10,"y":10,"width":64,"height":48}"#),
        step("zoom_outside", "POST", "/v1/sessions/{S}/zoom")
            .bearer()
            .json(r#"{"screenshot_id":"{SHOT}","x":600,"y":10,"width":64,"height":48}"#),
        step("zoom_unknown_shot", "POST", "/v1/sessions/{S}/zoom")
            .bearer()
            .json(r#"{"screenshot_id":"nope","x":0,"y":0,"width":1,"height":1}"#),
        step("session_capabilities", "GET", "/v1/sessions/{S}/capabilities").bearer(),
        step("windows", "GET", "/v1/sessions/{S}/windows").bearer(),
        step("accessibility", "GET", "/v1/sessions/{S}/accessibility").bearer(),
        step("clipboard_get", "GET", "/v1/sessions/{S}/clipboard").bearer(),
        step("clipboard_put", "PUT", "/v1/sessions/{S}/clipboard")
            .bearer()
            .json(r#"{"text":"hello"}"#),
        step("artifact_before_checkpoint", "GET", "/v1/sessions/{S}/artifact").bearer(),
        step("checkpoint", "POST", "/v1/sessions/{S}/checkpoint")
            .bearer()
            .json("{}"),
        step("artifact", "GET", "/v1/sessions/{S}/artifact").bearer(),
        step("events", "GET", "/v1/sessions/{S}/events").bearer(),
        step("frame_events", "GET", "/v1/sessions/{S}/frame-events").bearer(),
        step("status", "GET", "/v1/sessions/{S}").bearer(),
        step("reviews_no_credential", "GET", "/v1/reviews"),
        step("reviews_lease_token", "GET", "/v1/reviews").bearer(),
        step("review_one", "GET", "/v1/reviews/rv1").bearer(),
        step("review_frame", "GET", "/v1/reviews/rv1/frame"),
        step("review_decision", "POST", "/v1/reviews/rv1/decision")
            .json(r#"{"decision":"approve"}"#),
        step("review_page", "GET", "/review"),
        step("approvals_lease_token", "POST", "/v1/sessions/{S}/approvals")
            .bearer()
            .json("{}"),
        step("release", "DELETE", "/v1/sessions/{S}").bearer(),
        step("release_again", "DELETE", "/v1/sessions/{S}").bearer(),
        step("action_after_release", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("late", 4, wait)),
        step("status_released", "GET", "/v1/sessions/{S}").bearer(),
        step("kill_released", "POST", "/v1/sessions/{S}/kill").json(r#"{"reason":"wire test"}"#),
        step("lease_second", "POST", "/v1/leases").json(r#"{"task_id":"t2","attempt_id":"a2"}"#),
        step("reset_second", "POST", "/v1/sessions/{S}/reset")
            .bearer()
            .json(r#"{"request_id":"r1"}"#),
        step("kill", "POST", "/v1/sessions/{S}/kill").json(r#"{"reason":"wire test"}"#),
        step("kill_again", "POST", "/v1/sessions/{S}/kill").json(r#"{"reason":"wire test"}"#),
        step("action_after_kill", "POST", "/v1/sessions/{S}/actions")
            .bearer()
            .json(&action("k", 0, wait)),
        step("kill_unknown", "POST", "/v1/sessions/nosuchsession/kill")
            .json(r#"{"reason":"wire test"}"#),
        step("status_killed", "GET", "/v1/sessions/{S}").bearer(),
        step("metrics", "GET", "/v1/metrics"),
        step("livez", "GET", "/livez"),
        step("readyz", "GET", "/readyz"),
    ]
}

/// The answer split into parts.
struct Answer {
    status_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn exchange(socket: &Path, request: &[u8]) -> Answer {
    let mut stream = UnixStream::connect(socket).expect("connect to the broker's socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    // A body over the limit may be answered (413) before it is read; the write then fails and
    // the answer is still there to read.
    // No half-close: the server would take it for a client gone away.
    let _ = stream.write_all(request);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    parse(&raw)
}

fn parse(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    let head = String::from_utf8(raw[..split].to_vec()).expect("a UTF-8 head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Answer {
        status_line,
        headers,
        body,
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&raw[..end]).to_string();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .expect("a hex chunk size");
        raw = &raw[end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// The values learned along the way.
#[derive(Default)]
struct Learned {
    session: Option<String>,
    token: Option<String>,
    shot: Option<String>,
    /// Each random value seen (ids, tokens) and its placeholder, numbered in order of first
    /// appearance over the whole conversation.
    placeholders: Vec<(String, String)>,
}

impl Learned {
    /// The placeholder of `value`, a new one (`<kind_N>`) when it was not seen before.
    fn placeholder(&mut self, value: &str, kind: &str) -> String {
        if let Some((_, mark)) = self.placeholders.iter().find(|(seen, _)| seen == value) {
            return mark.clone();
        }
        let n = self
            .placeholders
            .iter()
            .filter(|(_, mark)| mark.starts_with(&format!("<{kind}_")))
            .count()
            + 1;
        let mark = format!("<{kind}_{n}>");
        self.placeholders.push((value.to_string(), mark.clone()));
        mark
    }

    /// `text` with every random id ([`RANDOM_IDS`]) and every lease token replaced by its
    /// placeholder.
    fn replace_random(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let bytes = text.as_bytes();
        let mut at = 0;
        'scan: while at < text.len() {
            let boundary = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
            if boundary {
                for (prefix, digits, kind) in RANDOM_IDS {
                    let end = at + prefix.len() + digits;
                    if text[at..].starts_with(prefix)
                        && end <= text.len()
                        && bytes[at + prefix.len()..end]
                            .iter()
                            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                        && bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric())
                    {
                        let mark = self.placeholder(&text[at..end], kind);
                        out.push_str(&mark);
                        at = end;
                        continue 'scan;
                    }
                }
            }
            let next = text[at..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[at..at + next]);
            at += next;
        }
        for (value, mark) in &self.placeholders {
            if mark.starts_with("<lease_token_") {
                out = out.replace(value.as_str(), mark);
            }
        }
        out
    }

    fn fill(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (mark, value) in [
            ("{S}", &self.session),
            ("{T}", &self.token),
            ("{SHOT}", &self.shot),
        ] {
            if let Some(value) = value {
                text = text.replace(mark, value);
            }
        }
        text
    }

    fn learn(&mut self, name: &str, body: &[u8]) {
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        let _ = name;
        if let Some(token) = json["lease_token"].as_str() {
            self.session = json["session_id"].as_str().map(str::to_string);
            self.token = Some(token.to_string());
            self.placeholder(token, "lease_token");
        }
        let shot = json
            .get("screenshot_id")
            .or_else(|| json.get("screenshot").and_then(|s| s.get("screenshot_id")));
        if let Some(id) = shot.and_then(Value::as_str) {
            self.shot = Some(id.to_string());
        }
    }
}

/// `text` with the number after each `"<volatile key>":` replaced by `"<volatile>"`; every other
/// byte as it was (a `null` stays `null`, so a field that became absent or present still shows).
fn normalize_volatile(text: &str) -> String {
    let mut out = text.to_string();
    for key in VOLATILE {
        let marker = format!("\"{key}\":");
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(&marker) {
            let after = at + marker.len();
            result.push_str(&rest[..after]);
            rest = &rest[after..];
            let trimmed = rest.trim_start();
            result.push_str(&rest[..rest.len() - trimmed.len()]);
            let number = if let Some(string) = trimmed.strip_prefix('"') {
                string.find('"').map_or(0, |end| end + 2)
            } else {
                trimmed
                    .find(|c: char| !(c.is_ascii_digit() || "-+.eE".contains(c)))
                    .unwrap_or(trimmed.len())
            };
            if number > 0 {
                result.push_str("\"<volatile>\"");
            }
            rest = &trimmed[number..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// The metrics exposition without values: each sample's name and labels, comments kept.
fn metric_names(body: &str) -> String {
    body.lines()
        .map(|line| {
            if line.starts_with('#') {
                line.to_string()
            } else {
                line.rsplit_once(' ')
                    .map_or(line, |(series, _value)| series)
                    .to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text a fixture holds for one exchange.
fn render(
    name: &str,
    request: &str,
    answer: &Answer,
    learned: &mut Learned,
    root: &Path,
) -> String {
    let root = root.display().to_string();
    let mut replace = |text: &str| learned.replace_random(&text.replace(&root, "<root>"));
    let mut normalized = false;
    let body = match String::from_utf8(answer.body.clone()) {
        Ok(text) => {
            let body = if name == "metrics" {
                metric_names(&replace(&text))
            } else {
                normalize_volatile(&replace(&text))
            };
            normalized = body != text;
            body
        }
        Err(_) => format!(
            "base64:{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &answer.body)
        ),
    };
    let mut out = String::new();
    out.push_str(request);
    out.push_str("\n=== response\n");
    out.push_str(&answer.status_line);
    out.push('\n');
    for (header, value) in &answer.headers {
        match header.as_str() {
            "date" => {}
            // A body normalized above had another length on the wire.
            "content-length" if normalized => out.push_str("content-length: <normalized>\n"),
            _ => out.push_str(&format!("{header}: {}\n", replace(value))),
        }
    }
    out.push('\n');
    out.push_str(&body);
    out.push('\n');
    out
}

/// Runs the whole script against `binary`: (file name, fixture text) in order.
fn converse(binary: &Path) -> Vec<(String, String)> {
    let root = tempfile::tempdir().unwrap();
    let mut server = Server::start(binary, root.path());
    let mut learned = Learned::default();
    let mut out = Vec::new();
    for (index, step) in script().into_iter().enumerate() {
        let path = learned.fill(step.path);
        let mut head = format!(
            "{} {} HTTP/1.1\r\nhost: broker\r\nconnection: close\r\n",
            step.method, path
        );
        let mut shown = format!("=== request\n{} {}\n", step.method, step.path);
        for (name, value) in &step.headers {
            head.push_str(&format!("{name}: {}\r\n", learned.fill(value)));
            shown.push_str(&format!("{name}: {value}\n"));
        }
        let body = learned.fill(&String::from_utf8_lossy(&step.body));
        if !step.body.is_empty() || step.method != "GET" {
            head.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body.as_bytes());
        if body.len() > 1024 {
            shown.push_str(&format!("\n({} bytes)", body.len()));
        } else {
            shown.push_str(&format!("\n{}", String::from_utf8_lossy(&step.body)));
        }
        let answer = exchange(&server.socket, &request);
        learned.learn(step.name, &answer.body);
        let text = render(step.name, &shown, &answer, &mut learned, root.path());
        out.push((format!("{index:02}-{}.http", step.name), text));
    }
    server.stop();
    out
}

struct Server {
    child: Child,
    socket: PathBuf,
}

impl Server {
    fn start(binary: &Path, root: &Path) -> Server {
        let socket = root.join("fake.sock");
        let child = Command::new(binary)
            .args(["--log", "warn", "serve", "--backend", "fake"])
            .args(["--display", "640x480"])
            .arg("--socket")
            .arg(&socket)
            .arg("--state-dir")
            .arg(root.join("state"))
            .env_remove("DESKBROKER_FAULT")
            .env_remove("DISPLAY")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(root.join("broker.log")).unwrap())
            .spawn()
            .expect("start deskbroker serve --backend fake");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            assert!(
                Instant::now() < deadline,
                "the broker's socket did not appear"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, socket }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire")
}

fn binary() -> PathBuf {
    std::env::var_os("DESK_WIRE_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_deskbroker")))
}

#[test]
fn the_wire_is_what_was_recorded() {
    let exchanges = converse(&binary());
    let dir = fixtures_dir();
    if std::env::var_os("DESK_WIRE_RECORD").is_some() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &exchanges {
            std::fs::write(dir.join(name), text).unwrap();
        }
        return;
    }
    let mut recorded = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("tests/wire holds the recorded exchanges") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        recorded.insert(name, std::fs::read_to_string(&path).unwrap());
    }
    let replayed: BTreeMap<String, String> = exchanges.into_iter().collect();
    assert_eq!(
        recorded.keys().collect::<Vec<_>>(),
        replayed.keys().collect::<Vec<_>>(),
        "the same exchanges"
    );
    let differing: Vec<&String> = recorded
        .iter()
        .filter(|(name, text)| replayed.get(*name) != Some(*text))
        .map(|(name, _)| name)
        .collect();
    for name in &differing {
        eprintln!(
            "--- {name} recorded\n{}\n--- {name} now\n{}",
            recorded[*name], replayed[*name]
        );
    }
    assert!(differing.is_empty(), "differing exchanges: {differing:?}");
}
