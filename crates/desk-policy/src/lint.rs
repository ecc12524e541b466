//! The lint: every rule of [`crate::Rule`] checked over a policy document already read into a
//! JSON value (from YAML by `yaml.rs`, or from a signed envelope's payload), accumulating every
//! violation instead of stopping at the first.
//!
//! Invariant: a value with no violation deserializes exactly as [`crate::Policy`].
//!
//! Over 400 lines on purpose: every rule's check sits here side by side, in the order of the
//! rule table, so the table and its checks read as one.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::rules::{Rule, SCHEMA_VERSION, Violation, kind, parse_utc};
use crate::yaml::join;

const ROOT_KEYS: &[&str] = &[
    "schema_version",
    "policy_version",
    "workspace",
    "apps",
    "writable_directories",
    "network",
    "clipboard",
    "limits",
    "validity",
    "retention",
    "screenshot_gate",
    "approvals",
];

/// Root keys a document may leave out: a policy without `retention` deletes frames at release
/// (as every policy did before the key existed, so their digests are unchanged).
/// Likewise a policy without `screenshot_gate` has no gate.
/// And a policy without `approvals` has no high-risk target.
const OPTIONAL_ROOT_KEYS: &[&str] = &["retention", "screenshot_gate", "approvals"];

/// Keys of `screenshot_gate`.
const GATE_KEYS: &[&str] = &[
    "prefilter_patterns",
    "allow_max_permille",
    "block_min_permille",
    "max_frame_bytes",
    "max_pixels",
    "ocr_timeout_ms",
];

/// The lint of one document value.
pub(crate) fn lint_value(value: &Value) -> Vec<Violation> {
    let mut lint = Lint::default();
    let Some(root) = lint.object_with_optional(value, "$", ROOT_KEYS, OPTIONAL_ROOT_KEYS) else {
        return lint.violations;
    };
    if let Some(version) = lint.string(root, "$", "schema_version")
        && version != SCHEMA_VERSION
    {
        lint.push(
            Rule::SchemaVersion,
            "schema_version",
            format!("{version:?}, expected {SCHEMA_VERSION:?}"),
        );
    }
    if let Some(version) = lint.string(root, "$", "policy_version") {
        let valid = !version.is_empty()
            && version.len() <= 64
            && version
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"._:-".contains(&byte));
        if !valid {
            lint.push(
                Rule::PolicyVersion,
                "policy_version",
                format!("{version:?} is not 1 to 64 characters of [A-Za-z0-9._:-]"),
            );
        }
    }
    lint.workspace(root);
    lint.apps(root);
    lint.writable(root);
    lint.network(root);
    if let Some(mode) = lint.string(root, "$", "clipboard")
        && !matches!(mode, "none" | "read" | "read_write")
    {
        lint.push(
            Rule::ClipboardModeInvalid,
            "clipboard",
            format!("{mode:?}, expected none, read or read_write"),
        );
    }
    lint.limits(root);
    lint.validity(root);
    lint.retention(root);
    lint.screenshot_gate(root);
    lint.violations
        .extend(crate::approvals::lint(root.get("approvals")));
    lint.violations
}

#[derive(Default)]
struct Lint {
    violations: Vec<Violation>,
}

impl Lint {
    fn push(&mut self, rule: Rule, path: &str, message: String) {
        self.violations.push(Violation::new(rule, path, message));
    }

