//! The hit-test over hand-made trees: a point on a high-risk button or inside a high-risk
//! panel is a hit, beside it is not; a hidden node does not count; keys are judged by the
//! focused node and its ancestors; a semantic step by its node and its ancestors; a truncated
//! tree or an unknown node cannot decide; the sibling path names a node; places per input; a
//! pointer step aims the observer's walk at its one point, and an aimed observation decides
//! that exact point only.

use desk_contract::ScreenPoint;
use desk_contract::a11y::{AxNode, AxTree, AxWindow};
use desk_contract::desktop::WindowRect;
use desk_contract::{Button, InputAction};
use desk_policy::{Approvals, Policy};

use super::hit::{Place, find, find_node, path_of, places};

pub(super) fn approvals() -> Approvals {
    let key = desk_evidence::SigningKey::from_bytes(&[3; 32])
        .verifying_key()
        .to_base64();
    let yaml = format!(
        r#"schema_version: deskbroker.workspace-policy.v1
policy_version: t
workspace: {{disposable: true, logged_out: true}}
apps: {{allowed_profiles: [axfixture]}}
writable_directories: [attempt]
network: {{mode: none, allowed_domains: []}}
clipboard: none
limits: {{max_task_minutes: 30, max_refused_actions: 20, idle_seconds: 600}}
validity: {{not_before: "2020-01-01T00:00:00Z", not_after: "2099-01-01T00:00:00Z"}}
approvals:
  approver_id: approver
  approver_public_key: "{key}"
  receipt_ttl_seconds: 60
  high_risk_targets:
    - {{role: push button, name_pattern: "^delete$"}}
    - {{role: panel, name_pattern: "danger zone"}}
"#
    );
    Policy::from_yaml(&yaml)
        .unwrap()
        .approvals()
        .unwrap()
        .unwrap()
}

fn node(
    index: u32,
    parent: Option<u32>,
    role: &str,
    name: &str,
    rect: (i32, i32, u32, u32),
) -> AxNode {
    AxNode {
        index,
        parent,
        depth: parent.map_or(0, |_| 1),
        role: role.to_string(),
        name: name.to_string(),
        states: vec!["showing".to_string(), "visible".to_string()],
        bounds: Some(WindowRect {
            x: rect.0,
            y: rect.1,
            width: rect.2,
            height: rect.3,
        }),
        actions: Vec::new(),
        editable: false,
        child_count: 0,
        window: AxWindow::Bound,
    }
}

/// app > frame > [OK button, Delete button, Danger zone panel > Reset button, entry]
pub(super) fn tree() -> AxTree {
    let mut nodes = vec![
        node(0, None, "application", "app", (0, 0, 0, 0)),
        node(1, Some(0), "frame", "main", (0, 0, 800, 600)),
        node(2, Some(1), "push button", "OK", (10, 10, 100, 30)),
        node(3, Some(1), "push button", "Delete", (120, 10, 100, 30)),
        node(4, Some(1), "panel", "Danger Zone", (10, 100, 300, 200)),
        node(5, Some(4), "push button", "Reset", (20, 110, 80, 30)),
        node(6, Some(1), "text", "Name", (10, 400, 200, 30)),
    ];
    nodes[0].bounds = None;
    AxTree {
        observation_id: "ax_0000000000000001".to_string(),
        nodes,
        truncated: false,
        elapsed_ms: 1,
    }
}

fn hit_at(tree: &AxTree, x: i64, y: i64) -> Option<String> {
    find(tree, &approvals(), Place::Point { x, y })
        .unwrap()
        .map(|hit| hit.name)
}

#[test]
fn a_point_on_a_high_risk_control_or_inside_a_high_risk_panel_is_a_hit() {
    let tree = tree();
    assert_eq!(hit_at(&tree, 150, 20).as_deref(), Some("Delete"));
    // Edges: the left/top edge is inside, the right/bottom edge outside.
    assert_eq!(hit_at(&tree, 120, 10).as_deref(), Some("Delete"));
    assert_eq!(hit_at(&tree, 220, 20), None);
    assert_eq!(hit_at(&tree, 50, 20), None);
    // The panel holds "Reset": a point on it is inside the panel.
    assert_eq!(hit_at(&tree, 30, 120).as_deref(), Some("Danger Zone"));
    assert_eq!(hit_at(&tree, 50, 450), None);
}

