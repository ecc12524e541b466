//! Strict JSON: the workspace's one parser that turns bytes into a [`serde_json::Value`] and
//! refuses what neither a request reader nor a signed-evidence reader may accept silently, plus
//! typed deserialization that names the offending path.
//!
//! Rejected at any depth, with the path of the offending value: invalid UTF-8, duplicate object
//! keys, the constants `NaN`/`Infinity`/`-Infinity`, integers outside ±(2^53 − 1) (I-JSON,
//! RFC 7493: larger integers do not survive a double, and RFC 8785 numbers are doubles), numbers
//! that overflow a finite double (`1e999`), lone UTF-16 surrogates, raw control characters in
//! strings, leading zeros, trailing bytes, an empty document and nesting deeper than
//! [`MAX_DEPTH`].
//!
//! Typed values: [`from_value`] deserializes with the type's own rules (`deny_unknown_fields`
//! on every request type) and names the path of a wrong type, unknown or missing field;
//! [`from_value_exact`] additionally requires that the typed value serializes back to exactly
//! the value read (the evidence records' discipline).
//!
//! Errors never echo large input: tokens, keys, paths and serde messages are clipped by [`clip`].
//!
//! Invariant: a [`Value`] returned by [`parse_value`] passes [`check_value`].

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

pub use crate::error::{StrictJsonError, StrictJsonProblem};

mod limits;
mod parser;

use limits::clip_path;
pub use limits::{MAX_DEPTH, MAX_QUOTED_CHARS, MAX_SAFE_INTEGER, child_path, clip};

/// Parses `bytes` as one strict JSON document.
pub fn parse_value(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    parser::parse(bytes)
}

/// Parses `bytes` strictly and then as the exact typed record `T` (see [`from_value_exact`]).
pub fn parse_typed<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, StrictJsonError> {
    from_value_exact(parse_value(bytes)?, "$")
}

/// Deserializes `value` (found at `root_path`) as `T`, naming the path of the first problem:
/// a wrong type, an unknown field (under `deny_unknown_fields`) or a missing field.
///
/// Objects are objects: serde's derived struct deserializers also accept a struct in array
/// form (`[1, 2]` for `{"x": 1, "y": 2}`), which would bypass unknown-field refusal. Wherever
/// `T` serializes back to an object, `value` must hold an object at that path, at any depth;
/// otherwise the path is named as a wrong type. Checked here once, for every typed read.
pub fn from_value<T: DeserializeOwned + Serialize>(
    value: &Value,
    root_path: &str,
) -> Result<T, StrictJsonError> {
    let typed: T = deserialize_at(value, root_path)?;
    let round_trip = serde_json::to_value(&typed).map_err(|error| {
        StrictJsonError::new(
            root_path,
            StrictJsonProblem::NotExact(clip(&error.to_string())),
        )
    })?;
    if let Some(path) = first_array_for_object(value, &round_trip, root_path) {
        return Err(StrictJsonError::new(
            clip_path(&path),
            StrictJsonProblem::WrongType("expected an object, found an array".to_string()),
        ));
    }
    Ok(typed)
}

/// The first path where `read` holds an array and `typed` (the same value read back through
/// its type) an object.
fn first_array_for_object(read: &Value, typed: &Value, path: &str) -> Option<String> {
    match (read, typed) {
        (Value::Array(_), Value::Object(_)) => Some(path.to_string()),
        (Value::Array(read_items), Value::Array(typed_items)) => {
            read_items.iter().zip(typed_items).enumerate().find_map(
                |(item_idx, (read_item, typed_item))| {
                    first_array_for_object(read_item, typed_item, &format!("{path}[{item_idx}]"))
                },
            )
        }
        (Value::Object(read_map), Value::Object(typed_map)) => {
            read_map.iter().find_map(|(key, read_item)| {
                let typed_item = typed_map.get(key)?;
                first_array_for_object(read_item, typed_item, &child_path(path, key))
            })
        }
        _ => None,
    }
}

fn deserialize_at<T: DeserializeOwned>(
    value: &Value,
    root_path: &str,
) -> Result<T, StrictJsonError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = join_serde_path(root_path, &error.path().to_string());
        let message = error.inner().to_string();
        let problem = if let Some(rest) = message.strip_prefix("unknown field ") {
            StrictJsonProblem::UnknownField(clip(&first_quoted(rest)))
        } else if let Some(rest) = message.strip_prefix("missing field ") {
            StrictJsonProblem::MissingField(clip(&first_quoted(rest)))
        } else {
            StrictJsonProblem::WrongType(clip(&message))
        };
        StrictJsonError::new(clip_path(&path), problem)
    })
}

