//! The journal's record schema: the signed payload of every evidence line and the typed body of
//! each record kind.
//! Over 400 lines because it is the whole schema: one struct per record kind, documented field
//! by field, and the one `validate` over all of them; split, a kind's fields and rules part.
//!
//! A payload is `{"schema_version", "seq", "prev_sha256", "session_id", "at_ms", "kind",
//! "body"}` with exactly those keys; `body` has exactly the keys of its kind's struct (an
//! `Option` field is present as `null`). Digests are 64 lowercase hex characters; file names
//! are single path components. [`RecordBody::validate`] enforces both at write and at verify.

use desk_contract::desktop::{LimitsMode, SandboxMode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::EvidenceError;
use crate::strict;

mod approval;
mod fields;
mod gate;
mod observer;

pub(crate) use fields::is_file_name;
use fields::{check_digest, check_exact, check_file_name, check_text};

pub use approval::{APPROVED_STATES, ApprovalIssued, ApprovedAction};
pub use gate::{
    GATE_REASON_SOURCES, GATE_VERDICTS, GateReason, GateRegion, REVIEW_DECISIONS,
    ScreenshotGateDecision, ScreenshotReviewDecision,
};
pub use observer::{OBSERVATION_OUTCOMES, ObserverObservation};

/// `schema_version` of every record payload.
pub const RECORD_SCHEMA: &str = "deskbroker.evidence.record.v1";

/// `prev_sha256` of the first record.
pub const ZERO_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// `settle_outcome` of a receipt whose action was refused before any input reached the desktop:
/// the acceptance is withdrawn, it does not count as an action, and its index is accepted again
/// by the next action. Only the last accepted action can be withdrawn.
pub const NOT_INJECTED: &str = "not_injected";

desk_contract::wire_enum! {
    /// The kind of a record; its `kind` string in the payload.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum RecordKind {
        /// The session's desktop was handed over (after lease and reset).
        SessionStarted = "session_started",
        /// An action passed validation and is about to be injected.
        ActionAccepted = "action_accepted",
        /// An accepted action finished (or failed) and its effects were logged.
        ActionReceipt = "action_receipt",
        /// A screenshot was captured and stored.
        Screenshot = "screenshot",
        /// A checkpoint captured the attempt file.
        Checkpoint = "checkpoint",
        /// An artifact was handed out or exported.
        Artifact = "artifact",
        /// The session was released; no record may follow.
        SessionReleased = "session_released",
        /// The session was killed (watchdog or kill switch): its terminal receipt, replayed
        /// from the spool; no record may follow.
        SessionKilled = "session_killed",
        /// An action was refused before any input (a denial, counted toward the refused-action
        /// limit).
        ActionRefused = "action_refused",
        /// The session's clipboard was read or written, or such an access was refused.
        ClipboardAccess = "clipboard_access",
        /// The session's workspace was launched and measured at handoff (the launch receipt).
        WorkspaceLaunched = "workspace_launched",
        /// The screenshot gate decided a frame bound for the agent (`docs/screenshot-gate.md`).
        ScreenshotGateDecision = "screenshot_gate_decision",
        /// A reviewer allowed or denied a frame the gate put in review.
        ScreenshotReviewDecision = "screenshot_review_decision",
        /// An approver's signed receipt for one exact action was issued (`docs/approvals.md`).
        ApprovalIssued = "approval_issued",
        /// An approved action reached a state of its execution.
        ApprovedAction = "approved_action",
        /// The broker accepted an observation signed by the observer (`docs/observer.md`).
        ObserverObservation = "observer_observation",
    }
}

/// Length and SHA-256 of an append-only log's first `len` bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogDigest {
    /// Number of bytes covered, from the start of the file.
    pub len: u64,
    /// SHA-256 (hex) of those bytes.
    pub sha256: String,
}

impl LogDigest {
    /// The digest of all of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self {
            len: bytes.len() as u64,
            sha256: crate::sign::sha256_hex(bytes),
        }
    }
}

/// Body of `session_started`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStarted {
    /// The lease that owns the session.
    pub lease_id: String,
    /// The desktop backend (`x11`, `fake`, ...).
    pub backend: String,
    /// Screen width in pixels.
    pub screen_width: u32,
    /// Screen height in pixels.
    pub screen_height: u32,
    /// Fingerprint of the key that signs this journal ([`crate::VerifyingKey::fingerprint`]).
    pub signer_fingerprint: String,
    /// The workspace policy the session was leased under: hex SHA-256 of the signed policy's
    /// RFC 8785 bytes. Absent (not `null`) in journals written before workspace policies, so
    /// they still verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_sha256: Option<String>,
}