#[test]
fn a_hidden_node_does_not_count() {
    let mut tree = tree();
    tree.nodes[3].states = vec!["visible".to_string()];
    assert_eq!(hit_at(&tree, 150, 20), None);
}

#[test]
fn keys_are_judged_by_the_focused_node_and_its_ancestors() {
    let approvals = approvals();
    let mut tree = tree();
    assert_eq!(find(&tree, &approvals, Place::Focus).unwrap(), None);
    tree.nodes[6].states.push("focused".to_string());
    assert_eq!(find(&tree, &approvals, Place::Focus).unwrap(), None);
    tree.nodes[5].states.push("focused".to_string());
    let hit = find(&tree, &approvals, Place::Focus).unwrap().unwrap();
    assert_eq!((hit.index, hit.name.as_str()), (4, "Danger Zone"));
}

#[test]
fn a_semantic_step_is_judged_by_its_node_and_its_ancestors() {
    let approvals = approvals();
    let tree = tree();
    assert_eq!(find_node(&tree, &approvals, 2).unwrap(), None);
    assert_eq!(
        find_node(&tree, &approvals, 3).unwrap().unwrap().name,
        "Delete"
    );
    assert_eq!(
        find_node(&tree, &approvals, 5).unwrap().unwrap().name,
        "Danger Zone"
    );
    assert!(find_node(&tree, &approvals, 7).is_err());
}

#[test]
fn a_truncated_tree_cannot_clear_a_point() {
    let mut tree = tree();
    tree.truncated = true;
    assert!(find(&tree, &approvals(), Place::Point { x: 50, y: 450 }).is_err());
    assert!(find(&tree, &approvals(), Place::Focus).is_err());
}

#[test]
fn the_sibling_path_names_a_node() {
    let tree = tree();
    assert_eq!(path_of(&tree, 0).as_deref(), Some(""));
    assert_eq!(path_of(&tree, 3).as_deref(), Some("0/1"));
    assert_eq!(path_of(&tree, 5).as_deref(), Some("0/2/0"));
    assert_eq!(path_of(&tree, 9), None);
}

#[test]
fn places_per_input() {
    let at = ScreenPoint { x: 5, y: 6 };
    let click = InputAction::Click {
        at,
        button: Button::Left,
        modifiers: Vec::new(),
    };
    assert_eq!(places(&click), vec![Place::Point { x: 5, y: 6 }]);
    let drag = InputAction::Drag {
        path: vec![at, ScreenPoint { x: 50, y: 60 }],
        button: Button::Left,
        duration_ms: 100,
        modifiers: Vec::new(),
    };
    assert_eq!(places(&drag), vec![Place::Point { x: 5, y: 6 }]);
    let key = InputAction::Key {
        keys: vec![desk_contract::keys::parse_key("Return").unwrap()],
    };
    assert_eq!(places(&key), vec![Place::Focus]);
    assert_eq!(
        places(&InputAction::Type { text: "x".into() }),
        vec![Place::Focus]
    );
    assert!(
        places(&InputAction::Move {
            to: at,
            duration_ms: 0
        })
        .is_empty()
    );
    assert!(places(&InputAction::Done).is_empty());
}

#[test]
fn an_aimed_observation_decides_its_point_only() {
    use super::{aim, decides};
    use crate::observer::ObservationScope;
    let point = |x, y| Place::Point { x, y };
    assert_eq!(aim(&[point(10, 20)]), Some([10, 20]));
    assert_eq!(aim(&[Place::Focus]), None, "keys and text: the whole tree");
    assert_eq!(aim(&[]), None);
    assert_eq!(aim(&[point(1, 2), point(3, 4)]), None);
    assert_eq!(aim(&[point(-1, 2)]), None);
    let scope = ObservationScope { point: [10, 20] };
    assert!(decides(scope, point(10, 20)));
    assert!(!decides(scope, point(10, 21)));
    assert!(!decides(scope, point(11, 20)));
    assert!(!decides(scope, Place::Focus));
}
