//! The policy document: its typed form ([`Policy`]), what it states (limits, clipboard,
//! network, allowed profiles, validity) and the strict UTC timestamps of its validity window.
//!
//! Invariant: a [`Policy`] exists only after its document passed every lint rule (it is built
//! by [`Policy::from_yaml`] or [`Policy::from_value`]), so its fields hold the ranges the rules
//! state and its JSON form is exactly the value that was linted and, once signed, digested.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approvals::{Approvals, ApprovalsSection};
use crate::error::PolicyError;
use crate::rules::{Rule, Violation, parse_utc};

/// A linted workspace policy. Fields are private: read them through the accessors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    schema_version: String,
    policy_version: String,
    workspace: Workspace,
    apps: Apps,
    writable_directories: Vec<String>,
    network: NetworkSection,
    clipboard: ClipboardMode,
    limits: Limits,
    validity: Validity,
    /// Absent: frames are deleted at release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retention: Option<Retention>,
    /// Absent: no screenshot gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    screenshot_gate: Option<ScreenshotGate>,
    /// Absent: no high-risk target, no approver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approvals: Option<ApprovalsSection>,
}

/// `screenshot_gate`: the screenshot risk gate's patterns, thresholds (thousandths) and bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScreenshotGate {
    prefilter_patterns: Vec<String>,
    allow_max_permille: u32,
    block_min_permille: u32,
    max_frame_bytes: u64,
    max_pixels: u64,
    ocr_timeout_ms: u64,
    /// Absent: no classifier (and the document's digest as before the key existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    classifier: Option<GateClassifier>,
}

/// `screenshot_gate.classifier`: the classifier endpoint, its time bound and pinned model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GateClassifier {
    endpoint: String,
    timeout_ms: u64,
    model_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Retention {
    frames: FrameRetention,
}

/// What release does with a session's frames (its screenshots in the evidence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameRetention {
    /// Deleted with the rest of the attempt data; the journal keeps their digests (the
    /// default, and what a policy without `retention` says).
    DeleteAtRelease,
    /// Kept in the evidence after release; every bundle exported afterwards carries them and
    /// is stamped with this rule.
    Keep,
}

