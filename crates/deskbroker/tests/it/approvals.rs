//! Approval-bound actions (issue 29 item 3), the raw-input refusal, through the real broker on a
//! real desktop: a broker whose signed policy marks the GTK accessible fixture's "Press me"
//! button high-risk (`approvals.high_risk_targets: button /^press me$/`).
//!
//! - T-E17: a raw click (and a double click) on the button is refused `approval_required` before
//!   any input, and the fixture (which logs every activation) never logs a press; an `ax_press`
//!   on it is refused the same way, and so are a space key and typed text once the keyboard
//!   focus is on it. A click on the entry beside it and a semantic text step on the entry go
//!   through (the check refuses only what lands on the target).
//! - Fail-closed: under the same policy a session of the probe (a pure X11 window, no
//!   accessibility) gets its click refused `insufficient_data`, and the probe sees no input.
//! - Capabilities advertise `approval`.
//!
//! Prints the time a refused click took (its hit-test snapshot included).

use std::time::{Duration, Instant};

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::a11y::{AxNode, AxTree, AxWindow};
use desk_contract::control::ProgramRequest;
use serde_json::{Value, json};

use crate::accessibility::ready;
use crate::ax_fixture::{gtk_installed, write_profile};
use crate::probe::act;
use crate::support::{Broker, approvals_policy, signed_policy_args, xvfb_available};

fn policy() -> String {
    approvals_policy("approvals-it", "axfixture, probe", [41; 32], 60)
}

fn code_of<T: std::fmt::Debug>(result: Result<T, ClientError>) -> (ErrorCode, String) {
    match result {
        Err(ClientError::Api(body)) => (body.code, body.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn node<'a>(tree: &'a AxTree, role: &str, name: &str) -> &'a AxNode {
    tree.nodes
        .iter()
        .find(|n| n.window == AxWindow::Bound && n.role == role && n.name == name)
        .unwrap_or_else(|| panic!("no {role} {name:?} in the fixture's window"))
}

fn center(node: &AxNode) -> (i64, i64) {
    let rect = node.bounds.unwrap();
    (
        i64::from(rect.x) + i64::from(rect.width) / 2,
        i64::from(rect.y) + i64::from(rect.height) / 2,
    )
}

fn fixture_events(log: &std::path::Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == name)
        .collect()
}

