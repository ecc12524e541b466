//! State every adapter shares for one rollout: the image scale, the prepared reference image,
//! the system prompt, the pending tool result, and which screenshots are still inlined.
//!
//! Invariant: at most `keep_screenshots` screenshots stay inlined as images in the conversation;
//! older ones are swapped for a text placeholder in place, so the conversation keeps its shape
//! (every tool call still has its result) while requests stay bounded.

use std::collections::VecDeque;

use base64::Engine as _;
use desk_harness::{AgentError, DeliveryStatus, Observation, TaskBrief};
use serde_json::Value;

use crate::config::{ModelConfig, ModelError};
use crate::prompt::{self, PendingResult};
use crate::scale::{ImageScale, resize_png};

/// The largest side of the reference image sent to a model.
const MAX_REFERENCE_SIDE: u32 = 2048;

/// Placeholder text for a screenshot dropped from the conversation.
pub(crate) const OMITTED_SCREENSHOT: &str = "[older screenshot omitted]";

/// Per-rollout state shared by the adapters.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) scale: ImageScale,
    pub(crate) system: String,
    pub(crate) task_text: String,
    pub(crate) reference_b64: String,
    pub(crate) pending: PendingResult,
    /// The last screenshot at full display resolution (what `zoom` crops).
    pub(crate) last_frame: Vec<u8>,
    keep_screenshots: usize,
    /// (conversation item index, JSON pointer inside it, placeholder) of inlined screenshots.
    inlined: VecDeque<(usize, String, Value)>,
}

impl Session {
    pub(crate) fn start(brief: &TaskBrief, config: &ModelConfig) -> Result<Session, ModelError> {
        let scale = ImageScale::fit(
            brief.display,
            config.max_image_width,
            config.max_image_height,
        );
        let reference_scale = ImageScale::fit(
            desk_contract::DisplaySize {
                width: brief.reference.width,
                height: brief.reference.height,
            },
            MAX_REFERENCE_SIDE,
            MAX_REFERENCE_SIDE,
        );
        let reference = if reference_scale.is_identity() {
            brief.reference.png.clone()
        } else {
            resize_png(&brief.reference.png, reference_scale.image())?
        };
        Ok(Session {
            scale,
            system: prompt::system_prompt(brief, &scale, config.tool_mode),
            task_text: prompt::task_text(brief),
            reference_b64: base64::engine::general_purpose::STANDARD.encode(reference),
            pending: PendingResult::default(),
            last_frame: Vec::new(),
            keep_screenshots: config.keep_screenshots.max(1),
            inlined: VecDeque::new(),
        })
    }

    /// The observation's screenshot at the model's image size, base64-encoded PNG; the
    /// full-resolution frame is kept as `last_frame`.
    pub(crate) fn screenshot_b64(
        &mut self,
        observation: &Observation,
    ) -> Result<String, ModelError> {
        self.last_frame.clone_from(&observation.screenshot.png);
        let png = resize_png(&observation.screenshot.png, self.scale.image())?;
        Ok(base64::engine::general_purpose::STANDARD.encode(png))
    }

    /// Records that `conversation[item_idx]` holds a screenshot at `pointer`, and replaces the
    /// oldest inlined screenshots by `placeholder` beyond the limit.
    pub(crate) fn inline_screenshot(
        &mut self,
        conversation: &mut [Value],
        item_idx: usize,
        pointer: &str,
        placeholder: Value,
    ) {
        self.inlined
            .push_back((item_idx, pointer.to_string(), placeholder));
        while self.inlined.len() > self.keep_screenshots {
            let Some((old_idx, old_pointer, old_placeholder)) = self.inlined.pop_front() else {
                break;
            };
            if let Some(slot) = conversation
                .get_mut(old_idx)
                .and_then(|item| item.pointer_mut(&old_pointer))
            {
                *slot = old_placeholder;
            }
        }
    }

    /// Takes the pending result for this turn, leaving an empty one.
    pub(crate) fn take_pending(&mut self) -> PendingResult {
        std::mem::take(&mut self.pending)
    }
}

/// Converts a crate error into the harness's agent error.
pub(crate) fn agent_error(agent: &str, error: impl std::fmt::Display) -> AgentError {
    AgentError {
        agent: agent.to_string(),
        message: error.to_string(),
    }
}

/// The error for a turn before `start`.
pub(crate) fn not_started(agent: &str) -> AgentError {
    agent_error(agent, "turn called before start")
}

/// A short excerpt of model text for intents and logs.
pub(crate) fn excerpt(text: &str, n_chars: usize) -> String {
    let trimmed = text.trim();
    let mut out: String = trimmed.chars().take(n_chars).collect();
    if trimmed.chars().count() > n_chars {
        out.push('…');
    }
    out
}

/// Reads a JSON number as u64 (absent or malformed counts as 0).
pub(crate) fn count(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// Whether the previous batch was refused before any item ran.
pub(crate) fn rejected(observation: &Observation) -> bool {
    observation
        .delivery
        .as_ref()
        .is_some_and(|delivery| delivery.status == DeliveryStatus::Rejected)
}
