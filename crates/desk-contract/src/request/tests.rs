//! Unit tests of the request parsers: which part a rejection concerns, the path it names, and
//! that the action field-kind table matches the `Action` schema.

use serde_json::{Value, json};

use super::*;
use crate::action::{Button, Modifier, WirePoint};

fn action_request(body: &str) -> RequestError {
    match parse_action_request(body.as_bytes()) {
        Err(error) => error,
        Ok(request) => panic!("expected a rejection of {body}, got {request:?}"),
    }
}

#[test]
fn rejections_name_their_part_and_path() {
    let table: &[(&str, RequestPart, &str)] = &[
        (
            r#"{"request_id":"r","request_id":"s","expected_action_index":0,"action":{}}"#,
            RequestPart::Envelope,
            "$.request_id",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"done","intent":"a","intent":"b"}}"#,
            RequestPart::Action,
            "$.action.intent",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"done","intent":"a"},"action":{}}"#,
            RequestPart::Envelope,
            "$.action",
        ),
        (
            r#"{"request_id":"r","expected_action_index":NaN,"action":{}}"#,
            RequestPart::Envelope,
            "$.expected_action_index",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":NaN,"y":1,"intent":"a"}}"#,
            RequestPart::Action,
            "$.action.x",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":1e999,"y":1,"intent":"a"}}"#,
            RequestPart::Action,
            "$.action.x",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":Infinity}"#,
            RequestPart::Action,
            "$.action",
        ),
        (
            r#"{"request_id":"r","expected_action_index":18446744073709551616,"action":{}}"#,
            RequestPart::Envelope,
            "$.expected_action_index",
        ),
        (
            r#"{"request_id":"r","expected_action_index":-1,"action":{}}"#,
            RequestPart::Envelope,
            "$.expected_action_index",
        ),
        (
            r#"{"request_id":"r","expected_action_index":1.0,"action":{}}"#,
            RequestPart::Envelope,
            "$.expected_action_index",
        ),
        (
            r#"{"request_id":"r","expected_action_index":true,"action":{}}"#,
            RequestPart::Envelope,
            "$.expected_action_index",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{},"extra":1}"#,
            RequestPart::Envelope,
            "$.extra",
        ),
        (
            r#"{"request_id":null,"expected_action_index":0,"action":{}}"#,
            RequestPart::Envelope,
            "$.request_id",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":true,"y":1,"intent":"a"}}"#,
            RequestPart::Action,
            "$.action.x",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":1,"y":1e2,"intent":"a"}}"#,
            RequestPart::Action,
            "$.action.y",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":1,"y":"2","intent":"a"}}"#,
            RequestPart::Action,
            "$.action.y",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":1,"y":2,"intent":null}}"#,
            RequestPart::Action,
            "$.action.intent",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"key","keys":["a",1],"intent":"a"}}"#,
            RequestPart::Action,
            "$.action.keys[1]",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"drag","path":[{"x":1,"y":1},{"x":2,"y":0.5}],"intent":"a"}}"#,
            RequestPart::Action,
            "$.action.path[1].y",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"click","x":1,"y":1,"intent":"a","force":1}}"#,
            RequestPart::Action,
            "$.action",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"hover","intent":"a"}}"#,
            RequestPart::Action,
            "$.action.type",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"done","intent":"a"}} x"#,
            RequestPart::Envelope,
            "$",
        ),
        (
            r#"{"request_id":"r","expected_action_index":0,"action":{"type":"done","intent":"a"#,
            RequestPart::Envelope,
            "$.action.intent",
        ),
        ("", RequestPart::Envelope, "$"),
        ("[]", RequestPart::Envelope, "$"),
    ];
    for (body, part, path) in table {
        let error = action_request(body);
        assert_eq!(
            (error.part, error.error.path.as_str()),
            (*part, *path),
            "{body}: {error}"
        );
    }
}