async fn tree(client: &Client, session: &str) -> AxTree {
    client
        .accessibility(session, None, None)
        .await
        .unwrap()
        .tree
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_input_on_a_high_risk_control_is_refused() {
    if !xvfb_available() {
        return;
    }
    if !gtk_installed() {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "python3-gi with GTK 3 is required (DESK_REQUIRE_XVFB=1)"
        );
        println!("skipped: python3-gi/GTK 3 not found");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let log = root.path().join("fixture.ndjson");
    write_profile(root.path(), &log);
    let args = signed_policy_args(root.path(), &policy(), 43);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let broker = Broker::start_with(root.path(), None, &log, &args);
    let client = broker.client();

    let capabilities = client.capabilities().await.unwrap();
    let approval = capabilities
        .features
        .iter()
        .find(|feature| feature.feature == "approval")
        .expect("capabilities list approval");
    assert!(approval.supported, "{approval:?}");

    let session = ready(&client, "axfixture").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while fixture_events(&log, "ready").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = tree(&client, &session).await;
    let button = node(&before, "button", "Press me");
    let (x, y) = center(button);

    // T-E17: a raw click on the high-risk button.
    let started = Instant::now();
    let click = act(
        &client,
        &session,
        "click-1",
        0,
        json!({"type": "click", "x": x, "y": y, "intent": "press it"}),
    )
    .await;
    let refused_ms = started.elapsed().as_millis();
    let (code, message) = code_of(click);
    assert_eq!(code, ErrorCode::ApprovalRequired, "{message}");
    assert!(message.contains("\"Press me\""), "{message}");
    assert!(message.contains("nothing was sent"), "{message}");
    println!("approval_required for a raw click in {refused_ms} ms (hit-test snapshot included)");
    // The refused action took no index: the next is still 0. A double click is refused too.
    let double = act(
        &client,
        &session,
        "double-1",
        0,
        json!({"type": "double_click", "x": x, "y": y, "intent": "press it twice"}),
    )
    .await;
    assert_eq!(code_of(double).0, ErrorCode::ApprovalRequired);

    // A semantic press on it is refused the same way.
    let current = tree(&client, &session).await;
    let index = node(&current, "button", "Press me").index;
    let press = ProgramRequest {
        request_id: "press-1".to_string(),
        expected_action_index: 0,
        control: None,
        screenshot_id: None,
        steps: serde_json::from_value(json!([{"type": "ax_press", "observation_id": current.observation_id, "node": index, "intent": "press it"}])).unwrap(),
    };
    assert_eq!(
        code_of(client.program(&session, &press).await).0,
        ErrorCode::ApprovalRequired
    );

    // What does not land on the target goes through: a click on the entry, then its text.
    let entry = node(&current, "text", "Name");
    let (ex, ey) = center(entry);
    let clicked = act(
        &client,
        &session,
        "click-2",
        0,
        json!({"type": "click", "x": ex, "y": ey, "intent": "focus the entry"}),
    )
    .await
    .unwrap();
    assert_eq!(clicked.action_index, 0);
    let current = tree(&client, &session).await;
    let entry = node(&current, "text", "Name").index;
    let typed = ProgramRequest {
        request_id: "text-1".to_string(),
        expected_action_index: 1,
        control: None,
        screenshot_id: None,
        steps: serde_json::from_value(json!([{"type": "ax_set_text", "observation_id": current.observation_id, "node": entry, "text": "ok", "mode": "set", "intent": "name it"}])).unwrap(),
    };
    client.program(&session, &typed).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while fixture_events(&log, "text").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !fixture_events(&log, "text").is_empty(),
        "the allowed text step reached the entry"
    );
    // Keys: shift+Tab from the entry moves the focus back onto the button (allowed: the focus
    // is in the entry when it is checked); a space then would press the button: refused.
    let back = json!({"type": "key", "keys": ["shift+Tab"], "intent": "focus the button"});
    act(&client, &session, "key-1", 2, back).await.unwrap();
    let focused = tree(&client, &session).await;
    let on_button = node(&focused, "button", "Press me")
        .states
        .iter()
        .any(|state| state == "focused");
    assert!(on_button, "shift+Tab put the focus on the button");
    let space = json!({"type": "key", "keys": ["space"], "intent": "press it"});
    let (code, message) = code_of(act(&client, &session, "key-2", 3, space).await);
    assert_eq!(code, ErrorCode::ApprovalRequired, "{message}");
    assert!(message.contains("keyboard focus"), "{message}");
    let typed = json!({"type": "type", "text": " ", "intent": "press it"});
    assert_eq!(
        code_of(act(&client, &session, "type-1", 3, typed).await).0,
        ErrorCode::ApprovalRequired
    );

    // Nothing happened on the button: the fixture logged no press.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        fixture_events(&log, "pressed").is_empty(),
        "a refused input reached the button"
    );
    // The refusals are in the journal as not-injected receipts... and counted, not indexed.
    assert_eq!(client.status(&session).await.unwrap().next_action_index, 3);

    // Fail-closed: the probe window is not accessible, so its click cannot be checked.
    let probe = ready(&client, "probe").await;
    let probe_click = act(
        &client,
        &probe,
        "click-p",
        0,
        json!({"type": "click", "x": 100, "y": 100, "intent": "anything"}),
    )
    .await;
    let (code, message) = code_of(probe_click);
    assert_eq!(code, ErrorCode::InsufficientData, "{message}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let presses = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "button_press")
        .count();
    assert_eq!(presses, 0, "the probe saw input that could not be checked");
}
