//! The lint rules: one stable id and name per rule, and [`Violation`], one broken rule at one
//! place in the document.
//!
//! Ids are API: a rule keeps its id forever; a retired rule's id is not reused. The rules
//! follow the containment specification's workspace policy lint (G002): a disposable,
//! logged-out workspace, explicit apps, writable directories only under the attempt directory,
//! no network or an exact allowlist, an explicit clipboard mode, bounded limits, a validity
//! window; read from YAML that no two readers could read differently. The two formats the rules
//! pin live here too: [`SCHEMA_VERSION`] and the UTC timestamps [`parse_utc`] reads (the
//! document and the lint both use them, and the document runs the lint).

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// `schema_version` of every policy document.
pub const SCHEMA_VERSION: &str = "deskbroker.workspace-policy.v1";

/// Parses exactly `YYYY-MM-DDTHH:MM:SSZ` (UTC, no fraction, no offset) into seconds since the
/// Unix epoch; `None` for anything else, including impossible dates.
pub fn parse_utc(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let shape_ok = bytes.len() == 20
        && bytes.iter().enumerate().all(|(idx, byte)| match idx {
            4 | 7 => *byte == b'-',
            10 => *byte == b'T',
            13 | 16 => *byte == b':',
            19 => *byte == b'Z',
            _ => byte.is_ascii_digit(),
        });
    if !shape_ok {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let max_day = *month_days.get(usize::try_from(month - 1).ok()?)?;
    if year < 1970 || !(1..=max_day).contains(&day) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

macro_rules! rules {
    ($($(#[$doc:meta])* $variant:ident = ($id:literal, $name:literal),)*) => {
        /// A lint rule.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Rule {
            $($(#[$doc])* $variant,)*
        }

        impl Rule {
            /// Every rule, in id order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// The stable id, e.g. `POL-020`.
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)*
                }
            }

            /// The stable name, e.g. `disposable_required`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Rule::$variant => $name,)*
                }
            }
        }
    };
}

