//! Approval-bound exact actions (issue 29 item 3, G004), the approver and the executor, through
//! the real broker on a real desktop: the GTK accessible fixture's "Press me" button is
//! high-risk (`approvals.high_risk_targets: button /^press me$/`, receipts live 2 s); the
//! fixture counts presses in its log and shows them in a "Presses: N" label.
//!
//! - The lease token cannot approve, nor can a credential signed by another key or naming
//!   another approver (401); the approver's credential cannot act or read a frame (401).
//! - An approval of the exact `ax_press` is a receipt signed by the broker's evidence key, bound
//!   to sha256 of the canonical action and element binding; an element that is not high-risk is
//!   refused.
//! - A mismatched action (another node) is refused `approval_required`, nothing pressed.
//! - The approved action runs once: `CONFIRMED` with the readback's digests, the fixture logs
//!   exactly one press. A new request with the same approval is refused (replay), the same
//!   request id replays the journaled answer without a second press, an unknown approval is
//!   404, an expired one (after 2 s) is refused, and a raw click on the button is still
//!   `approval_required` (T-E17).
//! - The session's journal holds `approval_issued` and `approved_action`
//!   PENDING_INVOCATION → EFFECT_UNCERTAIN → CONFIRMED, and the exported bundle verifies.
//! - T-S19: the broker is SIGKILLed right after the approved press's input (fault
//!   `kill_after_input`): after the restart the session is `error`, a retry of the same request
//!   is `input_outcome_unknown`, a new request with the approval is refused (consumed), other
//!   input is refused, the journal's last approved state is PENDING_INVOCATION, and the fixture
//!   saw exactly one press.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use desk_broker::credential::{self, Scope};
use desk_contract::a11y::{AxNode, AxTree, AxWindow};
use desk_evidence::RecordBody;
use serde_json::{Value, json};

use crate::accessibility::ready;
use crate::ax_fixture::{gtk_installed, write_profile};
use crate::probe::act;
use crate::support::{Broker, approvals_policy, signed_policy_args, tree_of, xvfb_available};

const APPROVER_SEED: [u8; 32] = [41; 32];

fn policy() -> String {
    approvals_policy("approvals-exec-it", "axfixture", APPROVER_SEED, 2)
}

fn credential_of(seed: [u8; 32], sub: &str, scope: Scope) -> String {
    let key = desk_evidence::SigningKey::from_bytes(&seed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    credential::issue(&key, sub, &[scope], now, 600_000).unwrap()
}

/// One HTTP/1.1 request over the broker's socket with `bearer`; status and JSON body, or
/// `None` when the connection ends without a whole answer. The body is sent only after
/// `100 Continue` (`Expect: 100-continue`): a request refused before its handler (401) is
/// answered without the body being read, and a body the server never read would make the
/// close a reset that can swallow the answer.
fn try_call(
    socket: &Path,
    method: &str,
    path: &str,
    bearer: &str,
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    let mut stream = UnixStream::connect(socket).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body
        .map(|body| serde_json::to_vec(body).unwrap())
        .unwrap_or_default();
    let expect = if body.is_empty() {
        ""
    } else {
        "Expect: 100-continue\r\n"
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer {bearer}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n{expect}\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).ok()?;
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    if !body.is_empty() {
        // The interim or final status head.
        while !answer.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => answer.push(byte[0]),
                Ok(_) => break,
                Err(error) => {
                    println!("{method} {path}: no answer: {error}");
                    return None;
                }
            }
        }
        if answer.starts_with(b"HTTP/1.1 100") {
            answer.clear();
            stream.write_all(&body).ok()?;
        }
    }
    if let Err(error) = stream.read_to_end(&mut answer) {
        println!("{method} {path}: no answer: {error}");
        return None;
    }
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        println!(
            "{method} {path}: no whole answer: {:?}",
            String::from_utf8_lossy(&answer)
        );
        return None;
    };
    let status = String::from_utf8_lossy(answer.get(9..12)?).parse().ok()?;
    let body = serde_json::from_slice(&answer[end + 4..]).unwrap_or(Value::Null);
    Some((status, body))
}

/// [`try_call`] that must be answered.
fn call(
    socket: &Path,
    method: &str,
    path: &str,
    bearer: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    try_call(socket, method, path, bearer, body).expect("an answer")
}

fn node<'a>(tree: &'a AxTree, role: &str, name: &str) -> &'a AxNode {
    tree.nodes
        .iter()
        .find(|n| n.window == AxWindow::Bound && n.role == role && n.name == name)
        .unwrap_or_else(|| panic!("no {role} {name:?} in the fixture's window"))
}