#[test]
fn valid_requests_parse() {
    let request = parse_action_request(
        br#"{"request_id":"r1","expected_action_index":3,"action":{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}],"button":"right","duration_ms":50,"intent":"drag it"}}"#,
    )
    .expect("a valid request parses");
    assert_eq!(request.expected_action_index, 3);
    assert_eq!(request.action.type_name(), "drag");
    let lease: crate::api::LeaseRequest =
        parse_request(br#"{"task_id":"t","attempt_id":"a"}"#).expect("lease parses");
    assert_eq!(lease.profile, None);
    let refused = parse_request::<crate::api::LeaseRequest>(
        br#"{"task_id":"t","attempt_id":"a","task_id":"u"}"#,
    )
    .expect_err("duplicate key");
    assert_eq!(refused.part, RequestPart::Envelope);
}

#[test]
fn objects_in_array_form_are_refused_at_their_path() {
    // serde's derived struct deserializers accept a sequence of the fields in order; every one
    // of these parsed before the check in `strict::from_value`.
    let actions: &[(&str, RequestPart, &str)] = &[
        (
            r#"["r1",0,{"type":"done","intent":"finish"}]"#,
            RequestPart::Envelope,
            "$",
        ),
        (
            r#"{"request_id":"r1","expected_action_index":0,"action":["done","finish"]}"#,
            RequestPart::Action,
            "$.action",
        ),
        (
            r#"{"request_id":"r1","expected_action_index":0,"action":{"type":"drag","path":[[1,2],{"x":3,"y":4}],"intent":"drag"}}"#,
            RequestPart::Action,
            "$.action.path[0]",
        ),
        (
            r#"{"request_id":"r1","expected_action_index":0,"action":{"type":"drag","path":[{"x":1,"y":2},[3,4]],"intent":"drag"}}"#,
            RequestPart::Action,
            "$.action.path[1]",
        ),
    ];
    for (body, part, path) in actions {
        let error = action_request(body);
        assert_eq!(
            (error.part, error.error.path.as_str()),
            (*part, *path),
            "{body}: {error}"
        );
        assert!(
            matches!(&error.error.problem, StrictJsonProblem::WrongType(message) if message.contains("object")),
            "{body}: {error}"
        );
    }
    let lease = parse_request::<crate::api::LeaseRequest>(br#"["t","a",null]"#)
        .expect_err("a lease body in array form");
    assert_eq!(lease.error.path, "$", "{lease}");
    let reset = parse_request::<crate::api::ResetRequest>(br#"["r1"]"#)
        .expect_err("a reset body in array form");
    assert_eq!(reset.error.path, "$", "{reset}");
    let action = parse_action(br#"{"type":"drag","path":[[1,2],[3,4]],"intent":"d"}"#)
        .expect_err("drag points in array form");
    assert_eq!(action.path, "$.path[0]", "{action}");
}

/// One action of every type with every optional field set, so every wire field appears.
pub(crate) fn every_action() -> Vec<Action> {
    let modifiers = vec![Modifier::Shift];
    let intent = "i".to_string();
    vec![
        Action::Click {
            x: 1,
            y: 2,
            button: Button::Right,
            modifiers: modifiers.clone(),
            intent: intent.clone(),
        },
        Action::DoubleClick {
            x: 1,
            y: 2,
            button: Button::Middle,
            modifiers: modifiers.clone(),
            intent: intent.clone(),
        },
        Action::Drag {
            path: vec![WirePoint { x: 1, y: 2 }, WirePoint { x: 3, y: 4 }],
            button: Button::Left,
            duration_ms: 5,
            modifiers: modifiers.clone(),
            intent: intent.clone(),
        },
        Action::Move {
            x: 1,
            y: 2,
            duration_ms: 3,
            intent: intent.clone(),
        },
        Action::Scroll {
            dx: 1,
            dy: 2,
            modifiers,
            intent: intent.clone(),
        },
        Action::Key {
            keys: vec!["ctrl".into(), "s".into()],
            intent: intent.clone(),
        },
        Action::Type {
            text: "t".into(),
            intent: intent.clone(),
        },
        Action::Wait {
            milliseconds: 5,
            intent: intent.clone(),
        },
        Action::Done { intent },
    ]
}

#[test]
fn field_kinds_match_the_action_schema() {
    for action in every_action() {
        let value = serde_json::to_value(&action).expect("actions serialize");
        let object = value.as_object().expect("actions are objects");
        for (name, item) in object {
            let kind = field_kind(name).unwrap_or_else(|| panic!("no kind for field {name}"));
            let matches = match kind {
                FieldKind::Integer => item.is_i64(),
                FieldKind::String => item.is_string(),
                FieldKind::Strings => item
                    .as_array()
                    .is_some_and(|items| items.iter().all(Value::is_string)),
                FieldKind::Points => item.as_array().is_some_and(|points| {
                    points
                        .iter()
                        .all(|point| point["x"].is_i64() && point["y"].is_i64())
                }),
            };
            assert!(
                matches,
                "{name} of {} is not {kind:?}: {item}",
                action.type_name()
            );
        }
        // With a wrong-typed value in any field, the rejection names that field.
        for name in object.keys().filter(|name| name.as_str() != "type") {
            let mut broken = value.clone();
            broken[name] = json!(true);
            let error = action_from_value(&broken, "$").expect_err("a boolean is never valid");
            assert_eq!(error.path, format!("$.{name}"), "{broken}: {error}");
        }
    }
}
