//! The agent seam: what an agent sees each turn and what it answers.
//!
//! The harness calls [`Agent::start`] once with the task brief, then [`Agent::turn`] with a fresh
//! observation until the agent sends `done`, stops calling the tool, or a budget runs out. One
//! turn answers with exactly one `computer_action` tool call holding a non-empty ordered batch of
//! normalized actions (JSON objects of the broker's action schema, each with an `intent`), or
//! with no tool call at all. Coordinates in the batch are screen pixels of the live display: an
//! adapter that showed the model a downscaled image maps them back exactly once, before
//! answering.

use std::future::Future;
use std::pin::Pin;

use desk_contract::DisplaySize;
use serde::{Deserialize, Serialize};

/// A boxed, sendable future, so [`Agent`] stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A PNG image with its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedImage {
    /// PNG bytes at full display resolution.
    pub png: Vec<u8>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The broker's screenshot sequence number (0 for the reference image).
    pub sequence: u64,
    /// Lowercase hex SHA-256 of `png`.
    pub sha256: String,
}

/// What the agent is told once, before the first turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskBrief {
    /// Opaque task id.
    pub task_id: String,
    /// The task's prompt.
    pub prompt: String,
    /// The dimensioned reference drawing.
    pub reference: ObservedImage,
    /// The live desktop's size: valid coordinates are `0..width` × `0..height`.
    pub display: DisplaySize,
    /// The rollout's action budget (every sub-action counts).
    pub max_actions: u64,
    /// The rollout's wall-time budget in seconds, counted from the verified handoff.
    pub wall_time_s: u64,
}

/// How the previous batch was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Every item was injected (delivery, not semantic success).
    InputInjected,
    /// The batch was refused before any item ran (validation, budget, `done` not last).
    Rejected,
}

/// The aggregate outcome of the previous batch, shown to the model with the final screenshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchDelivery {
    /// Delivered or refused.
    pub status: DeliveryStatus,
    /// Items executed.
    pub n_executed: u64,
    /// A short human-readable summary (or the refusal reason).
    pub message: String,
    /// SHA-256 of the screenshot before the batch.
    pub batch_start_sha256: String,
    /// SHA-256 of the screenshot after the batch.
    pub final_sha256: String,
    /// Whether the two differ.
    pub screen_changed: bool,
}

/// One turn's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// 1 for the first turn.
    pub turn: u32,
    /// The current screenshot (after the previous batch; the handoff frame on turn 1).
    pub screenshot: ObservedImage,
    /// The previous batch's outcome; `None` on turn 1.
    pub delivery: Option<BatchDelivery>,
    /// Actions left in the budget.
    pub remaining_actions: u64,
    /// Milliseconds of wall time left.
    pub remaining_ms: u64,
}

/// Token usage of one model call; recorded, never scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt/input tokens.
    pub input_tokens: u64,
    /// Completion/output tokens.
    pub output_tokens: u64,
    /// Reasoning tokens when reported separately.
    pub reasoning_tokens: u64,
}

/// What a model wrote beside (or instead of) its tool call in one turn, for the report: its
/// visible text and its reasoning as the API returned it (a summary for OpenAI Responses,
/// `reasoning_content` for Chat Completions servers, thinking blocks for Anthropic). Never sent
/// to the desktop.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelSaid {
    /// Visible text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Reasoning text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
}

impl ModelSaid {
    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.reasoning.is_none()
    }

    /// Adds `other` after what is here (a turn may take several model calls).
    pub fn extend(&mut self, other: ModelSaid) {
        fn join(into: &mut Option<String>, more: Option<String>) {
            *into = match (into.take(), more) {
                (Some(first), Some(more)) => Some(format!("{first}\n{more}")),
                (first, more) => first.or(more),
            };
        }
        join(&mut self.text, other.text);
        join(&mut self.reasoning, other.reasoning);
    }

    /// `parts` joined by newlines, or `None` when all are empty.
    pub fn joined<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
        let parts: Vec<&str> = parts
            .into_iter()
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// What an agent answered.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// One `computer_action` tool call.
    Actions {
        /// The tool call id, echoed in the next observation's tool result.
        call_id: String,
        /// Normalized actions as JSON objects; the harness validates every one.
        actions: Vec<serde_json::Value>,
    },
    /// The model answered without a tool call; the rollout ends.
    NoToolCall {
        /// What it said.
        text: String,
    },
    /// The model's tool call could not be read (bad JSON, wrong tool, several calls).
    Malformed {
        /// The call id, when one was present.
        call_id: Option<String>,
        /// What was wrong; sent back to the model as the tool result.
        error: String,
    },
}

/// One turn's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The answer.
    pub outcome: TurnOutcome,
    /// Tokens used by this turn's model call(s).
    pub usage: TokenUsage,
    /// Vendor safety checks raised by this answer (OpenAI's `pending_safety_checks`), exactly as
    /// sent; the adapter acknowledges them in its next request (the desktop is a disposable
    /// sandbox) and the rollout record keeps them.
    pub acknowledged_safety_checks: Vec<serde_json::Value>,
    /// What the model wrote beside its answer (empty for scripted agents).
    pub said: ModelSaid,
}

/// Who the agent is, for results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// `oracle`, `replay`, `openai-responses`, `chat-completions`, `anthropic`, ….
    pub agent: String,
    /// The model name, when a model is involved.
    pub model: Option<String>,
}

/// An agent failure (model API unreachable after retries, replay file unreadable, …).
#[derive(Debug, thiserror::Error)]
#[error("agent {agent} failed: {message}")]
pub struct AgentError {
    /// The agent's name.
    pub agent: String,
    /// What went wrong; never contains credentials.
    pub message: String,
}

/// An agent that plays CAD tasks through `computer_action` batches.
pub trait Agent: Send {
    /// Names the agent and model.
    fn info(&self) -> AgentInfo;

    /// Receives the task once, before the first turn.
    fn start<'a>(&'a mut self, brief: &'a TaskBrief) -> BoxFuture<'a, Result<(), AgentError>>;

    /// Produces one turn from the current observation.
    fn turn<'a>(
        &'a mut self,
        observation: &'a Observation,
    ) -> BoxFuture<'a, Result<Turn, AgentError>>;
}
