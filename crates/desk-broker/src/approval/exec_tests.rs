//! Receipts, their store and the executor's pieces without a desktop: a receipt verifies only
//! with the broker's key, unchanged and with its schema; digests bind every field of the action
//! and the binding; the store consumes a receipt once (and keeps it private); the effect digest
//! ignores the observation id and focus but sees a renamed node and a new window; the element
//! is re-resolved by its whole binding only; the executor's allowance admits one exact press
//! once; the approvals route is authorized by an approver credential only.

use std::os::unix::fs::PermissionsExt as _;

use desk_contract::a11y::AxWindow;
use desk_contract::approval::{
    APPROVAL_RECEIPT_SCHEMA, ApprovalPayload, ElementBinding, ExactAction,
};
use desk_contract::desktop::WindowRect;
use desk_contract::{ErrorCode, InputAction};
use desk_evidence::SigningKey;

use super::ApprovalGate;
use super::effect::effect_digest;
use super::issue::{check_approver, find_binding, resolve_at};
use super::receipt::{self, Consumed, ReceiptStore, Stored};
use super::tests::{approvals, tree};
use crate::credential::{self, Scope};
use crate::ids::SessionId;

fn press(observation: &str, node: u32) -> ExactAction {
    ExactAction::AxPress {
        observation_id: observation.to_string(),
        node,
    }
}

fn binding() -> ElementBinding {
    ElementBinding {
        observation_id: "ax_0000000000000001".to_string(),
        role: "push button".to_string(),
        name: "Delete".to_string(),
        path: "0/1".to_string(),
        bounds: WindowRect {
            x: 120,
            y: 10,
            width: 100,
            height: 30,
        },
    }
}

fn payload(approval_id: &str) -> ApprovalPayload {
    ApprovalPayload {
        schema: APPROVAL_RECEIPT_SCHEMA.to_string(),
        approval_id: approval_id.to_string(),
        session_id: "s1".to_string(),
        action_sha256: receipt::action_sha256(&press("ax_0000000000000001", 3)).unwrap(),
        element_sha256: receipt::element_sha256(&binding()).unwrap(),
        approver_id: "approver".to_string(),
        policy_sha256: "0".repeat(64),
        issued_at_ms: 1_000,
        expires_at_ms: 61_000,
    }
}

#[test]
fn a_receipt_verifies_with_the_brokers_key_only_and_unchanged() {
    let key = SigningKey::from_bytes(&[7; 32]);
    let signed = receipt::sign(&key, payload("apr-00000000000000000000000000000001")).unwrap();
    assert!(receipt::verify(&key.verifying_key(), &signed));
    let other = SigningKey::from_bytes(&[8; 32]);
    assert!(!receipt::verify(&other.verifying_key(), &signed));
    let mut longer = signed.clone();
    longer.payload.expires_at_ms += 1;
    assert!(!receipt::verify(&key.verifying_key(), &longer));
    let mut moved = signed.clone();
    moved.payload.session_id = "s2".to_string();
    assert!(!receipt::verify(&key.verifying_key(), &moved));
    let mut garbled = signed.clone();
    garbled.signature_b64 = "AAAA".to_string();
    assert!(!receipt::verify(&key.verifying_key(), &garbled));
    // A payload of another schema is no receipt, even signed by the key.
    let mut foreign = payload("apr-00000000000000000000000000000001");
    foreign.schema = "something.else.v1".to_string();
    let foreign = receipt::sign(&key, foreign).unwrap();
    assert!(!receipt::verify(&key.verifying_key(), &foreign));
}

#[test]
fn digests_bind_every_field_of_the_action_and_the_element() {
    let base = receipt::action_sha256(&press("ax_0000000000000001", 3)).unwrap();
    assert_eq!(base.len(), 64);
    assert_eq!(
        base,
        receipt::action_sha256(&press("ax_0000000000000001", 3)).unwrap()
    );
    assert_ne!(
        base,
        receipt::action_sha256(&press("ax_0000000000000001", 4)).unwrap()
    );
    assert_ne!(
        base,
        receipt::action_sha256(&press("ax_0000000000000002", 3)).unwrap()
    );
    let element = receipt::element_sha256(&binding()).unwrap();
    let mut moved = binding();
    moved.bounds.x += 1;
    assert_ne!(element, receipt::element_sha256(&moved).unwrap());
    let mut renamed = binding();
    renamed.name = "delete".to_string();
    assert_ne!(element, receipt::element_sha256(&renamed).unwrap());
}