/// Deserializes `value` (found at `root_path`) as `T` and requires that `T` serializes back to
/// exactly `value`, so unknown, missing or coerced fields are all refused with their path.
pub fn from_value_exact<T: DeserializeOwned + Serialize>(
    value: Value,
    root_path: &str,
) -> Result<T, StrictJsonError> {
    let typed: T = deserialize_at(&value, root_path)?;
    let round_trip = serde_json::to_value(&typed).map_err(|error| {
        StrictJsonError::new(
            root_path,
            StrictJsonProblem::NotExact(clip(&error.to_string())),
        )
    })?;
    if let Some((path, message)) = first_difference(&value, &round_trip, root_path) {
        return Err(StrictJsonError::new(
            clip_path(&path),
            StrictJsonProblem::NotExact(clip(&message)),
        ));
    }
    Ok(typed)
}

/// Checks an in-memory value for what [`parse_value`] would refuse: integers outside
/// ±(2^53 − 1) and non-finite numbers.
pub fn check_value(value: &Value) -> Result<(), StrictJsonError> {
    check_value_at(value, "$")
}

fn check_value_at(value: &Value, path: &str) -> Result<(), StrictJsonError> {
    match value {
        Value::Number(number) => check_number(number, path),
        Value::Array(items) => {
            for (item_idx, item) in items.iter().enumerate() {
                check_value_at(item, &format!("{path}[{item_idx}]"))?;
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                check_value_at(item, &child_path(path, key))?;
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

fn check_number(number: &Number, path: &str) -> Result<(), StrictJsonError> {
    let problem = if let Some(unsigned) = number.as_u64() {
        (unsigned > MAX_SAFE_INTEGER)
            .then(|| StrictJsonProblem::IntegerOutOfRange(unsigned.to_string()))
    } else if let Some(signed) = number.as_i64() {
        (signed.unsigned_abs() > MAX_SAFE_INTEGER)
            .then(|| StrictJsonProblem::IntegerOutOfRange(signed.to_string()))
    } else {
        (!number.as_f64().is_some_and(f64::is_finite))
            .then(|| StrictJsonProblem::NonFiniteNumber(clip(&number.to_string())))
    };
    match problem {
        Some(problem) => Err(StrictJsonError::new(clip_path(path), problem)),
        None => Ok(()),
    }
}

fn join_serde_path(root: &str, serde_path: &str) -> String {
    if serde_path == "." || serde_path.is_empty() {
        root.to_string()
    } else if serde_path.starts_with('[') {
        format!("{root}{serde_path}")
    } else {
        format!("{root}.{serde_path}")
    }
}

fn first_quoted(text: &str) -> String {
    let trimmed = text.trim_start_matches('`');
    trimmed.split('`').next().unwrap_or(trimmed).to_string()
}

fn first_difference(read: &Value, typed: &Value, path: &str) -> Option<(String, String)> {
    match (read, typed) {
        (Value::Object(read_map), Value::Object(typed_map)) => {
            for key in read_map.keys() {
                if !typed_map.contains_key(key) {
                    return Some((child_path(path, key), format!("unknown key {key:?}")));
                }
            }
            for (key, typed_item) in typed_map {
                match read_map.get(key) {
                    None => {
                        return Some((child_path(path, key), format!("missing key {key:?}")));
                    }
                    Some(read_item) => {
                        if let Some(found) =
                            first_difference(read_item, typed_item, &child_path(path, key))
                        {
                            return Some(found);
                        }
                    }
                }
            }
            None
        }
        (Value::Array(read_items), Value::Array(typed_items)) => {
            if read_items.len() != typed_items.len() {
                return Some((path.to_string(), "array length differs".to_string()));
            }
            read_items.iter().zip(typed_items).enumerate().find_map(
                |(item_idx, (read_item, typed_item))| {
                    first_difference(read_item, typed_item, &format!("{path}[{item_idx}]"))
                },
            )
        }
        _ if read == typed => None,
        _ => Some((
            path.to_string(),
            format!("value {read} reads back as {typed}"),
        )),
    }
}

#[cfg(test)]
mod tests;
