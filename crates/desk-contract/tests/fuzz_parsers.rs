//! A bounded fuzzer (proptest) over the strict JSON parser, the request parsers and the action
//! parser: random bytes, random JSON-ish token soup, and mutations of valid requests.
//!
//! Properties:
//! - nothing panics, and every result is `Ok` or a typed error whose message is short;
//! - whatever the strict parser accepts, `serde_json` accepts too, with the same value (the
//!   strict parser only ever narrows);
//! - valid requests parse to exactly what was serialized;
//! - an accepted request re-serializes and re-parses to the same value, and validates (or fails
//!   validation) the same way every time.
//!
//! CI runs [`DEFAULT_CASES`] cases per property with a fixed seed (a few seconds). Locally:
//! `DESK_FUZZ_CASES=200000 cargo test -p desk-contract --release --test fuzz_parsers`, and
//! `DESK_FUZZ_SEED=<u64>` (or `random`) to explore other inputs; a failure prints the shrunk
//! input and the seed replays it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use desk_contract::action::{Action, Button, Modifier, WirePoint};
use desk_contract::api::{ActionRequest, LeaseRequest, ResetRequest};
use desk_contract::request::{self, RequestPart};
use desk_contract::strict::{self, MAX_SAFE_INTEGER};
use desk_contract::{DisplaySize, StrictJsonError, validate_action};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// Cases per property when `DESK_FUZZ_CASES` is unset.
const DEFAULT_CASES: u32 = 10_000;

/// The seed when `DESK_FUZZ_SEED` is unset: CI runs are reproducible.
const DEFAULT_SEED: u64 = 0x5eed_f0de;

/// Longest error message any rejection may produce, in bytes.
const MAX_MESSAGE_BYTES: usize = 600;

const DISPLAY: DisplaySize = DisplaySize {
    width: 1280,
    height: 800,
};

fn config() -> Config {
    let cases = std::env::var("DESK_FUZZ_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let rng_seed = match std::env::var("DESK_FUZZ_SEED").as_deref() {
        Ok("random") => RngSeed::Random,
        Ok(text) => text.parse().map(RngSeed::Fixed).unwrap_or(RngSeed::Random),
        Err(_) => RngSeed::Fixed(DEFAULT_SEED),
    };
    Config {
        cases,
        rng_seed,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Fragments that make random input look like (broken) JSON requests.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    " ",
    "\n",
    "\\",
    "\"type\"",
    "\"click\"",
    "\"drag\"",
    "\"key\"",
    "\"type\":\"type\"",
    "\"x\"",
    "\"y\"",
    "\"path\"",
    "\"keys\"",
    "\"intent\"",
    "\"text\"",
    "\"modifiers\"",
    "\"button\"",
    "\"request_id\"",
    "\"expected_action_index\"",
    "\"action\"",
    "\"task_id\"",
    "\"attempt_id\"",
    "\"profile\"",
    "0",
    "1",
    "-1",
    "-0",
    "01",
    "1.5",
    "1.0",
    "1e2",
    "1E-2",
    "1e999",
    "-1e999",
    "9007199254740991",
    "9007199254740993",
    "18446744073709551616",
    "NaN",
    "Infinity",
    "-Infinity",
    "true",
    "false",
    "null",
    "tru",
    "\"\\ud800\"",
    "\"\\udc00\"",
    "\"\\ud83d\\ude00\"",
    "\"\\u00e9\"",
    "\"\\x\"",
    "\"a\"",
    "\"é\"",
    "\u{0}",
    "\u{7f}",
    "\u{feff}",
    "\"\\\"\"",
];

fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..48)
        .prop_map(|tokens| tokens.concat().into_bytes())
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{1,12}".prop_map(|text| text.to_string()),
        1 => prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
    ]
}

fn coordinate() -> impl Strategy<Value = i64> {
    let safe = i64::try_from(MAX_SAFE_INTEGER).unwrap();
    prop_oneof![8 => -20_i64..1_400, 1 => -safe..=safe]
}

fn button() -> impl Strategy<Value = Button> {
    prop::sample::select(vec![Button::Left, Button::Right, Button::Middle])
}

fn modifiers() -> impl Strategy<Value = Vec<Modifier>> {
    prop::collection::vec(
        prop::sample::select(vec![Modifier::Shift, Modifier::Ctrl, Modifier::Alt]),
        0..3,
    )
}

fn action() -> impl Strategy<Value = Action> {
    let point = (coordinate(), coordinate()).prop_map(|(x, y)| WirePoint { x, y });
    let key_names = prop::sample::select(vec!["ctrl", "s", "alt", "f4", "Return", "a", "super"]);
    prop_oneof![
        (coordinate(), coordinate(), button(), modifiers(), text()).prop_map(
            |(x, y, button, modifiers, intent)| Action::Click {
                x,
                y,
                button,
                modifiers,
                intent
            }
        ),
        (coordinate(), coordinate(), button(), modifiers(), text()).prop_map(
            |(x, y, button, modifiers, intent)| Action::DoubleClick {
                x,
                y,
                button,
                modifiers,
                intent
            }
        ),
        (
            prop::collection::vec(point, 0..5),
            button(),
            coordinate(),
            modifiers(),
            text()
        )
            .prop_map(|(path, button, duration_ms, modifiers, intent)| {
                Action::Drag {
                    path,
                    button,
                    duration_ms,
                    modifiers,
                    intent,
                }
            }),
        (coordinate(), coordinate(), coordinate(), text()).prop_map(
            |(x, y, duration_ms, intent)| Action::Move {
                x,
                y,
                duration_ms,
                intent
            }
        ),
        (coordinate(), coordinate(), modifiers(), text()).prop_map(
            |(dx, dy, modifiers, intent)| Action::Scroll {
                dx,
                dy,
                modifiers,
                intent
            }
        ),
        (prop::collection::vec(key_names, 0..3), text()).prop_map(|(keys, intent)| Action::Key {
            keys: keys.into_iter().map(str::to_string).collect(),
            intent
        }),
        (text(), text()).prop_map(|(text, intent)| Action::Type { text, intent }),
        (coordinate(), text()).prop_map(|(milliseconds, intent)| Action::Wait {
            milliseconds,
            intent
        }),
        text().prop_map(|intent| Action::Done { intent }),
    ]
}