/// Body of `action_accepted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionAccepted {
    /// The action's index in the session: 0, 1, 2, ... in acceptance order.
    pub index: u64,
    /// The client's request id (idempotency key).
    pub request_id: String,
    /// The action's `type` (`click`, `type_text`, ...).
    pub action_type: String,
    /// The agent's stated intent, if it gave one.
    pub intent: Option<String>,
    /// SHA-256 (hex) of the JCS bytes of the request as accepted.
    pub request_sha256: String,
}

/// Body of `action_receipt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionReceipt {
    /// Index of the accepted action this receipt closes.
    pub index: u64,
    /// How the action settled (`settled`, `timeout`, `skipped`, ...), `in_doubt` when input may
    /// have reached the desktop but the outcome is unknown, or [`NOT_INJECTED`].
    pub settle_outcome: String,
    /// The error code if the action failed.
    pub error_code: Option<String>,
    /// SHA-256 (hex) of the screenshot returned with the action, if any.
    pub screenshot_sha256: Option<String>,
    /// `events.json` as of this receipt.
    pub events: LogDigest,
    /// `frame_events.json` as of this receipt.
    pub frame_events: LogDigest,
}

/// Body of `screenshot`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Screenshot {
    /// The frame's sequence number; stored as `frames/<sequence>.png`.
    pub sequence: u64,
    /// SHA-256 (hex) of the PNG bytes.
    pub sha256: String,
    /// Size of the PNG in bytes.
    pub size: u64,
}

/// Body of `checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// File name of the checkpointed attempt file (one path component).
    pub file_name: String,
    /// SHA-256 (hex) of the checkpointed bytes.
    pub sha256: String,
    /// Their size in bytes.
    pub size: u64,
    /// How the save happened (`already_saved`, `controller_save`).
    pub method: String,
}

/// Body of `artifact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// File name (one path component); stored in a bundle as `artifact/<name>`.
    pub name: String,
    /// SHA-256 (hex) of the artifact bytes.
    pub sha256: String,
    /// Their size in bytes.
    pub size: u64,
}

/// Body of `session_released`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionReleased {
    /// Why the session ended (`released`, `expired`, `error: ...`).
    pub reason: String,
    /// Number of actions accepted in the session.
    pub n_actions: u64,
    /// The whole of `events.json` at release.
    pub events: LogDigest,
    /// The whole of `frame_events.json` at release.
    pub frame_events: LogDigest,
    /// What release did with the frames, as the workspace policy's `retention.frames` said:
    /// `delete_at_release` or `keep` (absent in journals from before the rule: deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_retention: Option<String>,
}

/// `control_id` of terminal receipts: the containment control they evidence.
pub const KILL_CONTROL_ID: &str = "AID-I-008.004-G005";

/// Body of `session_killed`: a terminal receipt in the containment spec's record shape
/// (control id, stage, outcome, recorded time). Written first to the spool (`spool.rs`) by
/// whoever killed the session; the broker replays it into the journal with its original
/// `record_id` and `recorded_at_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionKilled {
    /// The receipt's own id, kept when replayed: `kill-<32 hex>`.
    pub record_id: String,
    /// [`KILL_CONTROL_ID`].
    pub control_id: String,
    /// `terminal`.
    pub stage: String,
    /// `contained` (removal proven) or `removal_unproven` (the reconciler goes on).
    pub outcome: String,
    /// When the kill finished, milliseconds since the Unix epoch.
    pub recorded_at_ms: u64,
    /// Who killed: `watchdog` or `operator` (or `broker`: its census before an action).
    pub source: String,
    /// Why, in words.
    pub reason: String,
    /// On a receipt the watchdog signed (its own kills, and a cut kill it finished): whose uid
    /// it ran under, `own` (a uid of its own, so no other uid but root reads its key) or
    /// `shared` (the broker's uid, which can read it). Absent on receipts the broker's key
    /// signs, and on receipts written before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer_identity: Option<String>,
    /// The limit reached (`max_task_minutes`, `max_refused_actions`, `idle_limit`,
    /// `lease_expiry`, `prohibited_process`), `null` for an operator's kill.
    pub limit: Option<String>,
    /// The index of the last action accepted, `null` when none was.
    pub last_action_index: Option<u64>,
    /// Every process of the workspace is gone.
    pub state_destroyed: bool,
    /// The lease token authorizes nothing any more.
    pub lease_revoked: bool,
    /// The session directory and workspace are gone.
    pub storage_destroyed: bool,
    /// The process the census found prohibited (limit `prohibited_process`); absent otherwise.
    /// (Boxed: it is the receipt's largest field and rarely there.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Box<ProhibitedProcess>>,
    /// The action in flight (journaled, not yet complete) when the kill went through: its
    /// outcome is unknown and it is never replayed. Absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_in_doubt: Option<u64>,
    /// In a journal: the spool line's envelope as the killer signed it (this receipt without
    /// `signed_receipt`, wrapped in the spool's `{schema_version, session_id, receipt}`), so a
    /// verifier checks the killer's own signature: a `watchdog` receipt only under the
    /// watchdog's key (`bundle/terminal.rs`). Absent in the spool itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_receipt: Option<crate::sign::Envelope>,
}

