//! The optional `approvals` section (issue 29 item 3, the containment spec's G004): which
//! controls of the app are high-risk, who may approve one exact action on one, and how long an
//! approval lives.
//!
//! ```yaml
//! approvals:
//!   approver_id: release-approver
//!   approver_public_key: "<32-byte Ed25519 public key, standard base64>"
//!   receipt_ttl_seconds: 120
//!   high_risk_targets:
//!     - {role: push button, name_pattern: "^(delete|erase)\\b"}
//! ```
//!
//! A target is an AT-SPI role (exact, compared case-insensitively) and a name pattern compiled
//! as the screenshot gate compiles its patterns (case-insensitive, size-bounded, never matching
//! the empty name): the lint here and [`Approvals`] use the one compiler. A policy without the
//! section has no high-risk target (the built-in policy has none) and keeps its digest.
//!
//! The lint of the section is here, beside its typed form, so that `lint.rs` only calls it.

use std::time::Duration;

use desk_evidence::VerifyingKey;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::rules::{Rule, Violation, kind};
use crate::yaml::join;

/// Most high-risk targets one policy may list.
pub const MAX_TARGETS: usize = 64;
/// Longest receipt lifetime, in seconds.
pub const MAX_RECEIPT_TTL_SECONDS: i64 = 3600;

const KEYS: &[&str] = &[
    "approver_id",
    "approver_public_key",
    "receipt_ttl_seconds",
    "high_risk_targets",
];
const TARGET_KEYS: &[&str] = &["role", "name_pattern"];

/// `approvals` as signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalsSection {
    approver_id: String,
    approver_public_key: String,
    receipt_ttl_seconds: u32,
    high_risk_targets: Vec<TargetSection>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetSection {
    role: String,
    name_pattern: String,
}

/// One high-risk target, compiled.
#[derive(Debug, Clone)]
pub struct HighRiskTarget {
    /// The AT-SPI role, lowercase (`push button`).
    pub role: String,
    /// The name pattern as written in the policy.
    pub name_pattern: String,
    name: Regex,
}

impl HighRiskTarget {
    /// Whether an accessible of `role` named `name` is this target.
    pub fn matches(&self, role: &str, name: &str) -> bool {
        role.eq_ignore_ascii_case(&self.role) && self.name.is_match(name)
    }
}

/// The policy's approvals: the approver and the high-risk targets, compiled.
#[derive(Debug, Clone)]
pub struct Approvals {
    /// The approver credential's identity (its `sub`).
    pub approver_id: String,
    /// The key the approver's credentials are signed with.
    pub approver_key: VerifyingKey,
    /// How long a receipt lives.
    pub receipt_ttl: Duration,
    /// The high-risk targets, in policy order.
    pub targets: Vec<HighRiskTarget>,
}

impl Approvals {
    /// The first target an accessible of `role` named `name` is, if any.
    pub fn high_risk(&self, role: &str, name: &str) -> Option<&HighRiskTarget> {
        self.targets
            .iter()
            .find(|target| target.matches(role, name))
    }
}

impl ApprovalsSection {
    /// The compiled form. The lint accepted the section, so this fails only if the two
    /// disagree; then the message says what.
    pub(crate) fn compile(&self) -> Result<Approvals, String> {
        let approver_key = VerifyingKey::from_base64(&self.approver_public_key)
            .map_err(|error| format!("approvals.approver_public_key: {error}"))?;
        let mut targets = Vec::with_capacity(self.high_risk_targets.len());
        for (idx, target) in self.high_risk_targets.iter().enumerate() {
            let name = desk_gate::compile_pattern(&target.name_pattern).map_err(|problem| {
                format!("approvals.high_risk_targets[{idx}].name_pattern {problem}")
            })?;
            targets.push(HighRiskTarget {
                role: target.role.to_ascii_lowercase(),
                name_pattern: target.name_pattern.clone(),
                name,
            });
        }
        Ok(Approvals {
            approver_id: self.approver_id.clone(),
            approver_key,
            receipt_ttl: Duration::from_secs(u64::from(self.receipt_ttl_seconds)),
            targets,
        })
    }
}

/// `[a-z0-9][a-z0-9._-]{0,63}`: an approver id, a role word.
fn is_identity(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(byte))
}

/// An AT-SPI role name: 1 to 64 characters of `[A-Za-z ]`, not starting or ending with a space.
fn is_role(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphabetic() || byte == b' ')
}

