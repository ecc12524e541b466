//! Accessibility and windows through the real broker with LibreCAD (issue 13): the session's
//! private AT-SPI bus carries LibreCAD's tree to the worker; `GET accessibility` returns it
//! bounded (and measured: the snapshot time is printed), refuses bad limits, and `GET windows`
//! lists the main window and a dialog once one is open; the receipt of the step that opened
//! the dialog names it in `opened_windows`. The probe window, which is not
//! accessible, answers `accessibility_unavailable`.

use std::time::Instant;

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;

use desk_contract::desktop::WindowRole;
use serde_json::json;

use crate::librecad::librecad_available;
use crate::probe::act;
use crate::support::{Broker, lease_and_reset, xvfb_available};

pub(crate) async fn ready(client: &Client, profile: &str) -> String {
    lease_and_reset(client, "a11y", &format!("a11y-{profile}"), profile)
        .await
        .0
}

fn code(error: ClientError) -> ErrorCode {
    match error {
        ClientError::Api(body) => body.code,
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn librecad_tree_and_windows_through_the_broker() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let client = broker.client();
    let session = ready(&client, "librecad").await;

    // The whole tree, three times: the first read pays for Qt building its accessibles.
    let mut observations = Vec::new();
    for round in 0..3 {
        let started = Instant::now();
        let tree = client
            .accessibility(&session, None, None)
            .await
            .unwrap()
            .tree;
        println!(
            "librecad accessibility snapshot {round}: {} nodes, walk {} ms, request {} ms, \
             truncated {}",
            tree.nodes.len(),
            tree.elapsed_ms,
            started.elapsed().as_millis(),
            tree.truncated
        );
        observations.push(tree);
    }
    let tree = observations.last().unwrap();
    assert!(tree.observation_id.starts_with("ax_"));
    assert!(!tree.truncated, "LibreCAD's tree fits the default limits");
    assert!(tree.nodes.len() > 200, "{} nodes", tree.nodes.len());
    assert_eq!(tree.nodes[0].role, "application");
    for (i, node) in tree.nodes.iter().enumerate() {
        assert_eq!(node.index as usize, i);
        if let Some(parent) = node.parent {
            assert!((parent as usize) < i, "breadth first: parents come first");
            assert_eq!(tree.nodes[parent as usize].depth + 1, node.depth);
        }
    }
    let frame = tree
        .nodes
        .iter()
        .find(|node| node.depth == 1 && node.role == "frame")
        .expect("LibreCAD's main window");
    assert!(frame.name.contains("attempt.dxf"), "{}", frame.name);
    assert!(frame.bounds.is_some());
    let actionable = tree.nodes.iter().filter(|n| !n.actions.is_empty()).count();
    println!("nodes with actions: {actionable}");
    assert!(actionable > 10, "LibreCAD's controls list their actions");
    let ids: std::collections::BTreeSet<_> = observations
        .iter()
        .map(|t| t.observation_id.clone())
        .collect();
    assert_eq!(ids.len(), 3, "every snapshot is a new observation");

    // Limits: honoured exactly, refused (never clamped) out of range.
    let small = client
        .accessibility(&session, Some(10), None)
        .await
        .unwrap()
        .tree;
    assert_eq!(small.nodes.len(), 10);
    assert!(small.truncated);
    let shallow = client
        .accessibility(&session, None, Some(1))
        .await
        .unwrap()
        .tree;
    assert!(shallow.nodes.iter().all(|node| node.depth <= 1));
    assert!(shallow.truncated);
    for (nodes, depth) in [(Some(0), None), (Some(10_001), None), (None, Some(0))] {
        let error = client
            .accessibility(&session, nodes, depth)
            .await
            .unwrap_err();
        assert_eq!(code(error), ErrorCode::InvalidRequest);
    }

    // Windows: the main window alone, then a dialog beside it.
    let windows = client.windows(&session).await.unwrap().windows;
    let main: Vec<_> = windows
        .iter()
        .filter(|w| w.role == WindowRole::Main)
        .collect();
    assert_eq!(main.len(), 1, "{windows:?}");
    assert!(main[0].on_screen && main[0].title.contains("attempt.dxf"));
    assert!(!windows.iter().any(|w| w.role == WindowRole::Dialog));
    let opened = act(
        &client,
        &session,
        "open-dialog",
        0,
        json!({"type": "key", "keys": ["ctrl", "o"], "intent": "open a dialog"}),
    )
    .await
    .unwrap();
    let mut dialog = None;
    for _ in 0..50 {
        let windows = client.windows(&session).await.unwrap().windows;
        dialog = windows
            .into_iter()
            .find(|w| w.role == WindowRole::Dialog && w.on_screen);
        if dialog.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let dialog = dialog.expect("the open dialog is listed");
    println!("dialog window: {dialog:?}");
    // The step's receipt names the window it opened, and only that.
    let receipt = &opened.receipt;
    println!(
        "opened_windows: {:?} (settle {:?} after {} ms)",
        receipt.opened_windows, receipt.settle.outcome, receipt.settle.wait_ms
    );
    assert!(
        receipt
            .opened_windows
            .iter()
            .any(|w| w.role == WindowRole::Dialog && w.title == dialog.title),
        "{receipt:?}"
    );
    assert!(
        !receipt
            .opened_windows
            .iter()
            .any(|w| w.role == WindowRole::Main),
        "{receipt:?}"
    );
    client.release(&session).await.unwrap();

    // The probe window is not accessible: a typed refusal, not an empty tree.
    let probe = ready(&client, "probe").await;
    let error = client.accessibility(&probe, None, None).await.unwrap_err();
    assert_eq!(code(error), ErrorCode::AccessibilityUnavailable);
    client.release(&probe).await.unwrap();
}