/// `source` of a terminal receipt the watchdog signs (a limit or its census): accepted only
/// under the watchdog's own key.
pub const WATCHDOG_SOURCE: &str = "watchdog";

/// The values of [`SessionKilled::signer_identity`].
pub const SIGNER_IDENTITIES: [&str; 2] = ["own", "shared"];

/// A process the census of a session's sandbox did not allow, as its kill records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProhibitedProcess {
    /// Its host pid.
    pub pid: u32,
    /// Its program (`/proc/<pid>/exe`).
    pub exe: String,
    /// Its command line, arguments joined by spaces (at most 1 KiB).
    pub cmdline: String,
    /// Its parent's host pid.
    pub parent_pid: u32,
    /// Its parent's program, `null` when the parent is outside the sandbox.
    pub parent_exe: Option<String>,
    /// Why the census refused it.
    pub why: String,
}

/// `control_id` of denial records: the refused actions the watchdog counts (G005's policy
/// denials).
pub const DENIAL_CONTROL_ID: &str = "AID-I-008.004-G005";

/// `stage` of a denial: the action failed validation before any input (bad field, point off
/// the display, a refused chord, an unparsable action or program).
pub const DENIAL_STAGE: &str = "action_validation";

/// `outcome` of a denial: nothing reached the desktop.
pub const DENIAL_OUTCOME: &str = "refused";

/// Body of `action_refused`: a denial in the containment spec's record shape (control id,
/// stage, outcome, recorded time), written by the broker before it answers the refusal. It
/// takes no action index and closes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionRefused {
    /// The record's own id: `deny-<32 hex>`.
    pub record_id: String,
    /// [`DENIAL_CONTROL_ID`].
    pub control_id: String,
    /// [`DENIAL_STAGE`].
    pub stage: String,
    /// [`DENIAL_OUTCOME`].
    pub outcome: String,
    /// When the refusal was decided, milliseconds since the Unix epoch.
    pub recorded_at_ms: u64,
    /// The client's request id, `null` when it was not a valid identifier.
    pub request_id: Option<String>,
    /// The error code the client got (`invalid_action`, `invalid_params`, ...).
    pub error_code: String,
    /// The session's refused-action count with this one, as the watchdog reads it; `null` when
    /// the count could not be written.
    pub refused_count: Option<u64>,
}

/// Body of `clipboard_access`: one per clipboard read or write, refusals included; a write
/// has a `requested` record before the desktop is asked and one with its outcome after. The
/// text itself is never recorded, only its length and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipboardAccess {
    /// `read` or `write`.
    pub direction: String,
    /// `requested` (a write about to be asked of the desktop), `done`, `refused` (nothing was
    /// asked), `failed` (nothing changed) or `unknown` (a write whose outcome is unknown).
    pub outcome: String,
    /// The error code when the access was refused or failed.
    pub error_code: Option<String>,
    /// UTF-8 bytes of the text written, or of the clipboard's whole text when read.
    pub byte_length: Option<u64>,
    /// SHA-256 (hex) of the text written, or of the text a read returned.
    pub sha256: Option<String>,
    /// Whether a read returned a cut prefix.
    pub truncated: Option<bool>,
}

/// One process running in a workspace at handoff, as the census saw it from outside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchedProcess {
    /// Host process id.
    pub pid: u32,
    /// Host parent process id.
    pub ppid: u32,
    /// Start time, clock ticks after boot (with `pid`, the process's identity).
    pub start_ticks: u64,
    /// The program as the sandbox shows it (`None`: unreadable).
    pub exe: Option<String>,
}

