//! The per-rollout results document (`rollout.json`) and its trace of batches.
//!
//! Paths inside a record are relative to the rollout's own directory, so a run folder can be
//! moved or served as static files. The trace keeps every turn as the agent answered it (the raw
//! `actions` array, so [`crate::ReplayAgent`] can re-run it) plus, per executed item, its request
//! id, action index, receipt and saved frame.

use desk_cad::TaskScore;
use desk_contract::api::Receipt;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentInfo, BatchDelivery, ModelSaid, TokenUsage};

desk_contract::wire_enum! {
    /// How a rollout ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum RolloutStatus {
        /// The agent sent `done` as the last item of a delivered batch.
        Done = "done",
        /// The agent answered without a tool call.
        NoToolCall = "no_tool_call",
        /// Every action of the budget was used.
        ActionBudgetExhausted = "action_budget_exhausted",
        /// The wall-time budget ran out.
        WallTimeExhausted = "wall_time_exhausted",
        /// A broker failure during a batch (or a non-increasing frame); the batch was not re-sent.
        FailedClosed = "failed_closed",
        /// The agent itself failed (model API unreachable, replay file exhausted, …).
        AgentFailed = "agent_failed",
        /// Lease or reset failed before the handoff; the agent never played.
        SetupFailed = "setup_failed",
    }
}

impl RolloutStatus {
    /// Whether the rollout was ended by the infrastructure (broker or desktop), not the agent:
    /// `setup_failed` and `failed_closed`. Such a rollout is `infra_error`: excluded from the
    /// mean score and counted separately.
    pub fn is_infra_error(self) -> bool {
        matches!(
            self,
            RolloutStatus::SetupFailed | RolloutStatus::FailedClosed
        )
    }
}

/// What the agent answered in one turn, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnRecord {
    /// A `computer_action` tool call.
    Actions {
        /// The tool call id.
        call_id: String,
        /// The batch exactly as the agent sent it.
        actions: Vec<serde_json::Value>,
    },
    /// No tool call.
    NoToolCall {
        /// What the model said.
        text: String,
    },
    /// An unreadable tool call.
    Malformed {
        /// The call id, when present.
        call_id: Option<String>,
        /// What was wrong.
        error: String,
    },
}

/// One executed (or attempted) item of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceItem {
    /// Position in the batch (0-based).
    pub item_idx: usize,
    /// The deterministic request id, `{rollout_id}-t{turn}-i{item}`.
    pub request_id: String,
    /// The expected (and, on success, received) action index.
    pub action_index: u64,
    /// The action variant.
    pub action_type: String,
    /// The agent's intent.
    pub intent: String,
    /// The broker's receipt, when the request succeeded.
    pub receipt: Option<Receipt>,
    /// The post-action frame, relative to the rollout directory.
    pub frame: Option<String>,
    /// The frame's screenshot sequence.
    pub frame_sequence: Option<u64>,
    /// The frame's SHA-256.
    pub frame_sha256: Option<String>,
    /// The failure, when the request failed.
    pub error: Option<String>,
}

/// One turn of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceTurn {
    /// 1-based turn number.
    pub turn: u32,
    /// Milliseconds since the handoff when the agent answered.
    pub answered_at_ms: u64,
    /// The answer.
    pub outcome: TurnRecord,
    /// Items sent to the broker (empty for refused batches).
    pub items: Vec<TraceItem>,
    /// The aggregate delivery shown to the agent next (absent when the rollout ended mid-batch).
    pub delivery: Option<BatchDelivery>,
    /// The frame the agent saw next, relative to the rollout directory.
    pub final_frame: Option<String>,
    /// Tokens of this turn.
    pub usage: TokenUsage,
    /// Vendor safety checks this answer raised and the adapter acknowledged (omitted when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acknowledged_safety_checks: Vec<serde_json::Value>,
    /// What the model wrote beside its answer: text and reasoning (omitted when nothing).
    #[serde(default, skip_serializing_if = "ModelSaid::is_empty")]
    pub said: ModelSaid,
}

