//! Program validation without a desktop: every step is checked before any input, a bad one is
//! `invalid_params` naming its index and field, and `done` may only come last.
#![allow(clippy::unwrap_used)]

use desk_contract::{Action, DisplaySize, ErrorCode};
use serde_json::json;

use super::validate_steps;

const DISPLAY: DisplaySize = DisplaySize {
    width: 640,
    height: 400,
};

fn steps(values: serde_json::Value) -> Vec<Action> {
    serde_json::from_value(values).unwrap()
}

#[test]
fn the_first_bad_step_is_named_by_index_and_field() {
    let cases = [
        (
            json!([{"type": "click", "x": 1, "y": 1, "intent": "a"}, {"type": "click", "x": 640, "y": 1, "intent": "b"}]),
            "steps[1] (click): field ",
        ),
        (
            json!([{"type": "key", "keys": ["ctrl", "s"], "intent": "a"}, {"type": "type", "text": "ok", "intent": "b"}, {"type": "drag", "path": [{"x": 1, "y": 1}], "intent": "c"}]),
            "steps[2] (drag): field path",
        ),
        (
            json!([{"type": "done", "intent": "a"}, {"type": "click", "x": 1, "y": 1, "intent": "b"}]),
            "steps[0]: done may only be a program's last step",
        ),
    ];
    for (program, expected) in cases {
        let error = validate_steps(&steps(program.clone()), None, DISPLAY).unwrap_err();
        assert_eq!(
            error.status_and_code().1,
            ErrorCode::InvalidParams,
            "{program}"
        );
        assert!(
            error.to_string().starts_with(expected),
            "{program}: {error}"
        );
    }
    let empty = validate_steps(&[], None, DISPLAY).unwrap_err();
    assert_eq!(empty.status_and_code().1, ErrorCode::InvalidParams);
    let many =
        vec![steps(json!([{"type": "wait", "milliseconds": 1, "intent": "w"}])).remove(0); 65];
    assert!(validate_steps(&many, None, DISPLAY).is_err());
    let fine = steps(
        json!([{"type": "move", "x": 639, "y": 399, "intent": "a"}, {"type": "done", "intent": "b"}]),
    );
    assert_eq!(validate_steps(&fine, None, DISPLAY).unwrap().len(), 2);
}
