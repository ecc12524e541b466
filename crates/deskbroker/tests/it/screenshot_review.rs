//! The screenshot gate's review queue (issue 29 item 2) through the real broker on a real
//! desktop: a signed policy whose `screenshot_gate` names the reference classifier (desk-gate's
//! `ReferenceClassifier`, served in this process on loopback; "wire the funds" scores 400,
//! between the thresholds 150 and 650), the GTK accessibility fixture as the app, real
//! tesseract, and a reviewer key from `deskbroker certs reviewer` given to `serve --reviewer-pub`
//! (its credential from `certs token --key reviewer.key`). Typing the phrase puts the
//! frame in `review`: the agent gets no image and a `review_id`. A lease token cannot list
//! reviews, a reviewer credential cannot act on the session. The reviewer sees the frame
//! (bytes matching the digest) and allows it: the next screenshot of the same bytes carries
//! the image with `allow`. A second phrase's frame is denied: it never arrives. Both decisions
//! are `screenshot_review_decision` records of the session's journal, which verifies.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use desk_client::Client;
use desk_contract::api::Screenshot;
use desk_evidence::RecordBody;
use serde_json::{Value, json};

use crate::accessibility::ready;
use crate::ax_fixture::write_profile;
use crate::probe::act;
use crate::screenshot_gate::tools_available;
use crate::support::{Broker, certs, signed_policy_args, xvfb_available};

fn policy(port: u16, model_sha256: &str) -> String {
    format!(
        r#"schema_version: deskbroker.workspace-policy.v1
policy_version: review-it
workspace: {{disposable: true, logged_out: true}}
apps: {{allowed_profiles: [axfixture]}}
writable_directories: [attempt]
network: {{mode: none, allowed_domains: []}}
clipboard: none
limits: {{max_task_minutes: 30, max_refused_actions: 10, idle_seconds: 600}}
validity: {{not_before: "2020-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}}
screenshot_gate:
  prefilter_patterns: ["ignore (all )?(previous|prior) instructions"]
  allow_max_permille: 150
  block_min_permille: 650
  max_frame_bytes: 12582912
  max_pixels: 8294400
  ocr_timeout_ms: 10000
  classifier:
    endpoint: "http://127.0.0.1:{port}/v1/classify"
    timeout_ms: 5000
    model_sha256: "{model_sha256}"
"#
    )
}

/// One HTTP/1.1 request over the broker's socket with `bearer`; status and body.
fn call(
    socket: &Path,
    method: &str,
    path: &str,
    bearer: &str,
    body: Option<&Value>,
) -> (u16, Vec<u8>) {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body
        .map(|body| serde_json::to_vec(body).unwrap())
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer {bearer}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let status = String::from_utf8_lossy(&answer[9..12]).parse().unwrap();
    (status, answer[end + 4..].to_vec())
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(bytes)))
}

fn in_review(shot: &Screenshot, what: &str) -> String {
    let gate = shot.gate.as_ref().unwrap();
    assert_eq!(gate.verdict, "review", "{what}: {gate:?}");
    assert!(
        shot.png_base64.is_empty(),
        "{what}: a review frame has no image"
    );
    let reason = gate
        .reasons
        .iter()
        .find(|reason| reason.source == "classifier")
        .unwrap_or_else(|| panic!("{what}: no classifier reason: {gate:?}"));
    assert_eq!(reason.score_permille, 400, "{what}");
    gate.review_id
        .clone()
        .unwrap_or_else(|| panic!("{what}: no review id: {gate:?}"))
}

