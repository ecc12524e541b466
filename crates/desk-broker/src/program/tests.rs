//! Program validation without a desktop: every step is checked before any input, a bad one is
//! `invalid_params` naming its index and field, and `done` may only come last.
#![allow(clippy::unwrap_used)]

use desk_contract::a11y::AxWindow;
use desk_contract::control::ProgramStep;
use desk_contract::{DisplaySize, ErrorCode};
use serde_json::json;

use super::{AxContext, validate_steps};
use crate::control::Scope;
use crate::control::ax::Observation;

const DISPLAY: DisplaySize = DisplaySize {
    width: 640,
    height: 400,
};

fn steps(values: serde_json::Value) -> Vec<ProgramStep> {
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
        let error = validate_steps(&steps(program.clone()), None, DISPLAY, None).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidParams, "{program}");
        assert!(
            error.to_string().starts_with(expected),
            "{program}: {error}"
        );
    }
    let empty = validate_steps(&[], None, DISPLAY, None).unwrap_err();
    assert_eq!(empty.code(), ErrorCode::InvalidParams);
    let many =
        vec![steps(json!([{"type": "wait", "milliseconds": 1, "intent": "w"}])).remove(0); 65];
    assert!(validate_steps(&many, None, DISPLAY, None).is_err());
    let fine = steps(
        json!([{"type": "move", "x": 639, "y": 399, "intent": "a"}, {"type": "done", "intent": "b"}]),
    );
    assert_eq!(validate_steps(&fine, None, DISPLAY, None).unwrap().len(), 2);
}

const OBSERVATION: &str = "ax_00112233445566ff";

fn press(node: u32) -> serde_json::Value {
    json!({"type": "ax_press", "observation_id": OBSERVATION, "node": node, "intent": "press"})
}

#[test]
fn semantic_steps_are_checked_against_the_current_observation_before_any_input() {
    let scope = Scope {
        generation: 4,
        target_revision: 2,
    };
    let observation = Observation {
        id: OBSERVATION.to_string(),
        scope,
        windows: vec![AxWindow::None, AxWindow::Bound, AxWindow::Other],
    };
    let current = Some(AxContext {
        observation: Some(&observation),
        scope,
    });
    let click = json!({"type": "click", "x": 1, "y": 1, "intent": "click"});
    let fine = steps(
        json!([click, press(1), {"type": "ax_set_text", "observation_id": OBSERVATION, "node": 1, "text": "文本", "mode": "insert", "intent": "type"}]),
    );
    let validated = validate_steps(&fine, None, DISPLAY, current).unwrap();
    assert_eq!(validated.len(), 3);
    assert_eq!(validated[1].action_type().as_str(), "ax_press");
    let refused = |program: serde_json::Value, ax: Option<AxContext<'_>>| {
        let error = validate_steps(&steps(program), None, DISPLAY, ax).unwrap_err();
        (error.code(), error.to_string())
    };
    // A later step's refusal refuses the whole program: the click before it never runs.
    let (code, message) = refused(json!([click, press(2)]), current);
    assert_eq!(code, ErrorCode::AxForeignWindow, "{message}");
    assert!(message.starts_with("steps[1].node"), "{message}");
    let (code, _) = refused(json!([click, press(3)]), current);
    assert_eq!(code, ErrorCode::InvalidParams);
    let other = json!([{"type": "ax_press", "observation_id": "ax_ffffffffffffffff", "node": 1, "intent": "p"}]);
    assert_eq!(refused(other, current).0, ErrorCode::AxObservationStale);
    let later = Some(AxContext {
        observation: Some(&observation),
        scope: Scope {
            generation: 5,
            target_revision: 2,
        },
    });
    assert_eq!(
        refused(json!([press(1)]), later).0,
        ErrorCode::AxObservationStale
    );
    let none = Some(AxContext {
        observation: None,
        scope,
    });
    assert_eq!(
        refused(json!([press(1)]), none).0,
        ErrorCode::AxObservationStale
    );
    assert_eq!(refused(json!([press(1)]), None).0, ErrorCode::Unsupported);
    let (code, message) = refused(
        json!([{"type": "ax_set_text", "observation_id": OBSERVATION, "node": 1, "text": "a\u{7}", "mode": "set", "intent": "t"}]),
        current,
    );
    assert_eq!(code, ErrorCode::InvalidParams);
    assert!(message.contains("field text"), "{message}");
}