impl FrameRetention {
    /// The wire name (`delete_at_release`, `keep`).
    pub fn as_str(self) -> &'static str {
        match self {
            FrameRetention::DeleteAtRelease => "delete_at_release",
            FrameRetention::Keep => "keep",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Workspace {
    disposable: bool,
    logged_out: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Apps {
    allowed_profiles: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkSection {
    mode: NetworkMode,
    allowed_domains: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum NetworkMode {
    None,
    Allowlist,
}

/// What the workspace may do with a clipboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClipboardMode {
    /// No clipboard access (`none`; YAML 1.1 reads a plain `off` as a boolean, so the mode is
    /// spelled `none`).
    None,
    /// The agent may read the workspace's clipboard.
    Read,
    /// The agent may read and write the workspace's clipboard.
    ReadWrite,
}

/// What the workspace may reach on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// Nothing (loopback only).
    None,
    /// Exactly these DNS names.
    Allowlist(Vec<String>),
}

/// The limits a watchdog enforces for every session under the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Longest task, counted from the handoff, in minutes (1..=1440).
    pub max_task_minutes: u32,
    /// Most refused actions before the session is stopped (1..=10000).
    pub max_refused_actions: u32,
    /// Longest time without an action, in seconds (1..=86400, at most the task time).
    pub idle_seconds: u32,
}

impl Limits {
    /// [`Limits::max_task_minutes`] as a duration.
    pub fn max_task(&self) -> Duration {
        Duration::from_secs(u64::from(self.max_task_minutes) * 60)
    }

    /// [`Limits::idle_seconds`] as a duration.
    pub fn idle(&self) -> Duration {
        Duration::from_secs(u64::from(self.idle_seconds))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Validity {
    not_before: String,
    not_after: String,
}

impl Policy {
    /// Reads a YAML policy strictly and lints it; every violation is returned at once.
    pub fn from_yaml(text: &str) -> Result<Policy, PolicyError> {
        let parsed = crate::yaml::parse(text);
        let mut violations = parsed.violations;
        let Some(value) = parsed.value else {
            return Err(PolicyError::Lint(violations));
        };
        violations.extend(crate::lint::lint_value(&value));
        if !violations.is_empty() {
            return Err(PolicyError::Lint(violations));
        }
        Policy::typed(value)
    }

    /// Lints a policy already read as JSON (a signed envelope's payload).
    pub fn from_value(value: Value) -> Result<Policy, PolicyError> {
        let violations = crate::lint::lint_value(&value);
        if !violations.is_empty() {
            return Err(PolicyError::Lint(violations));
        }
        Policy::typed(value)
    }

    fn typed(value: Value) -> Result<Policy, PolicyError> {
        // The lint checked every key and type, so this only fails if the two disagree.
        desk_contract::strict::from_value_exact(value, "$").map_err(|error| {
            PolicyError::Lint(vec![Violation::new(
                Rule::WrongType,
                &error.path,
                error.problem.to_string(),
            )])
        })
    }

    /// The document as JSON: what is signed and digested.
    pub fn to_value(&self) -> Result<Value, PolicyError> {
        serde_json::to_value(self).map_err(|error| PolicyError::Encode(error.to_string()))
    }

    /// The author's version label.
    pub fn policy_version(&self) -> &str {
        &self.policy_version
    }

    /// The app profiles a lease may name.
    pub fn allowed_profiles(&self) -> &[String] {
        &self.apps.allowed_profiles
    }

    /// Whether a lease may use `profile`.
    pub fn allows_profile(&self, profile: &str) -> bool {
        self.apps
            .allowed_profiles
            .iter()
            .any(|name| name == profile)
    }

    /// Writable directories, relative to the session's workspace (`attempt`, `attempt/...`).
    pub fn writable_directories(&self) -> &[String] {
        &self.writable_directories
    }

    /// Task time, refused-action and idle limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What release does with frames (`retention.frames`; absent: deleted at release).
    pub fn frame_retention(&self) -> FrameRetention {
        self.retention
            .as_ref()
            .map_or(FrameRetention::DeleteAtRelease, |retention| {
                retention.frames
            })
    }

    /// The screenshot gate's settings, when the policy has one (`screenshot_gate`; absent: no
    /// gate). The lint compiled its patterns; [`desk_gate::GatePolicy::new`] does it again.
    pub fn screenshot_gate(&self) -> Option<desk_gate::GateSettings> {
        self.screenshot_gate
            .as_ref()
            .map(|gate| desk_gate::GateSettings {
                patterns: gate.prefilter_patterns.clone(),
                allow_max_permille: gate.allow_max_permille,
                block_min_permille: gate.block_min_permille,
                max_frame_bytes: gate.max_frame_bytes,
                max_pixels: gate.max_pixels,
                ocr_timeout_ms: gate.ocr_timeout_ms,
            })
    }

    /// The screenshot gate's classifier, when its section names one
    /// (`screenshot_gate.classifier`; the lint checked it with [`desk_gate::check_classifier`]).
    pub fn screenshot_gate_classifier(&self) -> Option<desk_gate::ClassifierSettings> {
        let classifier = self.screenshot_gate.as_ref()?.classifier.as_ref()?;
        Some(desk_gate::ClassifierSettings {
            endpoint: classifier.endpoint.clone(),
            timeout_ms: classifier.timeout_ms,
            model_sha256: classifier.model_sha256.clone(),
        })
    }

    /// The approvals, compiled, when the policy has them (`approvals`; absent: no target is
    /// high-risk). The lint compiled the patterns and decoded the key; an error here means the
    /// two disagree.
    pub fn approvals(&self) -> Result<Option<Approvals>, PolicyError> {
        self.approvals
            .as_ref()
            .map(|section| {
                section.compile().map_err(|message| {
                    PolicyError::Lint(vec![Violation::new(
                        Rule::ApprovalTargetInvalid,
                        "approvals",
                        message,
                    )])
                })
            })
            .transpose()
    }

    /// The clipboard mode.
    pub fn clipboard_mode(&self) -> ClipboardMode {
        self.clipboard
    }

    /// The network the workspace may reach.
    pub fn network(&self) -> Network {
        match self.network.mode {
            NetworkMode::None => Network::None,
            NetworkMode::Allowlist => Network::Allowlist(self.network.allowed_domains.clone()),
        }
    }

    /// The validity window in seconds since the Unix epoch: `(not_before, not_after)`.
    pub fn validity_unix(&self) -> (i64, i64) {
        // The lint parsed both bounds; an unparsable one would make the window empty.
        (
            parse_utc(&self.validity.not_before).unwrap_or(i64::MAX),
            parse_utc(&self.validity.not_after).unwrap_or(i64::MIN),
        )
    }

    /// Whether `now_unix` lies inside the validity window (both bounds inclusive).
    pub fn check_validity(&self, now_unix: i64) -> Result<(), PolicyError> {
        let (not_before, not_after) = self.validity_unix();
        if now_unix < not_before {
            return Err(PolicyError::NotYetValid {
                not_before: self.validity.not_before.clone(),
            });
        }
        if now_unix > not_after {
            return Err(PolicyError::Expired {
                not_after: self.validity.not_after.clone(),
            });
        }
        Ok(())
    }
}