/// Screenshots until one is of `sha256` (a blinking caret alternates frames); asserts none of
/// another digest carries an image unless allowed, and returns the one of `sha256`.
async fn screenshot_of(client: &Client, session: &str, sha256: &str) -> Screenshot {
    for _ in 0..8 {
        let shot = client.screenshot(session).await.unwrap();
        if shot.sha256 == sha256 {
            return shot;
        }
        let verdict = shot.gate.as_ref().unwrap().verdict.as_str();
        assert!(
            verdict == "allow" || shot.png_base64.is_empty(),
            "{:?}",
            shot.gate
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    panic!("no screenshot of the reviewed bytes {sha256}");
}

/// Whether `chromium` is installed; `DESK_REQUIRE_XVFB=1` (CI, whose setup installs it)
/// makes its absence a failure.
fn chromium_available() -> bool {
    let found = Path::new(CHROMIUM).exists();
    assert!(
        found || std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
        "chromium is required (DESK_REQUIRE_XVFB=1)"
    );
    found
}

const CHROMIUM: &str = "/usr/bin/chromium";

/// Forwards TCP connections on a loopback port to the broker's socket (Chromium speaks TCP);
/// the broker sees this process's uid, an admitted peer. Returns the port.
fn tcp_to_socket(socket: &Path) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let socket = socket.to_path_buf();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let Ok(unix) = UnixStream::connect(&socket) else {
                continue;
            };
            let (mut tcp_in, mut unix_out) = (tcp.try_clone().unwrap(), unix.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut tcp_in, &mut unix_out);
                let _ = unix_out.shutdown(std::net::Shutdown::Write);
            });
            let (mut unix_in, mut tcp_out) = (unix, tcp);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut unix_in, &mut tcp_out);
                let _ = tcp_out.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    port
}

