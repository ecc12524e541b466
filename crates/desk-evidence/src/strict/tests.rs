//! Unit tests of the evidence wrapper over desk-contract's strict parser.

use super::*;
use crate::StrictJsonProblem;

/// Input, expected path, and a predicate on the expected problem.
type Case = (&'static str, &'static str, fn(&StrictJsonProblem) -> bool);

fn rejected(input: &str) -> (String, StrictJsonProblem) {
    match parse_value(input.as_bytes()) {
        Err(EvidenceError::StrictJson { path, problem }) => (path, problem),
        other => panic!("expected a strict JSON error for {input}, got {other:?}"),
    }
}

/// The parser's own rejection table lives in desk-contract; this checks that its reasons and
/// paths arrive intact as [`EvidenceError::StrictJson`].
#[test]
fn contract_rejections_keep_their_path_and_reason() {
    let table: &[Case] = &[
        (r#"{"a":{"b":[{"c":1,"c":1}]}}"#, "$.a.b[0].c", |problem| {
            matches!(problem, StrictJsonProblem::DuplicateKey(_))
        }),
        (r#"{"a":NaN}"#, "$.a", |problem| {
            matches!(problem, StrictJsonProblem::NonFiniteConstant(_))
        }),
        ("9007199254740993", "$", |problem| {
            matches!(problem, StrictJsonProblem::IntegerOutOfRange(_))
        }),
        ("{} x", "$", |problem| {
            matches!(problem, StrictJsonProblem::Syntax(_))
        }),
    ];
    for (input, expected_path, is_expected) in table {
        let (path, problem) = rejected(input);
        assert_eq!(path, *expected_path, "path for {input}");
        assert!(is_expected(&problem), "problem for {input}: {problem:?}");
    }
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Typed {
    count: u64,
}

/// The typed-record discipline itself is tested in desk-contract; here only its errors' mapping.
#[test]
fn typed_record_refusals_keep_their_path_and_reason() {
    let ok: Typed = parse_typed(br#"{"count":3}"#).expect("exact record parses");
    assert_eq!(ok.count, 3);
    assert!(matches!(
        parse_typed::<Typed>(br#"{"count":1,"extra":1}"#),
        Err(EvidenceError::StrictJson { path, problem: StrictJsonProblem::UnknownField(field) })
            if path == "$.extra" && field == "extra"
    ));
}

#[test]
fn check_value_refuses_unsafe_integers() {
    let value = serde_json::json!({"big": u64::MAX});
    assert!(matches!(
        check_value(&value),
        Err(EvidenceError::StrictJson { path, problem: StrictJsonProblem::IntegerOutOfRange(_) }) if path == "$.big"
    ));
}
