//! Model configuration and the crate's error type.
//!
//! A [`ModelConfig`] names the provider, endpoint, model and limits of one run. The API key is
//! never part of it: the config names the environment variable that holds the key, and the key
//! itself lives only in an [`ApiKey`], whose `Debug` is redacted and which no error, log line or
//! trace ever prints.

use std::time::Duration;

/// Which wire format the model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Responses API (`POST {base_url}/responses`).
    OpenAiResponses,
    /// OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`), e.g. vLLM.
    ChatCompletions,
    /// Anthropic Messages API (`POST {base_url}/v1/messages`).
    Anthropic,
}

impl Provider {
    /// The agent name recorded in results.
    pub fn agent_name(self) -> &'static str {
        match self {
            Provider::OpenAiResponses => "openai-responses",
            Provider::ChatCompletions => "chat-completions",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The vendor's public endpoint, as its SDKs spell the base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAiResponses | Provider::ChatCompletions => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable the vendor's SDKs read the key from.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            Provider::OpenAiResponses | Provider::ChatCompletions => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// How the model is offered the desktop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ToolMode {
    /// One function tool, `computer_action`, taking a batch of normalized actions.
    #[default]
    Function,
    /// The vendor's own computer-use tool, mapped onto normalized actions.
    Native,
}

/// Everything one model adapter needs, except the key itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The wire format.
    pub provider: Provider,
    /// Base URL: `https://api.openai.com/v1` style for OpenAI and Chat Completions servers,
    /// `https://api.anthropic.com` style for Anthropic.
    pub base_url: String,
    /// The model name sent in every request.
    pub model: String,
    /// Reasoning effort (`reasoning.effort`, `reasoning_effort`, or Anthropic's
    /// `output_config.effort` with adaptive thinking); omitted when `None`.
    pub reasoning_effort: Option<String>,
    /// The environment variable holding the API key. Empty means "send no key" (local servers).
    pub api_key_env: String,
    /// Largest screenshot width shown to the model; larger displays are downscaled.
    pub max_image_width: u32,
    /// Largest screenshot height shown to the model.
    pub max_image_height: u32,
    /// Function tool or the vendor's native computer tool.
    pub tool_mode: ToolMode,
    /// The native tool's type, overriding the default (`computer` for OpenAI,
    /// `computer_20250124` for Anthropic).
    pub native_tool: Option<String>,
    /// Retries of model calls that failed with no effect (connect errors, timeouts before a
    /// response, HTTP 429/500/502/503/529).
    pub max_retries: u32,
    /// The first retry's delay; doubled per retry, capped at 30 s (or `retry-after`).
    pub retry_base_delay: Duration,
    /// Timeout of one model request, response body included.
    pub request_timeout: Duration,
    /// Output-token cap; Anthropic requires one (16,384 when `None`), OpenAI gets it only when set.
    pub max_output_tokens: Option<u32>,
    /// How many of the most recent screenshots stay in the conversation as images; older ones are
    /// replaced by a text placeholder. The reference image always stays.
    pub keep_screenshots: usize,
    /// Image detail for screenshots. `None` means `original` for the Responses API (its
    /// `ImageDetail` allows `high`, `low`, `auto`, `original`; vendor guidance for computer use is
    /// `original`) and `high` for Chat Completions (whose image part allows only `auto`, `low`,
    /// `high`).
    pub image_detail: Option<String>,
}

impl ModelConfig {
    /// A config with the provider's public endpoint, key variable and conservative defaults:
    /// 1280x800 images, function tool, 4 retries from 1 s, 300 s timeout, last 3 screenshots.
    pub fn new(provider: Provider, model: impl Into<String>) -> ModelConfig {
        ModelConfig {
            provider,
            base_url: provider.default_base_url().to_string(),
            model: model.into(),
            reasoning_effort: None,
            api_key_env: provider.default_api_key_env().to_string(),
            max_image_width: 1280,
            max_image_height: 800,
            tool_mode: ToolMode::Function,
            native_tool: None,
            max_retries: 4,
            retry_base_delay: Duration::from_secs(1),
            request_timeout: Duration::from_secs(300),
            max_output_tokens: None,
            keep_screenshots: 3,
            image_detail: None,
        }
    }
}

/// Whether `model` names an OpenAI reasoning model: the o-series (`o1`, `o3`, `o4-mini`, …) and
/// the GPT-5 family except its `-chat` variants. A provider prefix (`openai/`) is ignored.
pub(crate) fn is_openai_reasoning_model(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or_default();
    is_o_series(model) || (model.starts_with("gpt-5") && !model.contains("-chat"))
}

/// Whether `model` is an o-series model (`o1`, `o3-mini`, `o4-mini-high`, …).
pub(crate) fn is_o_series(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or_default();
    let mut chars = model.chars();
    chars.next() == Some('o') && chars.next().is_some_and(|c| c.is_ascii_digit())
}

/// An API key read from the environment. Its `Debug` is redacted; nothing prints its value.
#[derive(Clone)]
pub(crate) struct ApiKey(
    // Invariant: never formatted, logged or copied into an error; only put into one header.
    String,
);

impl ApiKey {
    pub(crate) fn new(value: String) -> ApiKey {
        ApiKey(value)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Removes every occurrence of the key from `text` (defence in depth for vendor messages).
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Why a model adapter could not be built or a model call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The configured key variable is unset or not Unicode.
    #[error("failed to read the api key: environment variable {env} is not set")]
    MissingKey {
        /// The variable's name (never its value).
        env: String,
    },
    /// The config asks for something this adapter cannot do.
    #[error("invalid model config: {0}")]
    Config(String),
    /// The HTTP client could not be built.
    #[error("failed to build the http client: {0}")]
    Client(String),
    /// The request never got a response, after all retries.
    #[error("failed to reach the model at {url} after {n_attempts} attempts: {message}")]
    Transport {
        /// The endpoint.
        url: String,
        /// Attempts made.
        n_attempts: u32,
        /// The last transport error.
        message: String,
    },
    /// The server answered with an error status.
    #[error("model call to {url} failed with http {status} after {n_attempts} attempts: {message}")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Attempts made.
        n_attempts: u32,
        /// The vendor's error message, truncated.
        message: String,
    },
    /// The response was not the JSON this adapter expects.
    #[error("failed to read the model response: {0}")]
    Decode(String),
    /// A screenshot could not be decoded or re-encoded.
    #[error("failed to scale a screenshot: {0}")]
    Image(String),
}
