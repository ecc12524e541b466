//! Unit tests of action batches: parsing in order, and empty, invalid, over-budget and
//! misplaced-`done` batches refused.

use serde_json::json;

use super::*;

const DISPLAY: DisplaySize = DisplaySize {
    width: 320,
    height: 200,
};

fn click(x: i64) -> serde_json::Value {
    json!({"type": "click", "x": x, "y": 10, "intent": "click"})
}

fn done() -> serde_json::Value {
    json!({"type": "done", "intent": "finished"})
}

#[test]
fn a_valid_batch_parses_in_order() {
    let actions = check_batch(&[click(1), click(2), done()], DISPLAY, 3).unwrap();
    assert_eq!(actions.len(), 3);
    assert_eq!(actions[2].type_name(), "done");
}

#[test]
fn empty_batches_are_refused() {
    let error = check_batch(&[], DISPLAY, 10).unwrap_err();
    assert_eq!(error.item_idx, None);
    assert!(error.message.contains("empty"), "{error}");
}

#[test]
fn an_invalid_item_refuses_the_batch() {
    let error = check_batch(&[click(1), click(5000)], DISPLAY, 10).unwrap_err();
    assert_eq!(error.item_idx, Some(1));
    let error = check_batch(&[json!({"type": "fly"})], DISPLAY, 10).unwrap_err();
    assert_eq!(error.item_idx, Some(0));
    assert!(
        error.message.starts_with("item 0: not an action"),
        "{error}"
    );
}

#[test]
fn batches_over_the_budget_are_refused() {
    let error = check_batch(&[click(1), click(2)], DISPLAY, 1).unwrap_err();
    assert!(error.message.contains("only 1 remain"), "{error}");
    assert!(check_batch(&[click(1), click(2)], DISPLAY, 2).is_ok());
}

#[test]
fn done_must_be_last() {
    let error = check_batch(&[done(), click(1)], DISPLAY, 10).unwrap_err();
    assert_eq!(error.item_idx, Some(0));
    assert!(error.message.contains("final item"), "{error}");
}
