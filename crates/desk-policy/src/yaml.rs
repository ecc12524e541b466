//! Strict YAML: turns a policy's YAML text into a [`serde_json::Value`] through saphyr-parser's
//! event stream, so every construct a reader could interpret two ways is seen and refused.
//!
//! Refused, each as its own lint violation (parsing continues past it, so one run names them
//! all): duplicate keys in any mapping, anchors, aliases, merge keys (`<<`), tags (explicit,
//! `!!str` included), more than one document, non-string keys, plain scalars that YAML 1.1
//! reads as booleans (`yes`, `no`, `on`, `off`, `y`, `n` and any case other than `true` /
//! `false`), nulls (`null`, `~`, empty values) and every number form other than a plain decimal
//! integer (`0x10`, `0o7`, `1_000`, `1e3`, `1.5`, `.inf`, `+1`, `007`).
//!
//! Scalars resolve only so: plain `true`/`false` are booleans, a plain decimal integer within
//! ±(2^53 − 1) is an integer, everything else (and every quoted or block scalar) is a string.
//! A syntax error stops the parse and is the only violation reported.
//!
//! Invariant: the value returned holds no null and no float; nesting is at most [`MAX_DEPTH`].

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

use crate::rules::{Rule, Violation};

/// Largest policy document accepted, in bytes.
pub const MAX_YAML_BYTES: usize = 64 * 1024;

/// Deepest nesting of mappings and sequences accepted.
pub const MAX_DEPTH: usize = 16;

/// What a YAML parse produced: the value (when the text was well-formed YAML) and every
/// violation met on the way.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) value: Option<Value>,
    pub(crate) violations: Vec<Violation>,
}

enum Frame {
    Mapping {
        map: Map<String, Value>,
        pending_key: Option<String>,
        /// The key of this mapping in its parent (for paths).
        path: String,
    },
    Sequence {
        items: Vec<Value>,
        path: String,
    },
}

impl Frame {
    fn path(&self) -> &str {
        match self {
            Frame::Mapping { path, .. } | Frame::Sequence { path, .. } => path,
        }
    }
}

fn at(span: &Span) -> String {
    format!("line {}", span.start.line())
}

