//! Model adapters for the benchmark harness: OpenAI Responses, OpenAI-compatible Chat
//! Completions and Anthropic Messages, each behind [`desk_harness::Agent`].
//!
//! [`build_agent`] turns a [`ModelConfig`] into an agent. Each adapter keeps its conversation
//! client-side: the system prompt (task, image size, the contract's batching rule), the task
//! prompt with the reference image, then per turn the tool result (the batch's delivery summary
//! or the malformed-call error) and the new screenshot.
//!
//! Invariants kept here:
//! - Coordinates are mapped from the shown image to screen pixels exactly once, when a turn is
//!   answered (`scale`), and nowhere else.
//! - Only model calls that failed with no effect are retried (`http`); actions never are.
//! - The API key is read from the configured environment variable into one sensitive header and
//!   appears in no log, error or trace.
//! - One model response is one turn: exactly one tool call gives a batch, none gives
//!   `NoToolCall`, several (or unreadable arguments) give `Malformed`, whose error is sent back
//!   as that call's tool result on the next turn.
//!
//! Native mode maps the vendor computer tools onto normalized actions; see `native_openai` and
//! `native_anthropic` for the per-action decisions.
#![forbid(unsafe_code)]

mod anthropic;
mod chat;
mod config;
mod function;
mod http;
mod native;
mod native_anthropic;
mod native_openai;
mod prompt;
mod protocol;
mod responses;
pub mod scale;
mod session;

use desk_harness::Agent;

use crate::protocol::ProtocolAgent;

pub use config::{ModelConfig, ModelError, Provider, ToolMode};
pub use scale::{ImagePoint, ImageScale, ScreenXy};

/// Builds the adapter for `config`, reading the API key from `config.api_key_env`.
pub fn build_agent(config: ModelConfig) -> Result<Box<dyn Agent>, ModelError> {
    build_agent_with_env(config, |name| std::env::var(name).ok())
}

/// Like [`build_agent`], with the environment lookup injected (tests, embedding).
pub fn build_agent_with_env(
    config: ModelConfig,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Box<dyn Agent>, ModelError> {
    let key = if config.api_key_env.is_empty() {
        None
    } else {
        let value = lookup(&config.api_key_env).filter(|value| !value.is_empty());
        let Some(value) = value else {
            return Err(ModelError::MissingKey {
                env: config.api_key_env.clone(),
            });
        };
        Some(config::ApiKey::new(value))
    };
    if config.model.trim().is_empty() {
        return Err(ModelError::Config("the model name is empty".into()));
    }
    if config.max_image_width == 0 || config.max_image_height == 0 {
        return Err(ModelError::Config(
            "max image size must be at least 1x1".into(),
        ));
    }
    let agent: Box<dyn Agent> = match (config.provider, config.tool_mode) {
        (Provider::OpenAiResponses, _) => {
            Box::new(ProtocolAgent(responses::ResponsesAgent::new(config, key)?))
        }
        (Provider::ChatCompletions, ToolMode::Function) => {
            Box::new(ProtocolAgent(chat::ChatAgent::new(config, key)?))
        }
        (Provider::ChatCompletions, ToolMode::Native) => {
            return Err(ModelError::Config(
                "chat completions has no native computer tool; use the function tool".into(),
            ));
        }
        (Provider::Anthropic, _) => {
            Box::new(ProtocolAgent(anthropic::AnthropicAgent::new(config, key)?))
        }
    };
    Ok(agent)
}