/// Effective budgets of a rollout (after clamping) and the declared ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveBudgets {
    /// Actions allowed (declared value clamped to the 5,000 ceiling).
    pub max_actions: u64,
    /// Wall time allowed from the handoff, in seconds.
    pub wall_time_s: u64,
    /// The task's declared action budget.
    pub declared_max_actions: u64,
    /// The task's declared wall time.
    pub declared_wall_time_s: u64,
}

/// The saved artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    /// Path relative to the rollout directory.
    pub path: String,
    /// SHA-256 of the bytes.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// `already_saved` or `controller_save`.
    pub save_method: String,
}

/// Files of a rollout, relative to its directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutPaths {
    /// `events.json` (NDJSON), when retrieved.
    pub events: Option<String>,
    /// `frame_events.json` (NDJSON), when retrieved.
    pub frame_events: Option<String>,
    /// Folder of every screenshot PNG, named by sequence.
    pub frames_dir: String,
    /// The reference image copy.
    pub reference: Option<String>,
    /// The candidate render, when the artifact was readable.
    pub candidate_render: Option<String>,
    /// The candidate drawn over the gold (matched green, gold-only red, candidate-only blue),
    /// when the artifact was readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<String>,
    /// 3D: the gold's `Layout1` as the judge drew it in the scoring run (`candidate_render`
    /// is the candidate's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_sheet: Option<String>,
    /// 3D: the gold part, isometric, drawn by the judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_part: Option<String>,
    /// 3D: the candidate part, isometric, drawn by the judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_part: Option<String>,
}

/// The per-rollout results document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutRecord {
    /// Benchmark contract version.
    pub contract_version: String,
    /// Corpus version.
    pub corpus_version: String,
    /// The deskbroker version that ran the broker.
    pub broker_version: String,
    /// App, X server, window manager, OS and deskbroker versions of the run.
    #[serde(default)]
    pub versions: crate::versions::SoftwareVersions,
    /// The rollout id (prefix of every request id).
    pub rollout_id: String,
    /// The lease's attempt id.
    pub attempt_id: String,
    /// The broker session, when leased.
    pub session_id: Option<String>,
    /// The task.
    pub task_id: String,
    /// `2d` or `3d`.
    pub drawing_type: desk_cad::DrawingType,
    /// The task's level.
    pub level: desk_cad::Level,
    /// The task's split.
    pub split: desk_cad::Split,
    /// The agent and model.
    pub agent: AgentInfo,
    /// Budgets in force.
    pub budgets: EffectiveBudgets,
    /// Actions executed (every sub-action counts).
    pub actions_used: u64,
    /// Turns played.
    pub n_turns: u32,
    /// Batches refused before execution (including malformed tool calls).
    pub n_rejected_batches: u32,
    /// Milliseconds from the handoff to the end of play.
    pub wall_time_ms: u64,
    /// Milliseconds of the whole rollout, lease to release.
    pub total_ms: u64,
    /// Token usage, summed; not scored.
    pub tokens: TokenUsage,
    /// How it ended.
    pub status: RolloutStatus,
    /// Ended by the infrastructure (`status.is_infra_error()`): the score is not a result of the
    /// agent and is excluded from the mean.
    #[serde(default)]
    pub infra_error: bool,
    /// Why, when it did not end with `done`.
    pub status_detail: Option<String>,
    /// The workspace the rollout ran in, as the broker measured it at handoff: `sandbox` is
    /// `on` or `off` (`serve --unsafe-no-sandbox`); `None` for a fake broker.
    #[serde(default)]
    pub workspace: Option<desk_contract::desktop::WorkspaceFacts>,
    /// The signed workspace policy the rollout's session was leased under (its digest, from the
    /// lease answer); `None` when no lease was granted or the broker predates policies.
    #[serde(default)]
    pub policy_sha256: Option<String>,
    /// The judge's report on the saved artifact: the 2D or the 3D judge's, by task kind.
    pub score: TaskScore,
    /// The artifact, when retrieved.
    pub artifact: Option<ArtifactInfo>,
    /// Files of the rollout.
    pub paths: RolloutPaths,
    /// Every turn.
    pub trace: Vec<TraceTurn>,
}

/// The file name of a rollout's record inside its directory.
pub const ROLLOUT_FILE: &str = "rollout.json";
