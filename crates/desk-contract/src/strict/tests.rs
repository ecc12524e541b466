//! Unit tests of the strict parser: what it rejects, the path it names, and that errors never
//! echo large input.

use super::*;

/// Input, expected path, and a predicate on the expected problem.
type Case = (&'static str, &'static str, fn(&StrictJsonProblem) -> bool);

fn rejected(input: &[u8]) -> StrictJsonError {
    match parse_value(input) {
        Err(error) => error,
        Ok(value) => panic!("expected a strict JSON error for {input:?}, got {value}"),
    }
}

fn syntax(problem: &StrictJsonProblem) -> bool {
    matches!(problem, StrictJsonProblem::Syntax(_))
}

#[test]
fn rejection_table() {
    let table: &[Case] = &[
        (r#"{"a":1,"a":2}"#, "$.a", |problem| {
            matches!(problem, StrictJsonProblem::DuplicateKey(_))
        }),
        (r#"{"a":{"b":[{"c":1,"c":1}]}}"#, "$.a.b[0].c", |problem| {
            matches!(problem, StrictJsonProblem::DuplicateKey(_))
        }),
        (r#"{"a b":1,"a b":1}"#, r#"$["a b"]"#, |problem| {
            matches!(problem, StrictJsonProblem::DuplicateKey(_))
        }),
        (r#"{"a":NaN}"#, "$.a", |problem| {
            matches!(problem, StrictJsonProblem::NonFiniteConstant(_))
        }),
        (r#"[Infinity]"#, "$[0]", |problem| {
            matches!(problem, StrictJsonProblem::NonFiniteConstant(_))
        }),
        (r#"{"x":-Infinity}"#, "$.x", |problem| {
            matches!(problem, StrictJsonProblem::NonFiniteConstant(_))
        }),
        ("9007199254740993", "$", |problem| {
            matches!(problem, StrictJsonProblem::IntegerOutOfRange(_))
        }),
        ("18446744073709551616", "$", |problem| {
            matches!(problem, StrictJsonProblem::IntegerOutOfRange(_))
        }),
        ("-9007199254740992", "$", |problem| {
            matches!(problem, StrictJsonProblem::IntegerOutOfRange(_))
        }),
        (r#"{"n":1e400}"#, "$.n", |problem| {
            matches!(problem, StrictJsonProblem::NonFiniteNumber(_))
        }),
        (r#"{"n":-1e999}"#, "$.n", |problem| {
            matches!(problem, StrictJsonProblem::NonFiniteNumber(_))
        }),
        (r#""\ud800""#, "$", syntax),
        (r#""\udc00x""#, "$", syntax),
        (r#""\ud800\u0041""#, "$", syntax),
        (r#""\x""#, "$", syntax),
        ("{} x", "$", syntax),
        ("[01]", "$", syntax),
        ("[1.]", "$[0]", syntax),
        ("[+1]", "$[0]", syntax),
        ("\"a\u{1}\"", "$", syntax),
        ("", "$", syntax),
        ("   ", "$", syntax),
        ("{\"a\":1,}", "$", syntax),
        ("[1,]", "$[1]", syntax),
        ("{'a':1}", "$", syntax),
        ("tru", "$", syntax),
        ("{\"a\" 1}", "$.a", syntax),
    ];
    for (input, expected_path, is_expected) in table {
        let error = rejected(input.as_bytes());
        assert_eq!(error.path, *expected_path, "path for {input}");
        assert!(
            is_expected(&error.problem),
            "problem for {input}: {error:?}"
        );
    }
}

#[test]
fn invalid_utf8_is_rejected() {
    for input in [&b"\"\xff\""[..], b"{\"a\":\"\xc3\"}", b"\xef\xbb\xbf{}"] {
        let error = rejected(input);
        assert!(error.is_syntax(), "{error:?}");
    }
}

#[test]
fn too_deep_is_rejected() {
    let input = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert_eq!(
        rejected(input.as_bytes()).problem,
        StrictJsonProblem::TooDeep(MAX_DEPTH)
    );
    let input = r#"{"a":"#.repeat(MAX_DEPTH + 1) + "1" + &"}".repeat(MAX_DEPTH + 1);
    assert_eq!(
        rejected(input.as_bytes()).problem,
        StrictJsonProblem::TooDeep(MAX_DEPTH)
    );
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(parse_value(ok.as_bytes()).is_ok());
    // Far deeper than the limit: refused without exhausting the stack.
    let huge = "[".repeat(1_000_000);
    assert_eq!(
        rejected(huge.as_bytes()).problem,
        StrictJsonProblem::TooDeep(MAX_DEPTH)
    );
}

#[test]
fn accepts_ordinary_json() {
    let value =
        parse_value(br#" {"a":[1,-2,3.5,true,null,"\u00e9\ud83d\ude00"],"b":9007199254740991} "#)
            .expect("valid JSON parses");
    assert_eq!(value["b"], 9_007_199_254_740_991_u64);
    assert_eq!(value["a"][5], "é😀");
    assert_eq!(parse_value(b"-0").expect("-0 parses"), 0);
    assert_eq!(
        parse_value(b"-9007199254740991").expect("min safe integer"),
        -9_007_199_254_740_991_i64
    );
}

#[test]
fn errors_never_echo_large_input() {
    let long_key = "k".repeat(10_000);
    let long_digits = "9".repeat(10_000);
    let long_text = "t".repeat(10_000);
    let inputs = [
        format!(r#"{{"{long_key}":1,"{long_key}":2}}"#),
        format!("[{long_digits}]"),
        format!("[1e{long_digits}]"),
        format!(r#"{{"{long_key}":{{"{long_key}":{{"{long_key}":NaN}}}}}}"#),
        format!(r#"["{long_text}"#),
    ];
    for input in inputs {
        let error = rejected(input.as_bytes());
        let message = error.to_string();
        assert!(message.len() < 600, "{} bytes: {message}", message.len());
    }
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
        (r#"{"count":1.0,"note":null}"#, "$.count", |problem| {
            matches!(problem, StrictJsonProblem::WrongType(_))
        }),
        (r#"{"count":-1,"note":null}"#, "$.count", |problem| {
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
            Err(error) => {
                assert_eq!(error.path, *expected_path, "path for {input}");
                assert!(
                    is_expected(&error.problem),
                    "problem for {input}: {error:?}"
                );
            }
            Ok(typed) => panic!("expected rejection of {input}, got {typed:?}"),
        }
    }
}

#[test]
fn check_value_refuses_unsafe_integers() {
    let value = serde_json::json!({"big": u64::MAX});
    let error = check_value(&value).expect_err("u64::MAX is refused");
    assert_eq!(error.path, "$.big");
    assert!(matches!(
        error.problem,
        StrictJsonProblem::IntegerOutOfRange(_)
    ));
}