/// The violations of `approvals` (absent: none). Shapes (unknown or missing keys, types) are
/// reported with the general rules, the section's own checks with POL-11x.
pub(crate) fn lint(value: Option<&Value>) -> Vec<Violation> {
    let mut found = Vec::new();
    let Some(value) = value else {
        return found;
    };
    let path = "approvals";
    let Some(section) = object(&mut found, value, path, KEYS) else {
        return found;
    };
    if let Some(id) = string(&mut found, section, path, "approver_id")
        && !is_identity(id)
    {
        found.push(Violation::new(
            Rule::ApproverInvalid,
            "approvals.approver_id",
            format!("{id:?} is not [a-z0-9][a-z0-9._-]{{0,63}}"),
        ));
    }
    if let Some(key) = string(&mut found, section, path, "approver_public_key")
        && let Err(error) = VerifyingKey::from_base64(key)
    {
        found.push(Violation::new(
            Rule::ApproverInvalid,
            "approvals.approver_public_key",
            format!("not an Ed25519 public key in standard base64: {error}"),
        ));
    }
    match section.get("receipt_ttl_seconds") {
        Some(Value::Number(number)) if number.is_i64() || number.is_u64() => {
            let ttl = number.as_i64().unwrap_or(i64::MAX);
            if !(1..=MAX_RECEIPT_TTL_SECONDS).contains(&ttl) {
                found.push(Violation::new(
                    Rule::ApprovalTtlRange,
                    "approvals.receipt_ttl_seconds",
                    format!("{ttl} is outside 1..={MAX_RECEIPT_TTL_SECONDS}"),
                ));
            }
        }
        Some(other) => found.push(wrong_type(
            "approvals.receipt_ttl_seconds",
            "an integer",
            other,
        )),
        None => {}
    }
    targets(&mut found, section.get("high_risk_targets"));
    found
}

fn targets(found: &mut Vec<Violation>, value: Option<&Value>) {
    let path = "approvals.high_risk_targets";
    let items = match value {
        None => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            found.push(wrong_type(path, "a list", other));
            return;
        }
    };
    if items.is_empty() || items.len() > MAX_TARGETS {
        found.push(Violation::new(
            Rule::ApprovalTargetsCount,
            path,
            format!("{} targets: list 1 to {MAX_TARGETS}", items.len()),
        ));
    }
    let mut seen = Vec::new();
    for (idx, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{idx}]");
        let Some(target) = object(found, item, &item_path, TARGET_KEYS) else {
            continue;
        };
        let role = string(found, target, &item_path, "role");
        if let Some(role) = role
            && !is_role(role)
        {
            found.push(Violation::new(
                Rule::ApprovalTargetInvalid,
                &join(&item_path, "role"),
                format!("{role:?} is not an AT-SPI role name (1 to 64 letters and spaces)"),
            ));
        }
        let pattern = string(found, target, &item_path, "name_pattern");
        if let Some(pattern) = pattern
            && let Err(problem) = desk_gate::compile_pattern(pattern)
        {
            found.push(Violation::new(
                Rule::ApprovalTargetInvalid,
                &join(&item_path, "name_pattern"),
                format!("{pattern:?} {problem}"),
            ));
        }
        if let (Some(role), Some(pattern)) = (role, pattern) {
            let key = (role.to_ascii_lowercase(), pattern.to_string());
            if seen.contains(&key) {
                found.push(Violation::new(
                    Rule::ApprovalTargetDuplicate,
                    &item_path,
                    format!("role {role:?} with pattern {pattern:?} is listed twice"),
                ));
            }
            seen.push(key);
        }
    }
}

fn wrong_type(path: &str, expected: &str, value: &Value) -> Violation {
    Violation::new(
        Rule::WrongType,
        path,
        format!("expected {expected}, found {}", kind(value)),
    )
}

/// `value` as a mapping with exactly `keys` (each unknown and missing key reported).
fn object<'a>(
    found: &mut Vec<Violation>,
    value: &'a Value,
    path: &str,
    keys: &[&str],
) -> Option<&'a Map<String, Value>> {
    let Value::Object(map) = value else {
        found.push(wrong_type(path, "a mapping", value));
        return None;
    };
    for key in map.keys() {
        if !keys.contains(&key.as_str()) {
            found.push(Violation::new(
                Rule::UnknownKey,
                &join(path, key),
                format!("unknown key {key:?}"),
            ));
        }
    }
    for key in keys {
        if !map.contains_key(*key) {
            found.push(Violation::new(
                Rule::MissingKey,
                &join(path, key),
                format!("missing key {key:?}"),
            ));
        }
    }
    Some(map)
}

fn string<'a>(
    found: &mut Vec<Violation>,
    map: &'a Map<String, Value>,
    path: &str,
    key: &str,
) -> Option<&'a str> {
    match map.get(key)? {
        Value::String(text) => Some(text),
        other => {
            found.push(wrong_type(&join(path, key), "a string", other));
            None
        }
    }
}

#[cfg(test)]
mod tests;