/// The sibling path of `index` from the application, as the broker computes it.
fn path_of(tree: &AxTree, index: u32) -> String {
    let mut parts = Vec::new();
    let mut current = &tree.nodes[index as usize];
    while let Some(parent) = current.parent {
        let position = tree
            .nodes
            .iter()
            .filter(|n| n.parent == Some(parent))
            .position(|n| n.index == current.index)
            .unwrap();
        parts.push(position.to_string());
        current = &tree.nodes[parent as usize];
    }
    parts.reverse();
    parts.join("/")
}

/// The approval request for `node` of `tree`.
fn approval(tree: &AxTree, node: &AxNode) -> Value {
    json!({
        "action": {"type": "ax_press", "observation_id": tree.observation_id, "node": node.index},
        "element": {
            "observation_id": tree.observation_id,
            "role": node.role,
            "name": node.name,
            "path": path_of(tree, node.index),
            "bounds": node.bounds.unwrap(),
        }
    })
}

fn events(log: &Path, name: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == name)
        .count()
}

fn presses(log: &Path) -> usize {
    events(log, "pressed")
}

/// Waits up to 3 s for the fixture's first press.
async fn wait_for_press(log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while presses(log) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The approver's receipt for `request` on `session` (it must be issued).
fn approve(socket: &Path, session: &str, approver: &str, request: &Value) -> Value {
    let path = format!("/v1/sessions/{session}/approvals");
    let (status, receipt) = call(socket, "POST", &path, approver, Some(request));
    assert_eq!(status, 200, "{receipt}");
    receipt
}

/// An action request that runs `action` under the approval `approval_id`.
fn approved(request_id: &str, index: u64, action: &Value, approval_id: &str) -> Value {
    json!({"request_id": request_id, "expected_action_index": index,
           "approval_id": approval_id, "action": action})
}

/// Asserts an answer is the refusal `status` with error `code`.
fn assert_refused((status, body): &(u16, Value), want: u16, code: &str) {
    assert_eq!(
        (*status, body["code"].as_str()),
        (want, Some(code)),
        "{body}"
    );
}

/// A broker with the policy and the fixture, a ready session and its lease token.
async fn setup(
    root: &Path,
    log: &Path,
    seed: u8,
    fault: Option<&str>,
) -> (Broker, desk_client::Client, String, String) {
    write_profile(root, log);
    let args = signed_policy_args(root, &policy(), seed);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let broker = Broker::start_with(root, fault, log, &args);
    let client = broker.client();
    let session = ready(&client, "axfixture").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while events(log, "ready") == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lease_token = client.lease_token(&session).unwrap().expose().to_string();
    (broker, client, session, lease_token)
}

fn journal_states(broker: &Broker, root: &Path, session: &str) -> Vec<String> {
    let state = broker.state_dir.clone();
    let bundle = root.join("bundle");
    let id = desk_broker::SessionId::parse(session).unwrap();
    desk_broker::export_evidence(&state, &id, None, &bundle).unwrap();
    let key = state.join("evidence/evidence.pub");
    desk_broker::verify_evidence(&bundle, &key, None).unwrap();
    let journal = desk_evidence::read_journal(
        &bundle.join("evidence.ndjson"),
        &desk_evidence::VerifyingKey::read(&key).unwrap(),
    )
    .unwrap();
    journal
        .iter()
        .filter_map(|record| match &record.record().body {
            RecordBody::ApprovedAction(body) => Some(body.state.clone()),
            _ => None,
        })
        .collect()
}

fn skip() -> bool {
    if !xvfb_available() {
        return true;
    }
    if !gtk_installed() {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "python3-gi with GTK 3 is required (DESK_REQUIRE_XVFB=1)"
        );
        println!("skipped: python3-gi/GTK 3 not found");
        return true;
    }
    false
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_invocation_leaves_the_session_frozen_and_nothing_is_retried() {
    if skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("fixture.ndjson");
    let (mut broker, client, session, lease_token) =
        setup(root.path(), &log, 45, Some("kill_after_input")).await;
    let socket = broker.socket.clone();
    let approver = credential_of(APPROVER_SEED, "release-approver", Scope::Approve);
    let tree = tree_of(&client, &session).await;
    let request = approval(&tree, node(&tree, "button", "Press me"));
    let receipt = approve(&socket, &session, &approver, &request);
    let approval_id = receipt["payload"]["approval_id"].as_str().unwrap();
    let exact = approved("crash-1", 0, &request["action"], approval_id);
    let actions = format!("/v1/sessions/{session}/actions");
    let (lost, token, path, at) = (
        exact.clone(),
        lease_token.clone(),
        actions.clone(),
        socket.clone(),
    );
    let answered =
        tokio::task::spawn_blocking(move || try_call(&at, "POST", &path, &token, Some(&lost)))
            .await
            .unwrap();
    assert!(answered.is_none(), "the answer must be lost: {answered:?}");
    let status = broker.wait_exit(Duration::from_secs(10));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the broker must die by SIGKILL"
    );
    wait_for_press(&log).await;
    assert_eq!(
        presses(&log),
        1,
        "the press reached the app before the crash"
    );

    broker.restart(None);
    let client = broker.client();
    client.set_lease_token(
        &session,
        desk_contract::api::LeaseToken::new(lease_token.clone()),
    );
    let (status, retry) = call(&socket, "POST", &actions, &lease_token, Some(&exact));
    assert_ne!(status, 200, "{retry}");
    assert_eq!(retry["code"], "input_outcome_unknown", "{retry}");
    let other = approved("crash-2", 1, &request["action"], approval_id);
    assert_refused(
        &call(&socket, "POST", &actions, &lease_token, Some(&other)),
        422,
        "approval_required",
    );
    let now = client.status(&session).await.unwrap();
    assert_eq!(
        now.state,
        desk_contract::api::SessionState::Error,
        "{now:?}"
    );
    let wait = json!({"type": "wait", "milliseconds": 10, "intent": "anything"});
    assert!(act(&client, &session, "after-1", 1, wait).await.is_err());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(presses(&log), 1, "never invoked twice");

    let states = journal_states(&broker, root.path(), &session);
    assert_eq!(states, ["PENDING_INVOCATION"], "{states:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_exact_action_runs_once_and_everything_else_is_refused() {
    if skip() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("fixture.ndjson");
    let (broker, client, session, lease_token) = setup(root.path(), &log, 44, None).await;
    let lease_token = lease_token.as_str();
    let socket = broker.socket.clone();
    let approver = credential_of(APPROVER_SEED, "release-approver", Scope::Approve);
    let approvals = format!("/v1/sessions/{session}/approvals");
    let actions = format!("/v1/sessions/{session}/actions");

    let tree = tree_of(&client, &session).await;
    let button = node(&tree, "button", "Press me");
    let request = approval(&tree, button);

    // Who cannot approve: the lease token, a forged credential, another subject, another scope.
    for (bearer, who) in [
        (lease_token.to_string(), "the lease token"),
        (
            credential_of([42; 32], "release-approver", Scope::Approve),
            "a credential signed by another key",
        ),
        (
            credential_of(APPROVER_SEED, "someone-else", Scope::Approve),
            "another subject",
        ),
        (
            credential_of(APPROVER_SEED, "release-approver", Scope::Review),
            "the review scope",
        ),
    ] {
        let (status, body) = call(&socket, "POST", &approvals, &bearer, Some(&request));
        assert_eq!(status, 401, "{who}: {body}");
        assert_eq!(body["code"], "unauthorized", "{who}");
    }
    // An element that is not high-risk needs no approval.
    let entry = node(&tree, "text", "Name");
    let not_high_risk = approval(&tree, entry);
    assert_refused(
        &call(&socket, "POST", &approvals, &approver, Some(&not_high_risk)),
        400,
        "invalid_params",
    );

    let receipt = approve(&socket, &session, &approver, &request);
    let payload = &receipt["payload"];
    let approval_id = payload["approval_id"].as_str().unwrap().to_string();
    assert_eq!(payload["session_id"], session.as_str());
    assert_eq!(payload["approver_id"], "release-approver");
    assert_eq!(
        payload["expires_at_ms"].as_u64().unwrap() - payload["issued_at_ms"].as_u64().unwrap(),
        2000
    );
    let action = request["action"].clone();
    assert_eq!(
        payload["action_sha256"],
        desk_evidence::canonical_sha256(&action).unwrap().as_str()
    );
    assert_eq!(
        payload["element_sha256"],
        desk_evidence::canonical_sha256(&request["element"])
            .unwrap()
            .as_str()
    );
    // The receipt verifies with the broker's evidence key.
    let evidence_key =
        desk_evidence::VerifyingKey::read(&broker.state_dir.join("evidence/evidence.pub")).unwrap();
    let signature: [u8; 64] = base64_decode(receipt["signature_b64"].as_str().unwrap())
        .try_into()
        .unwrap();
    assert!(evidence_key.verify_bytes(
        &desk_evidence::canonical_bytes(payload).unwrap(),
        &signature
    ));

    // The approver cannot act or look.
    let exact = approved("exec-1", 0, &action, &approval_id);
    let (status, _) = call(&socket, "POST", &actions, &approver, Some(&exact));
    assert_eq!(status, 401, "the approver's credential is no lease token");
    let (status, _) = call(
        &socket,
        "GET",
        &format!("/v1/sessions/{session}/screenshot"),
        &approver,
        None,
    );
    assert_eq!(status, 401);

    // A mismatched action: another node of the same observation.
    let other =
        json!({"type": "ax_press", "observation_id": tree.observation_id, "node": entry.index});
    let mismatched = approved("exec-0", 0, &other, &approval_id);
    assert_refused(
        &call(&socket, "POST", &actions, lease_token, Some(&mismatched)),
        422,
        "approval_required",
    );
    assert_eq!(presses(&log), 0);

    // The approved path: invoked once, its effect read back.
    let started = Instant::now();
    let (status, answer) = call(&socket, "POST", &actions, lease_token, Some(&exact));
    let executed_ms = started.elapsed().as_millis();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["state"], "CONFIRMED", "{answer}");
    assert_ne!(
        answer["effect"]["before_sha256"],
        answer["effect"]["after_sha256"]
    );
    assert_eq!(answer["program"]["action_index"], 0);
    println!("approved action executed in {executed_ms} ms (two observations included)");
    wait_for_press(&log).await;
    assert_eq!(presses(&log), 1);
    // The effect the readback saw includes the fixture's label.
    let after = tree_of(&client, &session).await;
    node(&after, "label", "Presses: 1");

    // Replays: a new request with the consumed approval is refused, the same request replays.
    let answer = call(
        &socket,
        "POST",
        &actions,
        lease_token,
        Some(&approved("exec-2", 1, &action, &approval_id)),
    );
    assert_refused(&answer, 422, "approval_required");
    let body = answer.1;
    assert!(
        body["message"].as_str().unwrap().contains("consumed"),
        "{body}"
    );
    let (status, replayed) = call(&socket, "POST", &actions, lease_token, Some(&exact));
    assert_eq!(status, 200, "{replayed}");
    assert_eq!(replayed["program"]["idempotent_replay"], true);
    assert_eq!(replayed["state"], "CONFIRMED");
    let unknown = approved("exec-3", 1, &action, "apr-00000000000000000000000000000000");
    assert_refused(
        &call(&socket, "POST", &actions, lease_token, Some(&unknown)),
        404,
        "not_found",
    );

    // Expired: a fresh approval, used after its 2 s.
    let tree = tree_of(&client, &session).await;
    let request = approval(&tree, node(&tree, "button", "Press me"));
    let receipt = approve(&socket, &session, &approver, &request);
    let late_id = receipt["payload"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let answer = call(
        &socket,
        "POST",
        &actions,
        lease_token,
        Some(&approved("exec-4", 1, &request["action"], &late_id)),
    );
    assert_refused(&answer, 422, "approval_required");
    let body = answer.1;
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );

    // A raw click on the button is still refused (T-E17).
    let tree = tree_of(&client, &session).await;
    let rect = node(&tree, "button", "Press me").bounds.unwrap();
    let click = json!({"type": "click", "x": rect.x + rect.width as i32 / 2,
                       "y": rect.y + rect.height as i32 / 2, "intent": "press it raw"});
    match act(&client, &session, "click-1", 1, click).await {
        Err(desk_client::ClientError::Api(body)) => {
            assert_eq!(body.code, desk_contract::ErrorCode::ApprovalRequired)
        }
        other => panic!("expected approval_required, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(presses(&log), 1, "exactly one press in all");

    // The journal: the issues and the approved action's states, and the bundle verifies.
    let states = journal_states(&broker, root.path(), &session);
    assert_eq!(
        states,
        ["PENDING_INVOCATION", "EFFECT_UNCERTAIN", "CONFIRMED"]
    );
    let journal = std::fs::read_to_string(root.path().join("bundle/evidence.ndjson")).unwrap();
    let issued: Vec<&str> = journal
        .lines()
        .filter(|line| line.contains("\"approval_issued\""))
        .collect();
    assert_eq!(issued.len(), 2);
    assert!(issued[0].contains(&approval_id) && issued[1].contains(&late_id));
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}