/// Body of `workspace_launched`, the launch receipt: the workspace measured at handoff, before
/// the agent's first screenshot. The processes are every process of the workspace's pid
/// namespace (the census, taken from outside); `process_population_sha256` is the SHA-256 of
/// their canonical JSON, so the population can be compared without the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceLaunched {
    /// `on` (sandboxed) or `off` (`--unsafe-no-sandbox`).
    pub sandbox: String,
    /// The processes running at handoff, by pid.
    pub processes: Vec<LaunchedProcess>,
    /// `processes.len()`.
    pub process_population_count: u64,
    /// SHA-256 (hex) of the canonical JSON of `processes`.
    pub process_population_sha256: String,
    /// Processes the census refused at handoff (the session does not start with any).
    pub prohibited: u64,
    /// SHA-256 (hex) of the canonical JSON of the workspace facts measured at handoff
    /// (mounts, namespaces, visible executables), as the reset answer shows them; `None`
    /// without a sandbox.
    pub workspace_facts_sha256: Option<String>,
}

/// The typed body of a record, one variant per [`RecordKind`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordBody {
    /// `session_started`.
    SessionStarted(SessionStarted),
    /// `action_accepted`.
    ActionAccepted(ActionAccepted),
    /// `action_receipt`.
    ActionReceipt(ActionReceipt),
    /// `screenshot`.
    Screenshot(Screenshot),
    /// `checkpoint`.
    Checkpoint(Checkpoint),
    /// `artifact`.
    Artifact(Artifact),
    /// `session_released`.
    SessionReleased(SessionReleased),
    /// `session_killed`.
    SessionKilled(SessionKilled),
    /// `action_refused`.
    ActionRefused(ActionRefused),
    /// `clipboard_access`.
    ClipboardAccess(ClipboardAccess),
    /// `workspace_launched`.
    WorkspaceLaunched(WorkspaceLaunched),
    /// `screenshot_gate_decision` (boxed: the largest body, and one per gated frame).
    ScreenshotGateDecision(Box<ScreenshotGateDecision>),
    /// `screenshot_review_decision`.
    ScreenshotReviewDecision(ScreenshotReviewDecision),
    /// `approval_issued`.
    ApprovalIssued(ApprovalIssued),
    /// `approved_action`.
    ApprovedAction(ApprovedAction),
    /// `observer_observation`.
    ObserverObservation(ObserverObservation),
}

impl RecordBody {
    /// The record kind of this body.
    pub fn kind(&self) -> RecordKind {
        match self {
            Self::SessionStarted(_) => RecordKind::SessionStarted,
            Self::ActionAccepted(_) => RecordKind::ActionAccepted,
            Self::ActionReceipt(_) => RecordKind::ActionReceipt,
            Self::Screenshot(_) => RecordKind::Screenshot,
            Self::Checkpoint(_) => RecordKind::Checkpoint,
            Self::Artifact(_) => RecordKind::Artifact,
            Self::SessionReleased(_) => RecordKind::SessionReleased,
            Self::SessionKilled(_) => RecordKind::SessionKilled,
            Self::ActionRefused(_) => RecordKind::ActionRefused,
            Self::ClipboardAccess(_) => RecordKind::ClipboardAccess,
            Self::WorkspaceLaunched(_) => RecordKind::WorkspaceLaunched,
            Self::ScreenshotGateDecision(_) => RecordKind::ScreenshotGateDecision,
            Self::ScreenshotReviewDecision(_) => RecordKind::ScreenshotReviewDecision,
            Self::ApprovalIssued(_) => RecordKind::ApprovalIssued,
            Self::ApprovedAction(_) => RecordKind::ApprovedAction,
            Self::ObserverObservation(_) => RecordKind::ObserverObservation,
        }
    }

    pub(crate) fn to_value(&self) -> Result<Value, EvidenceError> {
        let result = match self {
            Self::SessionStarted(body) => serde_json::to_value(body),
            Self::ActionAccepted(body) => serde_json::to_value(body),
            Self::ActionReceipt(body) => serde_json::to_value(body),
            Self::Screenshot(body) => serde_json::to_value(body),
            Self::Checkpoint(body) => serde_json::to_value(body),
            Self::Artifact(body) => serde_json::to_value(body),
            Self::SessionReleased(body) => serde_json::to_value(body),
            Self::SessionKilled(body) => serde_json::to_value(body),
            Self::ActionRefused(body) => serde_json::to_value(body),
            Self::ClipboardAccess(body) => serde_json::to_value(body),
            Self::WorkspaceLaunched(body) => serde_json::to_value(body),
            Self::ScreenshotGateDecision(body) => serde_json::to_value(body),
            Self::ScreenshotReviewDecision(body) => serde_json::to_value(body),
            Self::ApprovalIssued(body) => serde_json::to_value(body),
            Self::ApprovedAction(body) => serde_json::to_value(body),
            Self::ObserverObservation(body) => serde_json::to_value(body),
        };
        result.map_err(|error| EvidenceError::Canonical(error.to_string()))
    }

