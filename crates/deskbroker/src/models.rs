//! Model agents for `deskbroker bench run`: the flags that configure a model adapter
//! (`desk-models`) and the per-task factory the harness calls.
//!
//! API keys are read from the environment variable named by `--api-key-env` (by default the
//! vendor's usual one); they never appear on the command line, in logs or in results.

use std::time::Duration;

use clap::{Args, ValueEnum};
use desk_cad::Task;
use desk_harness::{Agent, AgentError};
use desk_models::{ModelConfig, Provider, ToolMode};

/// Which model API to talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModelApi {
    /// OpenAI Responses API.
    OpenaiResponses,
    /// OpenAI-compatible Chat Completions (also vLLM and other local servers).
    ChatCompletions,
    /// Anthropic Messages API.
    Anthropic,
}

/// How the model sees the computer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ToolArg {
    /// One `computer_action` function tool taking a batch of normalized actions.
    Function,
    /// The vendor's native computer-use tool, mapped onto the same normalized actions.
    Native,
}

/// Model settings for `--agent model`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ModelArgs {
    /// The model API.
    #[arg(long, value_enum)]
    pub(crate) api: Option<ModelApi>,
    /// The model name, e.g. the vendor's model id or a local server's served model.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Base URL of the API [default: the vendor's public endpoint].
    #[arg(long)]
    pub(crate) base_url: Option<String>,
    /// Reasoning effort passed to models that take one (e.g. low, medium, high).
    #[arg(long)]
    pub(crate) reasoning_effort: Option<String>,
    /// Environment variable holding the API key [default: OPENAI_API_KEY or ANTHROPIC_API_KEY];
    /// pass an empty string for a local server without authentication.
    #[arg(long)]
    pub(crate) api_key_env: Option<String>,
    /// Function tool or the vendor's native computer tool.
    #[arg(long, value_enum, default_value = "function")]
    pub(crate) tool: ToolArg,
    /// The native tool's type, overriding the choice by model (e.g. `computer_20250124`,
    /// `computer_20251124`, `computer_toolset_20260801`; `computer` for OpenAI). See
    /// docs/models.md.
    #[arg(long)]
    pub(crate) native_tool: Option<String>,
    /// Screenshot image detail [default: `original` for Responses, `high` for Chat Completions].
    #[arg(long)]
    pub(crate) image_detail: Option<String>,
    /// Largest image width shown to the model; larger screenshots are downscaled and the
    /// model's coordinates mapped back exactly once.
    #[arg(long, default_value_t = 1280)]
    pub(crate) max_image_width: u32,
    /// Largest image height shown to the model.
    #[arg(long, default_value_t = 800)]
    pub(crate) max_image_height: u32,
    /// Retries of model calls that failed without effect (connect errors, 429, 5xx).
    #[arg(long, default_value_t = 4)]
    pub(crate) max_retries: u32,
    /// Per-call timeout in seconds.
    #[arg(long, default_value_t = 300)]
    pub(crate) request_timeout_secs: u64,
}

impl ModelArgs {
    /// The adapter configuration; errors name the missing flag.
    pub(crate) fn config(&self) -> anyhow::Result<ModelConfig> {
        let api = self
            .api
            .ok_or_else(|| anyhow::anyhow!("--agent model needs --api"))?;
        let model = self
            .model
            .clone()
            .ok_or_else(|| anyhow::anyhow!("--agent model needs --model"))?;
        let provider = match api {
            ModelApi::OpenaiResponses => Provider::OpenAiResponses,
            ModelApi::ChatCompletions => Provider::ChatCompletions,
            ModelApi::Anthropic => Provider::Anthropic,
        };
        let mut config = ModelConfig::new(provider, model);
        if let Some(base_url) = &self.base_url {
            config.base_url = base_url.clone();
        }
        if let Some(env) = &self.api_key_env {
            config.api_key_env = env.clone();
        }
        config.reasoning_effort = self.reasoning_effort.clone();
        config.tool_mode = match self.tool {
            ToolArg::Function => ToolMode::Function,
            ToolArg::Native => ToolMode::Native,
        };
        config.native_tool = self.native_tool.clone();
        config.image_detail = self.image_detail.clone();
        config.max_image_width = self.max_image_width;
        config.max_image_height = self.max_image_height;
        config.max_retries = self.max_retries;
        config.request_timeout = Duration::from_secs(self.request_timeout_secs);
        Ok(config)
    }
}

/// A factory that builds a fresh adapter (fresh conversation) for every task.
pub(crate) fn model_factory(
    config: ModelConfig,
) -> impl FnMut(&Task) -> Result<Box<dyn Agent>, AgentError> {
    move |_task: &Task| {
        desk_models::build_agent(config.clone()).map_err(|error| AgentError {
            agent: "model".to_string(),
            message: error.to_string(),
        })
    }
}
