//! The Anthropic Messages adapter (`POST {base_url}/v1/messages`), function or native tool.
//!
//! Headers: `x-api-key`, `anthropic-version: 2023-06-01`, and in native mode the
//! `anthropic-beta` flag of the computer tool version (`computer-use-2025-01-24` for
//! `computer_20250124`). Parallel tool use is disabled; several `tool_use` blocks anyway make the
//! turn malformed, and every one of them gets an error `tool_result`.
//!
//! Each turn appends the assistant content verbatim (thinking blocks and their signatures
//! included), then one user message whose `tool_result` blocks hold the delivery JSON text and
//! the screenshot as a base64 image block (`is_error` when the call was malformed).

use desk_harness::{Observation, TokenUsage, TurnOutcome};
use serde_json::{Value, json};

use crate::config::{ApiKey, ModelConfig, ModelError, ToolMode};
use crate::function::parse_input;
use crate::http::{AuthStyle, ModelHttp};
use crate::native::{NativeBatch, PointerState};
use crate::native_anthropic::{self, map_input};
use crate::prompt::{self, TOOL_DESCRIPTION, TOOL_NAME};
use crate::protocol::Protocol;
use crate::session::{self, Session, excerpt};

/// The Messages API version header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
const DEFAULT_MAX_TOKENS: u32 = 16_384;

/// The adapter.
#[derive(Debug)]
pub(crate) struct AnthropicAgent {
    config: ModelConfig,
    http: ModelHttp,
    session: Option<Session>,
    messages: Vec<Value>,
    pointer: PointerState,
    pointer_before: PointerState,
}