    pub(crate) fn from_value(kind: RecordKind, value: Value) -> Result<Self, EvidenceError> {
        let path = "$.payload.body";
        Ok(match kind {
            RecordKind::SessionStarted => {
                Self::SessionStarted(strict::from_value_exact(value, path)?)
            }
            RecordKind::ActionAccepted => {
                Self::ActionAccepted(strict::from_value_exact(value, path)?)
            }
            RecordKind::ActionReceipt => {
                Self::ActionReceipt(strict::from_value_exact(value, path)?)
            }
            RecordKind::Screenshot => Self::Screenshot(strict::from_value_exact(value, path)?),
            RecordKind::Checkpoint => Self::Checkpoint(strict::from_value_exact(value, path)?),
            RecordKind::Artifact => Self::Artifact(strict::from_value_exact(value, path)?),
            RecordKind::SessionReleased => {
                Self::SessionReleased(strict::from_value_exact(value, path)?)
            }
            RecordKind::SessionKilled => {
                Self::SessionKilled(strict::from_value_exact(value, path)?)
            }
            RecordKind::ActionRefused => {
                Self::ActionRefused(strict::from_value_exact(value, path)?)
            }
            RecordKind::ClipboardAccess => {
                Self::ClipboardAccess(strict::from_value_exact(value, path)?)
            }
            RecordKind::WorkspaceLaunched => {
                Self::WorkspaceLaunched(strict::from_value_exact(value, path)?)
            }
            RecordKind::ScreenshotGateDecision => {
                Self::ScreenshotGateDecision(Box::new(strict::from_value_exact(value, path)?))
            }
            RecordKind::ScreenshotReviewDecision => {
                Self::ScreenshotReviewDecision(strict::from_value_exact(value, path)?)
            }
            RecordKind::ApprovalIssued => {
                Self::ApprovalIssued(strict::from_value_exact(value, path)?)
            }
            RecordKind::ApprovedAction => {
                Self::ApprovedAction(strict::from_value_exact(value, path)?)
            }
            RecordKind::ObserverObservation => {
                Self::ObserverObservation(strict::from_value_exact(value, path)?)
            }
        })
    }

    /// Checks digests are 64 lowercase hex characters and file names are single components.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::SessionStarted(body) => {
                if let Some(digest) = &body.policy_sha256 {
                    check_digest("policy_sha256", digest)?;
                }
                check_text("lease_id", &body.lease_id)
            }
            Self::ActionAccepted(body) => {
                check_text("request_id", &body.request_id)?;
                check_text("action_type", &body.action_type)?;
                check_digest("request_sha256", &body.request_sha256)
            }
            Self::ActionReceipt(body) => {
                if let Some(digest) = &body.screenshot_sha256 {
                    check_digest("screenshot_sha256", digest)?;
                }
                check_digest("events.sha256", &body.events.sha256)?;
                check_digest("frame_events.sha256", &body.frame_events.sha256)
            }
            Self::Screenshot(body) => check_digest("sha256", &body.sha256),
            Self::Checkpoint(body) => {
                check_file_name("file_name", &body.file_name)?;
                check_digest("sha256", &body.sha256)
            }
            Self::Artifact(body) => {
                check_file_name("name", &body.name)?;
                check_digest("sha256", &body.sha256)
            }
            Self::SessionReleased(body) => {
                check_digest("events.sha256", &body.events.sha256)?;
                check_digest("frame_events.sha256", &body.frame_events.sha256)
            }
            Self::SessionKilled(body) => {
                check_text("record_id", &body.record_id)?;
                check_text("control_id", &body.control_id)?;
                check_text("stage", &body.stage)?;
                check_text("outcome", &body.outcome)?;
                check_text("source", &body.source)?;
                check_text("reason", &body.reason)
            }
            Self::ActionRefused(body) => {
                check_text("record_id", &body.record_id)?;
                check_exact("control_id", &body.control_id, DENIAL_CONTROL_ID)?;
                check_exact("stage", &body.stage, DENIAL_STAGE)?;
                check_exact("outcome", &body.outcome, DENIAL_OUTCOME)?;
                if let Some(request_id) = &body.request_id {
                    check_text("request_id", request_id)?;
                }
                check_text("error_code", &body.error_code)
            }
            Self::ClipboardAccess(body) => {
                if !["read", "write"].contains(&body.direction.as_str()) {
                    return Err("direction must be read or write".to_string());
                }
                let outcomes = ["requested", "done", "refused", "failed", "unknown"];
                if !outcomes.contains(&body.outcome.as_str()) {
                    return Err(format!("outcome must be one of {outcomes:?}"));
                }
                if let Some(code) = &body.error_code {
                    check_text("error_code", code)?;
                }
                match &body.sha256 {
                    Some(digest) => check_digest("sha256", digest),
                    None => Ok(()),
                }
            }
            Self::WorkspaceLaunched(body) => {
                if !["on", "off"].contains(&body.sandbox.as_str()) {
                    return Err("sandbox must be on or off".to_string());
                }
                if body.process_population_count != body.processes.len() as u64 {
                    return Err("process_population_count is not the number of processes".into());
                }
                check_digest("process_population_sha256", &body.process_population_sha256)?;
                match &body.workspace_facts_sha256 {
                    Some(digest) => check_digest("workspace_facts_sha256", digest),
                    None => Ok(()),
                }
            }
            Self::ScreenshotGateDecision(body) => body.validate(),
            Self::ScreenshotReviewDecision(body) => body.validate(),
            Self::ApprovalIssued(body) => body.validate(),
            Self::ApprovedAction(body) => body.validate(),
            Self::ObserverObservation(body) => body.validate(),
        }
    }
}

