//! Semantic program steps through the real broker with LibreCAD (issue 13 item 4): an
//! `ax_press` on a dock page tab of LibreCAD's main window (its pinned profile shows no tool
//! bars) reaches Qt's AT-SPI provider once (the tab's pixels change in the program's screenshot
//! and it is the current tab in the next snapshot; the event log has one `ax_action` row for it
//! and no seat input), while a stale
//! observation id and a node of another window (the open dialog) are refused before any input
//! with the event log and the action index unchanged. The capabilities advertise the steps.

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::a11y::{AxNode, AxTree, AxWindow};
use desk_contract::control::{ProgramRequest, ProgramResponse};
use desk_contract::desktop::{WindowRect, WindowRole};
use serde_json::{Value, json};

use crate::accessibility::ready;
use crate::librecad::librecad_available;
use crate::support::{Broker, png_pixels, xvfb_available};

/// How many pixels inside `rect` differ between two screenshots.
fn changed_in(before: &str, after: &str, rect: WindowRect) -> usize {
    let (a, line, channels) = png_pixels(before);
    let (b, _, _) = png_pixels(after);
    let mut changed = 0;
    for y in rect.y.max(0) as usize..(rect.y.max(0) as usize + rect.height as usize) {
        for x in rect.x.max(0) as usize..(rect.x.max(0) as usize + rect.width as usize) {
            let at = y * line + x * channels;
            if a.get(at..at + 3) != b.get(at..at + 3) {
                changed += 1;
            }
        }
    }
    changed
}

fn program(request_id: &str, index: u64, steps: Value) -> ProgramRequest {
    ProgramRequest {
        request_id: request_id.to_string(),
        expected_action_index: index,
        control: None,
        screenshot_id: None,
        steps: serde_json::from_value(steps).unwrap(),
    }
}

pub(crate) fn press(tree: &AxTree, node: &AxNode) -> Value {
    json!({
        "type": "ax_press",
        "observation_id": tree.observation_id,
        "node": node.index,
        "intent": format!("press {}", node.name),
    })
}

