//! Strict JSON for evidence: the workspace's one strict parser ([`desk_contract::strict`]) with
//! its errors as [`EvidenceError::StrictJson`], plus the typed-record discipline.
//!
//! Rejected at any depth, with the path of the offending value: duplicate object keys, the
//! constants `NaN`/`Infinity`/`-Infinity`, integers outside ±(2^53 − 1) (RFC 8785 numbers are
//! doubles, so larger integers would change when canonicalized), numbers that overflow a finite
//! double, lone UTF-16 surrogates, raw control characters in strings, trailing bytes and nesting
//! deeper than [`MAX_DEPTH`].
//!
//! Typed records ([`from_value_exact`]) must deserialize with `deny_unknown_fields` semantics
//! and then serialize back to exactly the value read: the key set is exact (an `Option` field is
//! present as `null`, never absent) and no value was coerced.
//!
//! Invariant: a [`Value`] returned by [`parse_value`] passes [`check_value`].

use desk_contract::strict as contract;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::EvidenceError;

/// Deepest nesting of arrays and objects the parser accepts.
pub const MAX_DEPTH: usize = contract::MAX_DEPTH;

/// Largest integer magnitude accepted: 2^53 − 1, the largest exactly representable in a double
/// together with all its neighbours (I-JSON, RFC 7493).
pub const MAX_SAFE_INTEGER: u64 = contract::MAX_SAFE_INTEGER;

/// Parses `bytes` as one strict JSON document.
pub fn parse_value(bytes: &[u8]) -> Result<Value, EvidenceError> {
    contract::parse_value(bytes).map_err(evidence_error)
}

/// Parses `bytes` strictly and then as the exact typed record `T` (see [`from_value_exact`]).
pub fn parse_typed<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, EvidenceError> {
    contract::parse_typed(bytes).map_err(evidence_error)
}

/// Deserializes `value` (found at `root_path`) as `T` and requires that `T` serializes back to
/// exactly `value`, so unknown, missing or coerced fields are all refused with their path.
pub fn from_value_exact<T: DeserializeOwned + Serialize>(
    value: Value,
    root_path: &str,
) -> Result<T, EvidenceError> {
    contract::from_value_exact(value, root_path).map_err(evidence_error)
}

/// Checks an in-memory value for what [`parse_value`] would refuse: integers outside
/// ±(2^53 − 1) and non-finite numbers.
pub fn check_value(value: &Value) -> Result<(), EvidenceError> {
    contract::check_value(value).map_err(evidence_error)
}

fn evidence_error(error: desk_contract::StrictJsonError) -> EvidenceError {
    EvidenceError::strict(error.path, error.problem)
}

#[cfg(test)]
mod tests;