/// One record as the journal holds it, before or after signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Position in the journal: 0, 1, 2, ...
    pub seq: u64,
    /// SHA-256 (hex) of the previous envelope's JCS bytes; [`ZERO_SHA256`] for `seq` 0.
    pub prev_sha256: String,
    /// The session the journal belongs to.
    pub session_id: String,
    /// Wall-clock time of the record, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Whether the session's desktop ran in its sandbox; signed as `"sandbox": "off"` on every
    /// record of an unsandboxed session, left out when on.
    pub sandbox: SandboxMode,
    /// Whether the session's desktop ran under its resource limits; signed as
    /// `"limits": "off"` on every record of a session of a broker started with
    /// `--unsafe-no-limits`, left out when enforced.
    pub limits: LimitsMode,
    /// What happened.
    pub body: RecordBody,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordPayload {
    schema_version: String,
    seq: u64,
    prev_sha256: String,
    session_id: String,
    at_ms: u64,
    #[serde(default, skip_serializing_if = "SandboxMode::is_on")]
    sandbox: SandboxMode,
    #[serde(default, skip_serializing_if = "LimitsMode::is_enforced")]
    limits: LimitsMode,
    kind: RecordKind,
    body: Value,
}

impl Record {
    /// The record's kind.
    pub fn kind(&self) -> RecordKind {
        self.body.kind()
    }

    /// The signed payload of this record.
    pub fn to_payload(&self) -> Result<Value, EvidenceError> {
        let payload = RecordPayload {
            schema_version: RECORD_SCHEMA.to_string(),
            seq: self.seq,
            prev_sha256: self.prev_sha256.clone(),
            session_id: self.session_id.clone(),
            at_ms: self.at_ms,
            sandbox: self.sandbox,
            limits: self.limits,
            kind: self.kind(),
            body: self.body.to_value()?,
        };
        serde_json::to_value(&payload).map_err(|error| EvidenceError::Canonical(error.to_string()))
    }

    /// Reads a payload strictly: exact keys, known schema, typed body of the named kind.
    pub fn from_payload(payload: Value) -> Result<Self, EvidenceError> {
        let payload: RecordPayload = strict::from_value_exact(payload, "$.payload")?;
        if payload.schema_version != RECORD_SCHEMA {
            return Err(EvidenceError::strict(
                "$.payload.schema_version",
                crate::StrictJsonProblem::NotExact(format!(
                    "schema {:?}, expected {RECORD_SCHEMA:?}",
                    payload.schema_version
                )),
            ));
        }
        Ok(Self {
            seq: payload.seq,
            prev_sha256: payload.prev_sha256,
            session_id: payload.session_id,
            at_ms: payload.at_ms,
            sandbox: payload.sandbox,
            limits: payload.limits,
            body: RecordBody::from_value(payload.kind, payload.body)?,
        })
    }
}