impl AnthropicAgent {
    pub(crate) fn new(config: ModelConfig, key: Option<ApiKey>) -> Result<Self, ModelError> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if config.tool_mode == ToolMode::Native {
            let tool = config
                .native_tool
                .as_deref()
                .unwrap_or(native_anthropic::DEFAULT_TOOL);
            let beta = native_anthropic::beta_header(tool).ok_or_else(|| {
                ModelError::Config(format!("unknown anthropic computer tool type `{tool}`"))
            })?;
            headers.push(("anthropic-beta", beta));
        }
        let http = ModelHttp::new(&config, "/v1/messages", key, AuthStyle::XApiKey, &headers)?;
        Ok(AnthropicAgent {
            config,
            http,
            session: None,
            messages: Vec::new(),
            pointer: PointerState::default(),
            pointer_before: PointerState::default(),
        })
    }

    fn push_observation(&mut self, observation: &Observation) -> Result<(), ModelError> {
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        if crate::rejected(observation) {
            self.pointer = self.pointer_before.clone();
        }
        let screenshot = json!({"type": "image", "source": {"type": "base64",
            "media_type": "image/png", "data": session.screenshot_b64(observation)?}});
        let pending = session.take_pending();
        let placeholder = json!({"type": "text", "text": session::OMITTED_SCREENSHOT});
        if self.messages.is_empty() || pending.call_ids.is_empty() {
            let mut content = Vec::new();
            if self.messages.is_empty() {
                content.push(json!({"type": "text", "text": session.task_text}));
                content.push(json!({"type": "image", "source": {"type": "base64",
                    "media_type": "image/png", "data": session.reference_b64}}));
                content
                    .push(json!({"type": "text", "text": prompt::first_screen_text(observation)}));
            } else {
                content.push(json!({"type": "text",
                    "text": prompt::tool_result_text(observation, &pending)}));
            }
            let image_idx = content.len();
            content.push(screenshot);
            self.messages
                .push(json!({"role": "user", "content": content}));
            let item_idx = self.messages.len() - 1;
            session.inline_screenshot(
                &mut self.messages,
                item_idx,
                &format!("/content/{image_idx}"),
                placeholder,
            );
            return Ok(());
        }
        let text = prompt::tool_result_text(observation, &pending);
        let is_error = pending.error.is_some();
        let n_calls = pending.call_ids.len();
        let blocks: Vec<Value> = pending
            .call_ids
            .iter()
            .enumerate()
            .map(|(call_idx, call_id)| {
                let mut content = vec![json!({"type": "text", "text": text})];
                // The screenshot goes with the last result only.
                if call_idx + 1 == n_calls {
                    content.push(screenshot.clone());
                }
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content,
                    "is_error": is_error})
            })
            .collect();
        self.messages
            .push(json!({"role": "user", "content": blocks}));
        let item_idx = self.messages.len() - 1;
        let pointer = format!("/content/{}/content/1", n_calls - 1);
        session.inline_screenshot(&mut self.messages, item_idx, &pointer, placeholder);
        Ok(())
    }

    fn request_body(&self) -> Value {
        let system = self
            .session
            .as_ref()
            .map(|s| s.system.clone())
            .unwrap_or_default();
        let tools = match self.config.tool_mode {
            ToolMode::Function => json!([{"name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                "input_schema": prompt::computer_action_schema()}]),
            ToolMode::Native => {
                let image = self.session.as_ref().map(|s| s.scale.image());
                let tool = self
                    .config
                    .native_tool
                    .as_deref()
                    .unwrap_or(native_anthropic::DEFAULT_TOOL);
                json!([{"type": tool, "name": "computer",
                    "display_width_px": image.map(|i| i.width),
                    "display_height_px": image.map(|i| i.height)}])
            }
        };
        let mut body = json!({
            "model": self.config.model,
            "max_tokens": self.config.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "system": system, "messages": self.messages, "tools": tools,
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
        });
        if let Some(effort) = &self.config.reasoning_effort {
            body["thinking"] = json!({"type": "adaptive"});
            body["output_config"] = json!({"effort": effort});
        }
        body
    }

    fn read_content(&mut self, response: &Value) -> Result<TurnOutcome, ModelError> {
        let Some(Value::Array(content)) = response.get("content") else {
            return Err(ModelError::Decode(
                "the response has no `content` array".into(),
            ));
        };
        self.messages
            .push(json!({"role": "assistant", "content": content}));
        let text = content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let uses: Vec<&Value> = content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
            .collect();
        let call_ids: Vec<String> = uses
            .iter()
            .filter_map(|block| block.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        session.pending.call_ids = call_ids.clone();
        let call_id = call_ids.first().cloned();
        let result = match uses.as_slice() {
            [] => return Ok(TurnOutcome::NoToolCall { text }),
            [block] => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                match (self.config.tool_mode, name) {
                    (ToolMode::Function, TOOL_NAME) => parse_input(input, &session.scale),
                    (ToolMode::Native, "computer") => {
                        self.pointer_before = self.pointer.clone();
                        let intent = format!("anthropic computer tool: {}", excerpt(&text, 200));
                        let mut batch = NativeBatch::new(&session.scale, &mut self.pointer, intent);
                        let mapped = map_input(&mut batch, &input);
                        let (actions, note) = batch.finish();
                        session.pending.note = note;
                        if mapped.is_err() {
                            self.pointer = self.pointer_before.clone();
                        }
                        mapped.map(|()| actions)
                    }
                    (_, other) => Err(format!("unknown tool `{other}`")),
                }
            }
            _ => Err(format!(
                "{} tool calls in one turn; send exactly one call per turn",
                uses.len()
            )),
        };
        Ok(match (result, call_id) {
            (Ok(actions), Some(call_id)) => TurnOutcome::Actions { call_id, actions },
            (Ok(_), None) => TurnOutcome::Malformed {
                call_id: None,
                error: "the tool_use has no id".into(),
            },
            (Err(error), call_id) => {
                session.pending.error = Some(error.clone());
                TurnOutcome::Malformed { call_id, error }
            }
        })
    }
}

fn usage(response: &Value) -> TokenUsage {
    TokenUsage {
        input_tokens: session::count(response, "/usage/input_tokens")
            + session::count(response, "/usage/cache_creation_input_tokens")
            + session::count(response, "/usage/cache_read_input_tokens"),
        output_tokens: session::count(response, "/usage/output_tokens"),
        reasoning_tokens: 0,
    }
}

impl Protocol for AnthropicAgent {
    fn config(&self) -> &ModelConfig {
        &self.config
    }

    fn http(&self) -> &ModelHttp {
        &self.http
    }

    fn has_session(&self) -> bool {
        self.session.is_some()
    }

    fn begin(&mut self, session: Session) {
        self.session = Some(session);
        self.messages.clear();
        self.pointer = PointerState::default();
        self.pointer_before = PointerState::default();
    }

    fn observe(&mut self, observation: &Observation) -> Result<(), ModelError> {
        self.push_observation(observation)
    }

    fn body(&self) -> Value {
        self.request_body()
    }

    fn read(&mut self, response: &Value) -> Result<TurnOutcome, ModelError> {
        self.read_content(response)
    }

    fn tokens(&self, response: &Value) -> TokenUsage {
        usage(response)
    }
}