pub(crate) fn refused(result: Result<ProgramResponse, ClientError>, code: ErrorCode) {
    match result {
        Err(ClientError::Api(body)) => assert_eq!(body.code, code, "{}", body.message),
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

fn has_state(node: &AxNode, state: &str) -> bool {
    node.states.iter().any(|s| s == state)
}

/// The event-log rows of action `index`.
fn rows_of(events: &str, index: u64) -> Vec<Value> {
    events
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|row| row["actionIndex"] == json!(index))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn semantic_steps_on_librecad() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let client: Client = broker.client();

    let capabilities = client.capabilities().await.unwrap();
    for step in ["ax_press", "ax_set_text"] {
        assert!(capabilities.step_types.iter().any(|s| s == step), "{step}");
        assert!(
            !capabilities.action_types.iter().any(|s| s == step),
            "{step}"
        );
    }
    for feature in ["accessibility", "windows", "semantic_steps"] {
        let entry = capabilities
            .features
            .iter()
            .find(|f| f.feature == feature)
            .unwrap();
        assert!(entry.supported, "{feature}");
    }

    let session = ready(&client, "librecad").await;
    // The first snapshot pays for Qt building its accessibles; take the second.
    client.accessibility(&session, None, None).await.unwrap();
    let tree = client
        .accessibility(&session, None, None)
        .await
        .unwrap()
        .tree;
    // LibreCAD's pinned profile shows no tool bars; its dock widgets' page tabs are the
    // pressable controls on screen. Pressing a tab that is not current makes it current.
    let tabs: Vec<&AxNode> = tree
        .nodes
        .iter()
        .filter(|n| {
            n.window == AxWindow::Bound
                && n.role == "page tab"
                && n.actions.iter().any(|a| a == "Press")
                && n.bounds.is_some()
                && ["showing", "enabled"]
                    .iter()
                    .all(|state| has_state(n, state))
        })
        .collect();
    let names: Vec<&str> = tabs.iter().map(|n| n.name.as_str()).collect();
    println!("page tabs of LibreCAD's main window: {names:?}");
    let windows: std::collections::BTreeMap<String, usize> =
        tree.nodes.iter().fold(Default::default(), |mut counts, n| {
            *counts.entry(n.window.as_str().to_string()).or_default() += 1;
            counts
        });
    println!("nodes by window: {windows:?}");
    assert_eq!(tree.nodes[0].window, AxWindow::None);
    let current_tab = |tree: &AxTree, name: &str| {
        tree.nodes
            .iter()
            .any(|n| n.role == "page tab list" && n.name == name)
    };
    let button = *tabs
        .iter()
        .find(|n| !current_tab(&tree, &n.name))
        .expect("a page tab that is not current in LibreCAD's main window");
    let bounds = button.bounds.unwrap();
    println!("pressing {:?} ({}) at {bounds:?}", button.name, button.role);

    // A stale observation: refused before any input, nothing logged, the index unchanged.
    let stale = tree.clone();
    let tree = client
        .accessibility(&session, None, None)
        .await
        .unwrap()
        .tree;
    let button = tree
        .nodes
        .iter()
        .find(|n| n.name == button.name && n.role == button.role && n.bounds == Some(bounds))
        .unwrap()
        .clone();
    let events_before = client.events(&session).await.unwrap();
    let wait = json!({"type": "wait", "milliseconds": 50, "intent": "first step"});
    let result = client
        .program(
            &session,
            &program("stale", 0, json!([wait, press(&stale, &button)])),
        )
        .await;
    refused(result, ErrorCode::AxObservationStale);
    assert_eq!(client.events(&session).await.unwrap(), events_before);

    // The press: one step, delivered to the provider, the button's pixels and state change.
    let before = client.screenshot(&session).await.unwrap();
    let pressed = client
        .program(
            &session,
            &program("press", 0, json!([press(&tree, &button)])),
        )
        .await
        .unwrap();
    assert_eq!(pressed.action_index, 0);
    assert_eq!(pressed.receipt.submitted, 1);
    assert_eq!(pressed.receipt.failing_step, None);
    let receipt = &pressed.receipt.steps[0];
    assert_eq!(receipt.action_type.as_str(), "ax_press");
    assert_eq!(receipt.n_input_events, 1);
    let after = pressed.screenshot.as_ref().unwrap();
    let changed = changed_in(&before.png_base64, &after.png_base64, bounds);
    println!(
        "pixels changed inside the button: {changed} of {}",
        bounds.width * bounds.height
    );
    assert!(changed > 0, "the pressed button looks different");
    let rows = rows_of(&client.events(&session).await.unwrap(), 0);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["type"], "ax_action");
    assert_eq!(rows[0]["action"], "ax_press");
    assert_eq!(rows[0]["node"], json!(button.index));
    assert_eq!(rows[0]["stepIndex"], json!(0));
    let after_tree = client
        .accessibility(&session, None, None)
        .await
        .unwrap()
        .tree;
    let now = after_tree
        .nodes
        .iter()
        .find(|n| n.name == button.name && n.role == button.role && n.bounds == Some(bounds))
        .unwrap();
    assert!(
        current_tab(&after_tree, &now.name),
        "the pressed tab is current: {:?}",
        after_tree
            .nodes
            .iter()
            .filter(|n| n.role == "page tab list")
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
    );

    // A node of another window (the open dialog): refused before any input.
    let open = json!({"type": "key", "keys": ["ctrl", "o"], "intent": "open a dialog"});
    client
        .program(&session, &program("open", 1, json!([open])))
        .await
        .unwrap();
    let mut dialog = false;
    for _ in 0..50 {
        let windows = client.windows(&session).await.unwrap().windows;
        if windows
            .iter()
            .any(|w| w.role == WindowRole::Dialog && w.on_screen)
        {
            dialog = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(dialog, "the open dialog is listed");
    let tree = client
        .accessibility(&session, None, None)
        .await
        .unwrap()
        .tree;
    let foreign = tree
        .nodes
        .iter()
        .find(|n| n.window == AxWindow::Other && !n.actions.is_empty())
        .expect("an actionable node of the dialog");
    println!("dialog node: {:?} ({})", foreign.name, foreign.role);
    let events_before = client.events(&session).await.unwrap();
    let result = client
        .program(
            &session,
            &program("foreign", 2, json!([press(&tree, foreign)])),
        )
        .await;
    refused(result, ErrorCode::AxForeignWindow);
    assert_eq!(client.events(&session).await.unwrap(), events_before);
    // The index was not taken: the next program gets 2.
    let escape = json!({"type": "key", "keys": ["escape"], "intent": "close the dialog"});
    let closed = client
        .program(&session, &program("close", 2, json!([escape])))
        .await
        .unwrap();
    assert_eq!(closed.action_index, 2);
    client.release(&session).await.unwrap();
}