/// Parses `text` strictly (see the module documentation).
pub(crate) fn parse(text: &str) -> Parsed {
    let mut violations = Vec::new();
    if text.len() > MAX_YAML_BYTES {
        violations.push(Violation::new(
            Rule::YamlSyntax,
            "$",
            format!("{} bytes, the limit is {MAX_YAML_BYTES}", text.len()),
        ));
        return Parsed {
            value: None,
            violations,
        };
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Value> = None;
    let mut n_documents = 0_usize;
    for item in Parser::new_from_str(text) {
        let (event, span) = match item {
            Ok(pair) => pair,
            Err(error) => {
                return Parsed {
                    value: None,
                    violations: vec![Violation::new(
                        Rule::YamlSyntax,
                        "$",
                        format!(
                            "line {} column {}: {}",
                            error.marker().line(),
                            error.marker().col() + 1,
                            error.info()
                        ),
                    )],
                };
            }
        };
        let here = stack.last().map_or("$", Frame::path).to_string();
        match event {
            Event::DocumentStart(_) => {
                n_documents += 1;
                if n_documents == 2 {
                    violations.push(Violation::new(
                        Rule::YamlMultipleDocuments,
                        "$",
                        format!("a second document starts at {}", at(&span)),
                    ));
                }
            }
            Event::Alias(_) => {
                violations.push(Violation::new(
                    Rule::YamlAnchorOrAlias,
                    &child_path(&stack, &here),
                    format!("alias at {}", at(&span)),
                ));
                // A placeholder keeps the structure; the alias is already a violation.
                push_value(
                    &mut stack,
                    &mut root,
                    Value::String(String::new()),
                    &span,
                    &mut violations,
                );
            }
            Event::Scalar(text, style, anchor, tag) => {
                let key_position = matches!(
                    stack.last(),
                    Some(Frame::Mapping {
                        pending_key: None,
                        ..
                    })
                );
                let node_path = if key_position {
                    join(&here, &text)
                } else {
                    child_path(&stack, &here)
                };
                check_node(anchor, tag.is_some(), &node_path, &span, &mut violations);
                let value = if key_position {
                    Value::String(text.to_string())
                } else {
                    resolve_scalar(&text, style, &node_path, &span, &mut violations)
                };
                push_value(&mut stack, &mut root, value, &span, &mut violations);
            }
            Event::MappingStart(anchor, ref tag) | Event::SequenceStart(anchor, ref tag) => {
                let is_mapping = matches!(event, Event::MappingStart(..));
                let path = child_path(&stack, &here);
                check_node(anchor, tag.is_some(), &path, &span, &mut violations);
                if stack.len() >= MAX_DEPTH {
                    return Parsed {
                        value: None,
                        violations: vec![Violation::new(
                            Rule::YamlSyntax,
                            &here,
                            format!("nesting deeper than {MAX_DEPTH} at {}", at(&span)),
                        )],
                    };
                }
                if let Some(Frame::Mapping {
                    pending_key: None, ..
                }) = stack.last()
                {
                    violations.push(Violation::new(
                        Rule::YamlSyntax,
                        &here,
                        format!("a mapping key must be a string, at {}", at(&span)),
                    ));
                }
                stack.push(if is_mapping {
                    Frame::Mapping {
                        map: Map::new(),
                        pending_key: None,
                        path,
                    }
                } else {
                    Frame::Sequence {
                        items: Vec::new(),
                        path,
                    }
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let value = match stack.pop() {
                    Some(Frame::Mapping { map, .. }) => Value::Object(map),
                    Some(Frame::Sequence { items, .. }) => Value::Array(items),
                    None => continue,
                };
                push_value(&mut stack, &mut root, value, &span, &mut violations);
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
    if root.is_none() {
        violations.push(Violation::new(
            Rule::YamlSyntax,
            "$",
            "the document is empty".to_string(),
        ));
    }
    Parsed {
        value: root,
        violations,
    }
}

/// The path of the node about to start below the top of `stack`.
fn child_path(stack: &[Frame], here: &str) -> String {
    match stack.last() {
        Some(Frame::Mapping {
            pending_key: Some(key),
            ..
        }) => join(here, key),
        Some(Frame::Sequence { items, .. }) => format!("{here}[{}]", items.len()),
        _ => here.to_string(),
    }
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path == "$" {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn check_node(
    anchor: usize,
    tagged: bool,
    here: &str,
    span: &Span,
    violations: &mut Vec<Violation>,
) {
    if anchor != 0 {
        violations.push(Violation::new(
            Rule::YamlAnchorOrAlias,
            here,
            format!("anchor at {}", at(span)),
        ));
    }
    if tagged {
        violations.push(Violation::new(
            Rule::YamlTag,
            here,
            format!("tag at {}", at(span)),
        ));
    }
}

/// Adds a finished node to its parent (or makes it the root).
fn push_value(
    stack: &mut [Frame],
    root: &mut Option<Value>,
    value: Value,
    span: &Span,
    violations: &mut Vec<Violation>,
) {
    match stack.last_mut() {
        None => {
            // A second document's root never replaces the first.
            if root.is_none() {
                *root = Some(value);
            }
        }
        Some(Frame::Sequence { items, .. }) => items.push(value),
        Some(Frame::Mapping {
            map,
            pending_key,
            path,
        }) => match pending_key.take() {
            None => {
                let Value::String(key) = value else {
                    return;
                };
                if key == "<<" {
                    violations.push(Violation::new(
                        Rule::YamlMergeKey,
                        path,
                        format!("merge key at {}", at(span)),
                    ));
                }
                if map.contains_key(&key) {
                    violations.push(Violation::new(
                        Rule::YamlDuplicateKey,
                        &join(path, &key),
                        format!("duplicate key {key:?} at {}", at(span)),
                    ));
                    // Keep the first value; the second is parsed and dropped.
                    *pending_key = Some(format!("\u{0}duplicate:{key}"));
                } else {
                    *pending_key = Some(key);
                }
            }
            Some(key) => {
                if !key.starts_with('\u{0}') {
                    map.insert(key, value);
                }
            }
        },
    }
}

/// The YAML 1.1 spellings of booleans other than the literal `true`/`false`.
const NON_LITERAL_BOOLEANS: &[&str] = &["y", "yes", "n", "no", "on", "off", "true", "false"];

fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    here: &str,
    span: &Span,
    violations: &mut Vec<Violation>,
) -> Value {
    if style != ScalarStyle::Plain {
        return Value::String(text.to_string());
    }
    match text {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    let lower = text.to_ascii_lowercase();
    if NON_LITERAL_BOOLEANS.contains(&lower.as_str()) {
        violations.push(Violation::new(
            Rule::YamlNonLiteralBoolean,
            here,
            format!(
                "{text:?} at {} is a boolean to some YAML readers; write true or false, or quote a string",
                at(span)
            ),
        ));
        return Value::String(text.to_string());
    }
    if matches!(lower.as_str(), "" | "~" | "null") {
        violations.push(Violation::new(
            Rule::YamlAmbiguousScalar,
            here,
            format!("null at {}: every field needs a value", at(span)),
        ));
        return Value::String(text.to_string());
    }
    if let Some(integer) = plain_integer(text) {
        return Value::Number(Number::from(integer));
    }
    if looks_numeric(&lower) {
        violations.push(Violation::new(
            Rule::YamlAmbiguousScalar,
            here,
            format!(
                "{text:?} at {} is a number form this reader does not accept; write a plain decimal integer, or quote a string",
                at(span)
            ),
        ));
    }
    Value::String(text.to_string())
}

/// A plain decimal integer without sign `+`, leading zeros or separators, within ±(2^53 − 1).
fn plain_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && digits.len() <= 16;
    if !canonical {
        return None;
    }
    let value: i64 = text.parse().ok()?;
    (value.unsigned_abs() <= desk_contract::strict::MAX_SAFE_INTEGER).then_some(value)
}

/// Whether some YAML reader would take `lower` for a number (int, float, octal, hex, infinity,
/// not-a-number, sexagesimal, with separators).
fn looks_numeric(lower: &str) -> bool {
    if matches!(
        lower,
        ".inf" | "-.inf" | "+.inf" | ".nan" | "inf" | "-inf" | "nan"
    ) {
        return true;
    }
    let body = lower
        .strip_prefix(['-', '+'])
        .unwrap_or(lower)
        .replace('_', "");
    if body.is_empty() {
        return false;
    }
    if let Some(hex) = body.strip_prefix("0x") {
        return !hex.is_empty() && hex.bytes().all(|byte| byte.is_ascii_hexdigit());
    }
    if let Some(octal) = body.strip_prefix("0o") {
        return !octal.is_empty() && octal.bytes().all(|byte| byte.is_ascii_digit());
    }
    if body
        .bytes()
        .all(|byte| byte.is_ascii_digit() || byte == b':')
    {
        return body.bytes().any(|byte| byte.is_ascii_digit());
    }
    body.parse::<f64>().is_ok()
}
