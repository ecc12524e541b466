//! Request parsers: the one strict path from the bytes of an HTTP request body to a typed
//! request. No I/O; the broker's extractors call these, and the fuzz target drives them.
//!
//! Each body is (1) parsed by [`crate::strict::parse_value`] and (2) deserialized into its type
//! (`deny_unknown_fields` everywhere) with [`crate::strict::from_value`]. A rejection is a
//! [`RequestError`] whose [`RequestPart`] says whether the problem lies in the action object
//! (`$.action` and below: the broker answers `invalid_action`) or anywhere else, including a
//! body that is not JSON at all (`invalid_request`). See `docs/strict-parsing.md`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::action::Action;
use crate::api::ActionRequest;
use crate::strict::{self, StrictJsonError, StrictJsonProblem};

/// The JSON path of the action inside an action request.
pub const ACTION_PATH: &str = "$.action";

/// Which part of a request a rejection concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestPart {
    /// The body as a whole, or the request's own fields (`invalid_request`).
    Envelope,
    /// The action object of an action request (`invalid_action`).
    Action,
}

/// A refused request body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct RequestError {
    /// Where the problem lies.
    pub part: RequestPart,
    /// What and where exactly.
    pub error: StrictJsonError,
}

impl RequestError {
    fn envelope(error: StrictJsonError) -> Self {
        RequestError {
            part: RequestPart::Envelope,
            error,
        }
    }

    fn action(error: StrictJsonError) -> Self {
        RequestError {
            part: RequestPart::Action,
            error,
        }
    }
}

/// Parses a body that is a request `T` with no action inside (lease, reset).
pub fn parse_request<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, RequestError> {
    let value = strict::parse_value(bytes).map_err(RequestError::envelope)?;
    strict::from_value(&value, "$").map_err(RequestError::envelope)
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ActionEnvelope {
    request_id: String,
    expected_action_index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    screenshot_id: Option<String>,
    action: Value,
}

/// Parses the body of `POST /v1/sessions/{id}/actions`.
///
/// A problem located at `$.action` or below is [`RequestPart::Action`], except a syntax error
/// (the body is not JSON) and a duplicated `action` key, which concern the envelope.
pub fn parse_action_request(bytes: &[u8]) -> Result<ActionRequest, RequestError> {
    let value = strict::parse_value(bytes).map_err(|error| {
        if is_inside_action(&error) {
            RequestError::action(error)
        } else {
            RequestError::envelope(error)
        }
    })?;
    if let Value::Array(_) = value {
        // Refused before serde reads the array positionally (where an optional field could
        // take an element): the envelope is an object.
        return Err(RequestError::envelope(StrictJsonError::new(
            "$",
            StrictJsonProblem::WrongType("expected an object, found an array".to_string()),
        )));
    }
    let envelope: ActionEnvelope =
        strict::from_value(&value, "$").map_err(RequestError::envelope)?;
    let action = action_from_value(&envelope.action, ACTION_PATH).map_err(RequestError::action)?;
    Ok(ActionRequest {
        request_id: envelope.request_id,
        expected_action_index: envelope.expected_action_index,
        screenshot_id: envelope.screenshot_id,
        action,
    })
}

/// Parses a body that is one action object (as inside an action request).
pub fn parse_action(bytes: &[u8]) -> Result<Action, StrictJsonError> {
    action_from_value(&strict::parse_value(bytes)?, "$")
}

/// Deserializes an already strictly parsed action found at `root_path`.
///
/// `Action` is an internally tagged enum, through which serde cannot report the path of a
/// wrong-typed field; when it reports a wrong type at the action itself, the first field whose
/// JSON type differs from the schema ([`field_kind`]) is named instead.
pub fn action_from_value(value: &Value, root_path: &str) -> Result<Action, StrictJsonError> {
    strict::from_value(value, root_path).map_err(|mut error| {
        if error.path == root_path
            && matches!(error.problem, StrictJsonProblem::WrongType(_))
            && let Some(path) = first_wrong_field(value, root_path)
        {
            error.path = path;
        }
        error
    })
}

fn is_inside_action(error: &StrictJsonError) -> bool {
    if error.is_syntax() {
        return false;
    }
    match error.path.strip_prefix(ACTION_PATH) {
        Some("") => !matches!(error.problem, StrictJsonProblem::DuplicateKey(_)),
        Some(rest) => rest.starts_with('.') || rest.starts_with('['),
        None => false,
    }
}

/// The JSON type an action field has in the wire schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer (`x`, `y`, `dx`, `dy`, `duration_ms`, `milliseconds`).
    Integer,
    /// A string (`type`, `intent`, `text`, `button`).
    String,
    /// An array of strings (`modifiers`, `keys`).
    Strings,
    /// An array of `{x, y}` integer points (`path`).
    Points,
}

/// The kind of an action field, by name: every field name has one kind across all action types.
pub fn field_kind(name: &str) -> Option<FieldKind> {
    Some(match name {
        "x" | "y" | "dx" | "dy" | "duration_ms" | "milliseconds" => FieldKind::Integer,
        "type" | "intent" | "text" | "button" => FieldKind::String,
        "modifiers" | "keys" => FieldKind::Strings,
        "path" => FieldKind::Points,
        _ => return None,
    })
}

fn first_wrong_field(value: &Value, root_path: &str) -> Option<String> {
    let is_integer = |item: &Value| item.is_i64() || item.is_u64();
    for (name, item) in value.as_object()? {
        let field_path = strict::child_path(root_path, name);
        match field_kind(name) {
            None => {}
            Some(FieldKind::Integer) if !is_integer(item) => return Some(field_path),
            Some(FieldKind::String) if !item.is_string() => return Some(field_path),
            Some(FieldKind::Strings) => match item.as_array() {
                None => return Some(field_path),
                Some(items) => {
                    if let Some(item_idx) = items.iter().position(|item| !item.is_string()) {
                        return Some(format!("{field_path}[{item_idx}]"));
                    }
                }
            },
            Some(FieldKind::Points) => {
                let Some(points) = item.as_array() else {
                    return Some(field_path);
                };
                for (point_idx, point) in points.iter().enumerate() {
                    let point_path = format!("{field_path}[{point_idx}]");
                    let Some(point) = point.as_object() else {
                        return Some(point_path);
                    };
                    for (coordinate, number) in point {
                        if !is_integer(number) {
                            return Some(strict::child_path(&point_path, coordinate));
                        }
                    }
                }
            }
            Some(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests;