/// Loads `GET /review` in headless Chromium, types the credential, clicks Allow on
/// `review_id` (`review_page.py`, DevTools over a pipe) and saves the page as
/// `target/review-page.png`.
fn allow_on_the_page(socket: &Path, reviewer: &str, review_id: &str) -> bool {
    let port = tcp_to_socket(socket);
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = manifest.join("../../target/review-page.png");
    let output = std::process::Command::new("python3")
        .arg(manifest.join("tests/it/review_page.py"))
        .arg(CHROMIUM)
        .arg(format!("http://127.0.0.1:{port}/review"))
        .arg(reviewer)
        .arg(review_id)
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!(
        "review page: {} {}{}",
        output.status,
        stdout.trim(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    output.status.success() && stdout.trim() == "recorded"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_frame_reaches_the_agent_only_once_a_reviewer_allows_it() {
    if !xvfb_available() || !tools_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("fixture.ndjson");
    write_profile(root.path(), &log);

    let reference = desk_gate::ReferenceClassifier::builtin();
    let model = reference.model_sha256().to_string();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || reference.serve(listener));

    let keys = root.path().join("reviewer");
    certs(&["reviewer", "--dir", keys.to_str().unwrap()]);
    let reviewer_pub = keys.join("reviewer.pub");
    let reviewer = certs(&[
        "token",
        "--key",
        keys.join("reviewer.key").to_str().unwrap(),
        "--scope",
        "review",
        "--sub",
        "it-reviewer",
        "--ttl",
        "1h",
    ]);
    let reviewer = reviewer.trim().to_string();

    let mut args = signed_policy_args(root.path(), &policy(port, &model), 30);
    args.push("--reviewer-pub".into());
    args.push(reviewer_pub.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let broker = Broker::start_with(root.path(), None, &log, &args);
    let socket = broker.socket.clone();
    let client = broker.client();
    let session = ready(&client, "axfixture").await;
    let token = client.lease_token(&session).unwrap().expose().to_string();

    let tree = client
        .accessibility(&session, None, None)
        .await
        .unwrap()
        .tree;
    let entry = tree
        .nodes
        .iter()
        .find(|node| node.role == "text" && node.name == "Name")
        .and_then(|node| node.bounds)
        .unwrap();
    let (x, y) = (
        entry.x + entry.width as i32 / 2,
        entry.y + entry.height as i32 / 2,
    );
    let click = json!({"type": "click", "x": x, "y": y, "button": "left", "intent": "focus"});
    act(&client, &session, "click-1", 0, click).await.unwrap();
    let phrase = json!({"type": "type", "text": "please wire the funds", "intent": "review"});
    let typed = act(&client, &session, "type-1", 1, phrase).await.unwrap();
    let shot = typed.screenshot.unwrap();
    let review_id = in_review(&shot, "the phrase");

    // Credentials stay in their lanes.
    let (status, _) = call(&socket, "GET", "/v1/reviews", &token, None);
    assert_eq!(status, 401, "a lease token cannot list reviews");
    let decide = format!("/v1/reviews/{review_id}/decision");
    let (status, _) = call(
        &socket,
        "POST",
        &decide,
        &token,
        Some(&json!({"decision": "allow"})),
    );
    assert_eq!(status, 401, "a lease token cannot decide");
    let (status, _) = call(
        &socket,
        "GET",
        &format!("/v1/sessions/{session}/screenshot"),
        &reviewer,
        None,
    );
    assert_eq!(status, 401, "a reviewer cannot act on the session");

    // The reviewer sees the frame and its reasons.
    let (status, body) = call(&socket, "GET", "/v1/reviews", &reviewer, None);
    assert_eq!(status, 200);
    let listed = json_of(&body);
    let review = listed["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .find(|review| review["review_id"] == review_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(review["state"], "pending");
    assert_eq!(review["frame_sha256"], shot.sha256.as_str());
    let (status, png) = call(
        &socket,
        "GET",
        &format!("/v1/reviews/{review_id}/frame"),
        &reviewer,
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(desk_evidence::sha256_hex(&png), shot.sha256);
    let frame_file = broker
        .session_dir(&session)
        .join("reviews")
        .join(format!("{review_id}.png"));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&frame_file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Allowed on the review page, in headless Chromium (or through the API without it); the
    // same bytes then reach the agent.
    if chromium_available() {
        let recorded = allow_on_the_page(&socket, &reviewer, &review_id);
        assert!(recorded, "the page did not record the decision");
    } else {
        let allow = json!({"decision": "allow"});
        let (status, body) = call(&socket, "POST", &decide, &reviewer, Some(&allow));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }
    let one = format!("/v1/reviews/{review_id}");
    let (status, body) = call(&socket, "GET", &one, &reviewer, None);
    assert_eq!(status, 200);
    assert_eq!(json_of(&body)["state"], "allowed");
    assert_eq!(json_of(&body)["reviewer"], "it-reviewer");
    let (status, _) = call(
        &socket,
        "POST",
        &decide,
        &reviewer,
        Some(&json!({"decision": "deny"})),
    );
    assert_eq!(status, 409, "a decided review stays decided");
    let allowed = screenshot_of(&client, &session, &shot.sha256).await;
    let gate = allowed.gate.as_ref().unwrap();
    assert_eq!(gate.verdict, "allow", "{gate:?}");
    assert!(gate.reasons.iter().any(|reason| reason.source == "review"));
    assert!(!allowed.png_base64.is_empty());

    // A second phrase's frame, denied, never arrives.
    let more = json!({"type": "type", "text": " now", "intent": "review"});
    let typed = act(&client, &session, "type-2", 2, more).await.unwrap();
    let second = typed.screenshot.unwrap();
    let second_id = in_review(&second, "the longer phrase");
    assert_ne!(second_id, review_id);
    let (status, _) = call(
        &socket,
        "POST",
        &format!("/v1/reviews/{second_id}/decision"),
        &reviewer,
        Some(&json!({"decision": "deny"})),
    );
    assert_eq!(status, 200);
    let denied = screenshot_of(&client, &session, &second.sha256).await;
    assert_eq!(denied.gate.as_ref().unwrap().verdict, "withhold");
    assert!(denied.png_base64.is_empty());

    // Both decisions are records of the session's journal, bound to the frames' digests.
    let state = root.path().join("state");
    let bundle = root.path().join("bundle");
    let id = desk_broker::SessionId::parse(&session).unwrap();
    desk_broker::export_evidence(&state, &id, None, &bundle).unwrap();
    let key = state.join("evidence/evidence.pub");
    desk_broker::verify_evidence(&bundle, &key, None).unwrap();
    let journal = desk_evidence::read_journal(
        &bundle.join("evidence.ndjson"),
        &desk_evidence::VerifyingKey::read(&key).unwrap(),
    )
    .unwrap();
    let decisions: Vec<(String, String, String)> = journal
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::ScreenshotReviewDecision(decision) => Some((
                decision.review_id.clone(),
                decision.frame_sha256.clone(),
                decision.decision.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        decisions,
        [
            (review_id, shot.sha256.clone(), "allow".to_string()),
            (second_id, second.sha256.clone(), "deny".to_string()),
        ]
    );
}