    /// `value` as an object with exactly `keys`: unknown and missing keys are each reported.
    fn object<'a>(
        &mut self,
        value: &'a Value,
        path: &str,
        keys: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        self.object_with_optional(value, path, keys, &[])
    }

    /// [`Lint::object`], where the keys in `optional` may be missing.
    fn object_with_optional<'a>(
        &mut self,
        value: &'a Value,
        path: &str,
        keys: &[&str],
        optional: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        let Value::Object(map) = value else {
            self.push(
                Rule::WrongType,
                path,
                format!("expected a mapping, found {}", kind(value)),
            );
            return None;
        };
        for key in map.keys() {
            if !keys.contains(&key.as_str()) {
                self.push(
                    Rule::UnknownKey,
                    &join(path, key),
                    format!("unknown key {key:?}"),
                );
            }
        }
        for key in keys {
            if !map.contains_key(*key) && !optional.contains(key) {
                self.push(
                    Rule::MissingKey,
                    &join(path, key),
                    format!("missing key {key:?}"),
                );
            }
        }
        Some(map)
    }

    fn field<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        path: &str,
        key: &str,
        expected: &str,
        accept: fn(&Value) -> bool,
    ) -> Option<&'a Value> {
        let value = map.get(key)?;
        if accept(value) {
            Some(value)
        } else {
            self.push(
                Rule::WrongType,
                &join(path, key),
                format!("expected {expected}, found {}", kind(value)),
            );
            None
        }
    }

    fn string<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<&'a str> {
        self.field(map, path, key, "a string", Value::is_string)?
            .as_str()
    }

    fn boolean(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Option<bool> {
        self.field(map, path, key, "true or false", Value::is_boolean)?
            .as_bool()
    }

    fn integer(&mut self, map: &Map<String, Value>, path: &str, key: &str) -> Option<i64> {
        let accept = |value: &Value| value.is_i64() || value.is_u64();
        let value = self.field(map, path, key, "an integer", accept)?;
        Some(value.as_i64().unwrap_or(i64::MAX))
    }

    /// A list of strings; items of another type are each reported and skipped.
    fn strings<'a>(
        &mut self,
        map: &'a Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<Vec<(String, &'a str)>> {
        let items = self
            .field(map, path, key, "a list", Value::is_array)?
            .as_array()?;
        let list_path = join(path, key);
        let mut strings = Vec::new();
        for (item_idx, item) in items.iter().enumerate() {
            let item_path = format!("{list_path}[{item_idx}]");
            match item.as_str() {
                Some(text) => strings.push((item_path, text)),
                None => self.push(
                    Rule::WrongType,
                    &item_path,
                    format!("expected a string, found {}", kind(item)),
                ),
            }
        }
        Some(strings)
    }

    /// Reports every item seen before with `rule`.
    fn duplicates(&mut self, items: &[(String, &str)], rule: Rule) {
        let mut seen = BTreeSet::new();
        for (path, item) in items {
            if !seen.insert(*item) {
                self.push(rule, path, format!("{item:?} is listed twice"));
            }
        }
    }

    fn workspace(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("workspace") else {
            return;
        };
        let Some(map) = self.object(value, "workspace", &["disposable", "logged_out"]) else {
            return;
        };
        if self.boolean(map, "workspace", "disposable") == Some(false) {
            self.push(
                Rule::DisposableRequired,
                "workspace.disposable",
                "every task gets a fresh workspace: must be true".to_string(),
            );
        }
        if self.boolean(map, "workspace", "logged_out") == Some(false) {
            self.push(
                Rule::LoggedOutRequired,
                "workspace.logged_out",
                "no inherited sessions or credentials: must be true".to_string(),
            );
        }
    }

    fn apps(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("apps") else {
            return;
        };
        let Some(map) = self.object(value, "apps", &["allowed_profiles"]) else {
            return;
        };
        let Some(profiles) = self.strings(map, "apps", "allowed_profiles") else {
            return;
        };
        if map
            .get("allowed_profiles")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            self.push(
                Rule::AppsEmpty,
                "apps.allowed_profiles",
                "no profile is allowed: list at least one".to_string(),
            );
        }
        for (path, name) in &profiles {
            if !is_app_name(name) {
                self.push(
                    Rule::AppNameInvalid,
                    path,
                    format!("{name:?} is not [a-z0-9][a-z0-9._-]{{0,63}}"),
                );
            }
        }
        self.duplicates(&profiles, Rule::AppDuplicate);
    }

    fn writable(&mut self, root: &Map<String, Value>) {
        let Some(paths) = self.strings(root, "$", "writable_directories") else {
            return;
        };
        if root
            .get("writable_directories")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            self.push(
                Rule::WritableEmpty,
                "writable_directories",
                "list at least the attempt directory: attempt".to_string(),
            );
        }
        for (path, directory) in &paths {
            let unsafe_part = directory.chars().any(|c| c == '\\' || c.is_control())
                || directory
                    .trim_start_matches('/')
                    .split('/')
                    .any(|part| matches!(part, "" | "." | ".." | "~"));
            if unsafe_part {
                self.push(
                    Rule::PathUnsafe,
                    path,
                    format!("{directory:?} has an empty, ., .. or ~ component, a backslash or a control character"),
                );
            }
            if !(*directory == "attempt" || directory.starts_with("attempt/")) {
                self.push(
                    Rule::WritableOutsideAttempt,
                    path,
                    format!("{directory:?} is not attempt or below it (attempt/...)"),
                );
            }
        }
        self.duplicates(&paths, Rule::WritableDuplicate);
    }

    fn network(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("network") else {
            return;
        };
        let Some(map) = self.object(value, "network", &["mode", "allowed_domains"]) else {
            return;
        };
        let mode = self.string(map, "network", "mode");
        if let Some(mode) = mode
            && !matches!(mode, "none" | "allowlist")
        {
            self.push(
                Rule::NetworkModeInvalid,
                "network.mode",
                format!("{mode:?}, expected none or allowlist"),
            );
        }
        let Some(domains) = self.strings(map, "network", "allowed_domains") else {
            return;
        };
        let n_listed = map
            .get("allowed_domains")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match mode {
            Some("none") if n_listed > 0 => self.push(
                Rule::NetworkDomainsWithoutAllowlist,
                "network.allowed_domains",
                "network mode none allows no domain: leave the list empty".to_string(),
            ),
            Some("allowlist") if n_listed == 0 => self.push(
                Rule::NetworkAllowlistEmpty,
                "network.allowed_domains",
                "an allowlist needs at least one domain (or mode none)".to_string(),
            ),
            _ => {}
        }
        for (path, domain) in &domains {
            if !is_dns_name(domain) {
                self.push(
                    Rule::NetworkDomainInvalid,
                    path,
                    format!("{domain:?} is not an exact DNS name (no wildcard, scheme, path, port or IP address)"),
                );
            }
        }
        self.duplicates(&domains, Rule::NetworkDomainDuplicate);
    }

    fn limits(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("limits") else {
            return;
        };
        let keys = ["max_task_minutes", "max_refused_actions", "idle_seconds"];
        let Some(map) = self.object(value, "limits", &keys) else {
            return;
        };
        let task = self.integer(map, "limits", "max_task_minutes");
        let refused = self.integer(map, "limits", "max_refused_actions");
        let idle = self.integer(map, "limits", "idle_seconds");
        let checks = [
            (
                task,
                1..=1440,
                Rule::MaxTaskMinutesRange,
                "max_task_minutes",
            ),
            (
                refused,
                1..=10_000,
                Rule::MaxRefusedActionsRange,
                "max_refused_actions",
            ),
            (idle, 1..=86_400, Rule::IdleSecondsRange, "idle_seconds"),
        ];
        for (found, range, rule, key) in checks {
            if let Some(found) = found
                && !range.contains(&found)
            {
                self.push(
                    rule,
                    &join("limits", key),
                    format!("{found} is outside {}..={}", range.start(), range.end()),
                );
            }
        }
        if let (Some(task), Some(idle)) = (task, idle)
            && (1..=1440).contains(&task)
            && idle > task * 60
        {
            self.push(
                Rule::IdleExceedsTask,
                "limits.idle_seconds",
                format!("{idle} s is longer than the task time of {task} min"),
            );
        }
    }

    /// `retention`, when present: `{frames: delete_at_release | keep}`.
    fn retention(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("retention") else {
            return;
        };
        let Some(retention) = self.object(value, "retention", &["frames"]) else {
            return;
        };
        if let Some(frames) = self.string(retention, "retention", "frames")
            && !matches!(frames, "delete_at_release" | "keep")
        {
            self.push(
                Rule::RetentionFramesInvalid,
                "retention.frames",
                format!("{frames:?}, expected delete_at_release or keep"),
            );
        }
    }

    /// `screenshot_gate`, when present: patterns compiled as the gate compiles them,
    /// thresholds in thousandths and ordered, bounds in range.
    fn screenshot_gate(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("screenshot_gate") else {
            return;
        };
        let path = "screenshot_gate";
        let mut keys = GATE_KEYS.to_vec();
        keys.push("classifier");
        let Some(gate) = self.object_with_optional(value, path, &keys, &["classifier"]) else {
            return;
        };
        if let Some(classifier) = gate.get("classifier") {
            self.gate_classifier(classifier);
        }
        if let Some(patterns) = self.strings(gate, path, "prefilter_patterns") {
            let n_listed = gate
                .get("prefilter_patterns")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if n_listed == 0 || n_listed > desk_gate::MAX_PATTERNS {
                self.push(
                    Rule::GatePatternsCount,
                    "screenshot_gate.prefilter_patterns",
                    format!("{n_listed} patterns: list 1 to {}", desk_gate::MAX_PATTERNS),
                );
            }
            for (item_path, pattern) in &patterns {
                if let Err(problem) = desk_gate::compile_pattern(pattern) {
                    self.push(
                        Rule::GatePatternInvalid,
                        item_path,
                        format!("{pattern:?} {problem}"),
                    );
                }
            }
            self.duplicates(&patterns, Rule::GatePatternDuplicate);
        }
        let allow = self.integer(gate, path, "allow_max_permille");
        let block = self.integer(gate, path, "block_min_permille");
        for (found, key) in [(allow, "allow_max_permille"), (block, "block_min_permille")] {
            if let Some(found) = found
                && !(0..=1000).contains(&found)
            {
                self.push(
                    Rule::GateThresholds,
                    &join(path, key),
                    format!("{found} is outside 0..=1000 (thousandths)"),
                );
            }
        }
        if let (Some(allow), Some(block)) = (allow, block)
            && allow >= block
        {
            self.push(
                Rule::GateThresholds,
                "screenshot_gate.allow_max_permille",
                format!("{allow} is not below block_min_permille {block}"),
            );
        }
        let bounds = [
            ("max_frame_bytes", 1..=67_108_864),
            ("max_pixels", 1..=100_000_000),
            ("ocr_timeout_ms", 1..=60_000),
        ];
        for (key, range) in bounds {
            if let Some(found) = self.integer(gate, path, key)
                && !range.contains(&found)
            {
                self.push(
                    Rule::GateBoundRange,
                    &join(path, key),
                    format!("{found} is outside {}..={}", range.start(), range.end()),
                );
            }
        }
    }

    /// `screenshot_gate.classifier`: exactly its three keys, checked as the gate checks them.
    fn gate_classifier(&mut self, value: &Value) {
        let path = "screenshot_gate.classifier";
        let Value::Object(map) = value else {
            self.push(
                Rule::GateClassifierInvalid,
                path,
                format!("expected a mapping, found {}", kind(value)),
            );
            return;
        };
        let keys = ["endpoint", "timeout_ms", "model_sha256"];
        let mut keys_seen: Vec<&str> = map.keys().map(String::as_str).collect();
        keys_seen.sort_unstable();
        let mut expected = keys.to_vec();
        expected.sort_unstable();
        if keys_seen != expected {
            self.push(
                Rule::GateClassifierInvalid,
                path,
                format!("keys {keys_seen:?}, expected exactly {keys:?}"),
            );
            return;
        }
        let settings = match (
            map.get("endpoint").and_then(Value::as_str),
            map.get("timeout_ms").and_then(Value::as_u64),
            map.get("model_sha256").and_then(Value::as_str),
        ) {
            (Some(endpoint), Some(timeout_ms), Some(model_sha256)) => {
                desk_gate::ClassifierSettings {
                    endpoint: endpoint.to_string(),
                    timeout_ms,
                    model_sha256: model_sha256.to_string(),
                }
            }
            _ => {
                self.push(
                    Rule::GateClassifierInvalid,
                    path,
                    "endpoint and model_sha256 must be strings, timeout_ms an integer".to_string(),
                );
                return;
            }
        };
        if let Err(problem) = desk_gate::check_classifier(&settings) {
            self.push(Rule::GateClassifierInvalid, path, problem);
        }
    }

    fn validity(&mut self, root: &Map<String, Value>) {
        let Some(value) = root.get("validity") else {
            return;
        };
        let Some(map) = self.object(value, "validity", &["not_before", "not_after"]) else {
            return;
        };
        let bound = |lint: &mut Lint, key: &str| {
            let text = lint.string(map, "validity", key)?;
            let parsed = parse_utc(text);
            if parsed.is_none() {
                lint.push(
                    Rule::ValidityTimestamp,
                    &join("validity", key),
                    format!("{text:?} is not YYYY-MM-DDTHH:MM:SSZ"),
                );
            }
            parsed
        };
        let not_before = bound(self, "not_before");
        let not_after = bound(self, "not_after");
        if let (Some(not_before), Some(not_after)) = (not_before, not_after)
            && not_before >= not_after
        {
            self.push(
                Rule::ValidityWindowEmpty,
                "validity",
                "not_before must be earlier than not_after".to_string(),
            );
        }
    }
}

/// `[a-z0-9][a-z0-9._-]{0,63}`.
pub(crate) fn is_app_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(byte))
}

/// An exact DNS name: 1 to 253 characters, labels of 1 to 63 of `[a-z0-9-]` (case-insensitive)
/// not starting or ending with `-`, at least two labels, an alphabetic top-level label of 2 to 63
/// characters; so no wildcard, scheme, path, port or IP literal.
pub(crate) fn is_dns_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    let Some((top, rest)) = labels.split_last() else {
        return false;
    };
    let label_ok = |label: &&str| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
    };
    !rest.is_empty()
        && rest.iter().all(label_ok)
        && (2..=63).contains(&top.len())
        && top.bytes().all(|byte| byte.is_ascii_alphabetic())
}