fn action_request() -> impl Strategy<Value = ActionRequest> {
    ("[a-z0-9-]{1,12}", 0..=MAX_SAFE_INTEGER, action()).prop_map(
        |(request_id, expected_action_index, action)| ActionRequest {
            request_id,
            expected_action_index,
            screenshot_id: None,
            action,
        },
    )
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, byte: u8 },
    Insert { at: usize, token: &'static str },
    Delete { at: usize, len: usize },
    Duplicate { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Flip { at, byte }),
        (any::<usize>(), prop::sample::select(TOKENS))
            .prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), 1_usize..8).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 1_usize..24).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        let len = bytes.len();
        match *mutation {
            Mutation::Flip { at, byte } if len > 0 => bytes[at % len] = byte,
            Mutation::Insert { at, token } => {
                let at = at % (len + 1);
                bytes.splice(at..at, token.bytes());
            }
            Mutation::Delete { at, len: n } if len > 0 => {
                let at = at % len;
                bytes.drain(at..(at + n).min(len));
            }
            Mutation::Duplicate { at, len: n } if len > 0 => {
                let at = at % len;
                let copy = bytes[at..(at + n).min(len)].to_vec();
                bytes.splice(at..at, copy);
            }
            _ => {}
        }
    }
    bytes
}

fn check_error(error: &StrictJsonError) {
    let message = error.to_string();
    assert!(
        message.len() <= MAX_MESSAGE_BYTES,
        "{} bytes: {message}",
        message.len()
    );
    assert!(error.path.starts_with('$'), "{error:?}");
}

/// JSON equality with numbers compared by value: serde_json reads `-0` as the float `-0.0` (the
/// strict parser as the integer 0), and without its `float_roundtrip` feature it may round a
/// long decimal one ulp away from the correctly rounded double the strict parser reads.
fn same_json(strict: &serde_json::Value, lenient: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (strict, lenient) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            a == b || (a - b).abs() <= a.abs().max(b.abs()) * 4.0 * f64::EPSILON
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same_json(a, b)))
        }
        _ => strict == lenient,
    }
}

/// Runs every parser over `bytes` and checks the properties that hold for any input.
fn check_all_parsers(bytes: &[u8]) {
    match strict::parse_value(bytes) {
        Ok(value) => {
            let lenient: serde_json::Value = serde_json::from_slice(bytes)
                .expect("serde_json accepts what the strict parser accepts");
            assert!(same_json(&value, &lenient), "{value} != {lenient}");
            strict::check_value(&value).expect("parsed values pass check_value");
        }
        Err(error) => check_error(&error),
    }
    match request::parse_action_request(bytes) {
        Ok(parsed) => check_accepted(&parsed),
        Err(error) => {
            check_error(&error.error);
            if error.part == RequestPart::Action {
                assert!(error.error.path.starts_with("$.action"), "{error:?}");
            }
        }
    }
    match request::parse_action(bytes) {
        Ok(action) => check_accepted_action(&action),
        Err(error) => check_error(&error),
    }
    if let Err(error) = request::parse_request::<LeaseRequest>(bytes) {
        check_error(&error.error);
    }
    if let Err(error) = request::parse_request::<ResetRequest>(bytes) {
        check_error(&error.error);
    }
}

fn check_accepted_action(action: &Action) {
    let bytes = serde_json::to_vec(action).unwrap();
    assert_eq!(&request::parse_action(&bytes).unwrap(), action);
    assert_eq!(
        validate_action(action, DISPLAY),
        validate_action(action, DISPLAY)
    );
}

fn check_accepted(parsed: &ActionRequest) {
    let bytes = serde_json::to_vec(parsed).unwrap();
    let reparsed = request::parse_action_request(&bytes).expect("re-serialized requests parse");
    assert_eq!(&reparsed, parsed);
    let lenient: ActionRequest = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(&lenient, parsed);
    check_accepted_action(&parsed.action);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_all_parsers(&bytes);
    }

    #[test]
    fn json_token_soup(bytes in jsonish()) {
        check_all_parsers(&bytes);
    }

    #[test]
    fn valid_requests_parse_exactly(original in action_request()) {
        let bytes = serde_json::to_vec(&original).unwrap();
        let parsed = request::parse_action_request(&bytes).expect("valid requests parse");
        prop_assert_eq!(&parsed, &original);
        check_accepted(&parsed);
    }

    #[test]
    fn mutated_requests(
        original in action_request(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let bytes = mutate(serde_json::to_vec(&original).unwrap(), &mutations);
        check_all_parsers(&bytes);
    }
}
