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

#[test]
fn too_deep_is_rejected() {
    let input = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    let (_, problem) = rejected(&input);
    assert_eq!(problem, StrictJsonProblem::TooDeep(MAX_DEPTH));
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(parse_value(ok.as_bytes()).is_ok());
}

#[test]
fn accepts_ordinary_json() {
    let value =
        parse_value(br#" {"a":[1,-2,3.5,true,null,"\u00e9\ud83d\ude00"],"b":9007199254740991} "#)
            .expect("valid JSON parses");
    assert_eq!(value["b"], 9_007_199_254_740_991_u64);
    assert_eq!(value["a"][5], "é😀");
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Typed {
    count: u64,
    note: Option<String>,
}

#[test]
fn typed_records_are_exact() {
    let ok: Typed = parse_typed(br#"{"count":3,"note":null}"#).expect("exact record parses");
    assert_eq!(ok.count, 3);
    let cases: &[Case] = &[
        (r#"{"count":true,"note":null}"#, "$.count", |problem| {
            matches!(problem, StrictJsonProblem::WrongType(_))
        }),
        (r#"{"count":1.5,"note":null}"#, "$.count", |problem| {
            matches!(problem, StrictJsonProblem::WrongType(_))
        }),
        (
            r#"{"count":1,"note":null,"extra":1}"#,
            "$.extra",
            |problem| matches!(problem, StrictJsonProblem::UnknownField(field) if field == "extra"),
        ),
        (r#"{"note":null}"#, "$", |problem| {
            matches!(problem, StrictJsonProblem::MissingField(_))
        }),
        (r#"{"count":1}"#, "$.note", |problem| {
            matches!(problem, StrictJsonProblem::NotExact(_))
        }),
    ];
    for (input, expected_path, is_expected) in cases {
        match parse_typed::<Typed>(input.as_bytes()) {
            Err(EvidenceError::StrictJson { path, problem }) => {
                assert_eq!(path, *expected_path, "path for {input}");
                assert!(is_expected(&problem), "problem for {input}: {problem:?}");
            }
            other => panic!("expected rejection of {input}, got {other:?}"),
        }
    }
}

#[test]
fn check_value_refuses_unsafe_integers() {
    let value = serde_json::json!({"big": u64::MAX});
    assert!(matches!(
        check_value(&value),
        Err(EvidenceError::StrictJson { path, problem: StrictJsonProblem::IntegerOutOfRange(_) }) if path == "$.big"
    ));
}