#[test]
fn the_store_consumes_a_receipt_exactly_once_and_keeps_it_private() {
    let state = tempfile::tempdir().unwrap();
    let session = SessionId::parse("s1").unwrap();
    let evidence = desk_desktop::StateDir::new(state.path()).session_evidence("s1");
    std::fs::create_dir_all(&evidence).unwrap();
    let store = ReceiptStore::new(state.path(), &session);
    let id = receipt::new_approval_id().unwrap();
    assert!(receipt::is_approval_id(&id), "{id}");
    assert!(!receipt::is_approval_id("apr-../../etc"));
    assert_eq!(store.get(&id).unwrap(), None);
    assert_eq!(store.get("../x").unwrap(), None);
    let stored = Stored {
        receipt: receipt::sign(&SigningKey::from_bytes(&[7; 32]), payload(&id)).unwrap(),
        element: binding(),
    };
    store.put(&stored).unwrap();
    assert!(store.put(&stored).is_err(), "an id is stored once");
    assert_eq!(store.get(&id).unwrap(), Some(stored));
    let file = evidence.join("approvals").join(format!("{id}.json"));
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(evidence.join("approvals"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let consumed = Consumed {
        request_id: "r1".to_string(),
        expected_action_index: 0,
        observation_id: "ax_0000000000000002".to_string(),
        node: 3,
    };
    assert_eq!(store.consumed(&id).unwrap(), None);
    assert!(store.consume(&id, &consumed).unwrap());
    let again = Consumed {
        request_id: "r2".to_string(),
        ..consumed.clone()
    };
    assert!(!store.consume(&id, &again).unwrap(), "consumed twice");
    assert_eq!(store.consumed(&id).unwrap(), Some(consumed));
}

#[test]
fn the_effect_digest_sees_the_apps_state_not_the_observation_or_the_focus() {
    let before = tree();
    let base = effect_digest(&before).unwrap();
    let mut renumbered = tree();
    renumbered.observation_id = "ax_0000000000000009".to_string();
    renumbered.elapsed_ms = 99;
    assert_eq!(base, effect_digest(&renumbered).unwrap());
    let mut focused = tree();
    focused.nodes[3].states.push("focused".to_string());
    assert_eq!(base, effect_digest(&focused).unwrap());
    let mut renamed = tree();
    renamed.nodes[6].name = "Presses: 1".to_string();
    assert_ne!(base, effect_digest(&renamed).unwrap());
    let mut disabled = tree();
    disabled.nodes[3].states.retain(|state| state != "visible");
    assert_ne!(base, effect_digest(&disabled).unwrap());
    let mut dialog = tree();
    let mut window = dialog.nodes[1].clone();
    window.index = 7;
    window.window = AxWindow::Other;
    dialog.nodes.push(window);
    assert_ne!(base, effect_digest(&dialog).unwrap());
}

#[test]
fn the_element_is_re_resolved_by_its_whole_binding() {
    let tree = tree();
    assert_eq!(resolve_at(&tree, 3, &binding()), Ok(()));
    assert!(resolve_at(&tree, 2, &binding()).is_err());
    assert!(resolve_at(&tree, 99, &binding()).is_err());
    assert_eq!(find_binding(&tree, &binding()), vec![3]);
    let mut moved = tree.clone();
    moved.nodes[3].bounds = Some(WindowRect {
        x: 121,
        y: 10,
        width: 100,
        height: 30,
    });
    assert!(find_binding(&moved, &binding()).is_empty(), "moved 1 px");
    let mut elsewhere = binding();
    elsewhere.path = "0/2".to_string();
    assert!(find_binding(&tree, &elsewhere).is_empty(), "another path");
}

#[test]
fn the_allowance_admits_one_exact_press_once() {
    let gate = ApprovalGate::new(Some(approvals()));
    let session = SessionId::parse("s1").unwrap();
    let tree = tree();
    gate.observed(&session, &tree);
    let mut backend = desk_desktop::fake::FakeDesktop::new(desk_contract::DisplaySize {
        width: 800,
        height: 600,
    });
    let observed = |_: &desk_contract::a11y::AxTree| Ok(());
    let press_delete = InputAction::AxPress {
        observation_id: tree.observation_id.clone(),
        node: 3,
    };
    let refused = gate
        .check(
            &mut backend,
            &session,
            &press_delete,
            &observed,
            &|_| Ok(()),
        )
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::ApprovalRequired);
    // Another node of the observation is not admitted by an allowance for node 3.
    gate.allow_once(&session, &tree.observation_id, 3);
    let press_panel = InputAction::AxPress {
        observation_id: tree.observation_id.clone(),
        node: 5,
    };
    assert!(
        gate.check(&mut backend, &session, &press_panel, &observed, &|_| Ok(()))
            .is_err()
    );
    gate.check(
        &mut backend,
        &session,
        &press_delete,
        &observed,
        &|_| Ok(()),
    )
    .unwrap();
    let again = gate
        .check(
            &mut backend,
            &session,
            &press_delete,
            &observed,
            &|_| Ok(()),
        )
        .unwrap_err();
    assert_eq!(again.code(), ErrorCode::ApprovalRequired);
    // Cleared unused: nothing is admitted.
    gate.allow_once(&session, &tree.observation_id, 3);
    gate.allow_once_clear(&session);
    assert!(
        gate.check(
            &mut backend,
            &session,
            &press_delete,
            &observed,
            &|_| Ok(())
        )
        .is_err()
    );
}

#[test]
fn only_the_policys_approver_with_the_approve_scope_is_admitted() {
    let gate = ApprovalGate::new(Some(approvals()));
    let approver = SigningKey::from_bytes(&[3; 32]);
    let now = 1_000_000;
    let token = |key: &SigningKey, sub: &str, scope: &[Scope]| {
        credential::issue(key, sub, scope, now, 60_000).unwrap()
    };
    let admitted = check_approver(
        &gate,
        Some(&token(&approver, "approver", &[Scope::Approve])),
        now,
    )
    .unwrap();
    assert_eq!(admitted.0, "approver");
    let forged = token(
        &SigningKey::from_bytes(&[4; 32]),
        "approver",
        &[Scope::Approve],
    );
    assert!(check_approver(&gate, Some(&forged), now).is_err());
    let other = token(&approver, "someone", &[Scope::Approve]);
    assert!(check_approver(&gate, Some(&other), now).is_err());
    let reviewer = token(&approver, "approver", &[Scope::Review]);
    assert!(check_approver(&gate, Some(&reviewer), now).is_err());
    assert!(check_approver(&gate, None, now).is_err());
    assert!(check_approver(&gate, Some("a-lease-token"), now).is_err());
    let expired = token(&approver, "approver", &[Scope::Approve]);
    assert!(check_approver(&gate, Some(&expired), now + 60_000).is_err());
    // Without the policy's section nobody is an approver.
    let none = ApprovalGate::new(None);
    let valid = token(&approver, "approver", &[Scope::Approve]);
    assert!(check_approver(&none, Some(&valid), now).is_err());
}