rules! {
    /// The text is not well-formed YAML, is empty, too large or too deeply nested, or a
    /// mapping key is not a string.
    YamlSyntax = ("POL-001", "yaml_syntax"),
    /// A mapping holds the same key twice.
    YamlDuplicateKey = ("POL-002", "yaml_duplicate_key"),
    /// An anchor (`&a`) or alias (`*a`).
    YamlAnchorOrAlias = ("POL-003", "yaml_anchor_or_alias"),
    /// A tag (`!!str`, `!custom`).
    YamlTag = ("POL-004", "yaml_tag"),
    /// A plain `yes`/`no`/`on`/`off`/`y`/`n` or a boolean in another case than `true`/`false`.
    YamlNonLiteralBoolean = ("POL-005", "yaml_non_literal_boolean"),
    /// A null, or a number form other than a plain decimal integer.
    YamlAmbiguousScalar = ("POL-006", "yaml_ambiguous_scalar"),
    /// More than one YAML document.
    YamlMultipleDocuments = ("POL-007", "yaml_multiple_documents"),
    /// A merge key (`<<`).
    YamlMergeKey = ("POL-008", "yaml_merge_key"),
    /// `schema_version` is not `deskbroker.workspace-policy.v1`.
    SchemaVersion = ("POL-010", "schema_version"),
    /// A key the schema does not know.
    UnknownKey = ("POL-011", "unknown_key"),
    /// A key the schema requires is absent.
    MissingKey = ("POL-012", "missing_key"),
    /// A value of the wrong type (a number or string where a boolean belongs, ...).
    WrongType = ("POL-013", "wrong_type"),
    /// `policy_version` is not 1 to 64 characters of `[A-Za-z0-9._:-]`.
    PolicyVersion = ("POL-014", "policy_version"),
    /// `workspace.disposable` is not `true`.
    DisposableRequired = ("POL-020", "disposable_required"),
    /// `workspace.logged_out` is not `true`.
    LoggedOutRequired = ("POL-021", "logged_out_required"),
    /// `apps.allowed_profiles` is empty.
    AppsEmpty = ("POL-030", "apps_empty"),
    /// A profile name is not `[a-z0-9][a-z0-9._-]{0,63}`.
    AppNameInvalid = ("POL-031", "app_name_invalid"),
    /// A profile is listed twice.
    AppDuplicate = ("POL-032", "app_duplicate"),
    /// `writable_directories` is empty.
    WritableEmpty = ("POL-040", "writable_empty"),
    /// A writable path has an empty, `.`, `..` or `~` component, a backslash or a control
    /// character.
    PathUnsafe = ("POL-041", "path_unsafe"),
    /// A writable path is not the attempt directory (`attempt`) or below it (`attempt/...`).
    WritableOutsideAttempt = ("POL-042", "writable_outside_attempt"),
    /// A writable path is listed twice.
    WritableDuplicate = ("POL-043", "writable_duplicate"),
    /// `network.mode` is not `none` or `allowlist`.
    NetworkModeInvalid = ("POL-050", "network_mode_invalid"),
    /// `network.mode` is `none` but domains are listed.
    NetworkDomainsWithoutAllowlist = ("POL-051", "network_domains_without_allowlist"),
    /// `network.mode` is `allowlist` with no domain.
    NetworkAllowlistEmpty = ("POL-052", "network_allowlist_empty"),
    /// A domain is not an exact DNS name (wildcard, scheme, path, port, IP literal, ...).
    NetworkDomainInvalid = ("POL-053", "network_domain_invalid"),
    /// A domain is listed twice.
    NetworkDomainDuplicate = ("POL-054", "network_domain_duplicate"),
    /// `clipboard` is not `none`, `read` or `read_write`.
    ClipboardModeInvalid = ("POL-060", "clipboard_mode_invalid"),
    /// `limits.max_task_minutes` is outside 1..=1440.
    MaxTaskMinutesRange = ("POL-070", "max_task_minutes_range"),
    /// `limits.max_refused_actions` is outside 1..=10000.
    MaxRefusedActionsRange = ("POL-071", "max_refused_actions_range"),
    /// `limits.idle_seconds` is outside 1..=86400.
    IdleSecondsRange = ("POL-072", "idle_seconds_range"),
    /// `limits.idle_seconds` exceeds the task time: the idle limit could never apply.
    IdleExceedsTask = ("POL-073", "idle_exceeds_task"),
    /// A validity bound is not an RFC 3339 UTC time `YYYY-MM-DDTHH:MM:SSZ`.
    ValidityTimestamp = ("POL-080", "validity_timestamp"),
    /// `validity.not_before` is not before `validity.not_after`.
    ValidityWindowEmpty = ("POL-081", "validity_window_empty"),
    /// `retention.frames` is not `delete_at_release` or `keep`.
    RetentionFramesInvalid = ("POL-090", "retention_frames_invalid"),
    /// `screenshot_gate.prefilter_patterns` is empty or lists more than 64 patterns.
    GatePatternsCount = ("POL-100", "gate_patterns_count"),
    /// A gate pattern is empty, longer than 256 bytes, not a valid pattern, or matches the
    /// empty text (compiled here exactly as the gate compiles it).
    GatePatternInvalid = ("POL-101", "gate_pattern_invalid"),
    /// A gate pattern is listed twice.
    GatePatternDuplicate = ("POL-102", "gate_pattern_duplicate"),
    /// A gate threshold is outside 0..=1000, or `allow_max_permille` is not below
    /// `block_min_permille`.
    GateThresholds = ("POL-103", "gate_thresholds"),
    /// A gate bound is outside its range: `max_frame_bytes` 1..=67108864, `max_pixels`
    /// 1..=100000000, `ocr_timeout_ms` 1..=60000.
    GateBoundRange = ("POL-104", "gate_bound_range"),
    /// `screenshot_gate.classifier` is not exactly `endpoint`, `timeout_ms`, `model_sha256`,
    /// or its endpoint is not `http://` on a loopback host with a port, its `model_sha256` not
    /// 64 lowercase hex digits, or its `timeout_ms` outside 1..=60000 (checked with
    /// `desk_gate::check_classifier`, as the gate checks it).
    GateClassifierInvalid = ("POL-105", "gate_classifier_invalid"),
    /// `approvals.approver_id` is not `[a-z0-9][a-z0-9._-]{0,63}`, or
    /// `approvals.approver_public_key` is not an Ed25519 public key in standard base64.
    ApproverInvalid = ("POL-110", "approver_invalid"),
    /// `approvals.receipt_ttl_seconds` is outside 1..=3600.
    ApprovalTtlRange = ("POL-111", "approval_ttl_range"),
    /// `approvals.high_risk_targets` is empty or lists more than 64 targets.
    ApprovalTargetsCount = ("POL-112", "approval_targets_count"),
    /// A high-risk target's role is not an AT-SPI role name (1 to 64 letters and spaces), or
    /// its name pattern is empty, longer than 256 bytes, not a valid pattern, or matches the
    /// empty name (compiled as the screenshot gate compiles its patterns).
    ApprovalTargetInvalid = ("POL-113", "approval_target_invalid"),
    /// A high-risk target (role and pattern) is listed twice.
    ApprovalTargetDuplicate = ("POL-114", "approval_target_duplicate"),
}

impl fmt::Display for Rule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} {}", self.id(), self.name())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

/// One broken rule: which, where (a dotted path into the document, `$` for the whole) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// Where: `limits.max_task_minutes`, `apps.allowed_profiles[2]`, `$`.
    pub path: String,
    /// Why, for a person.
    pub message: String,
}

impl Violation {
    pub(crate) fn new(rule: Rule, path: &str, message: String) -> Violation {
        Violation {
            rule,
            path: path.to_string(),
            message,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} {} at {}: {}",
            self.rule.id(),
            self.rule.name(),
            self.path,
            self.message
        )
    }
}

/// How a lint message names the type of a value it did not expect.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
