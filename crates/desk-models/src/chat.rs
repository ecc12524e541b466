//! The OpenAI-compatible Chat Completions adapter (`POST {base_url}/chat/completions`), for
//! OpenAI and local servers such as vLLM. Function tool only: there is no native computer tool
//! in this wire format.
//!
//! Each turn appends the model's assistant message verbatim, then one `tool` message per pending
//! tool call id holding the delivery JSON text, then a user message with the screenshot as an
//! `image_url` data URL (tool messages cannot carry images on every server).
//!
//! Wire details (checked against openai-python `src/openai/types/chat/`):
//! - `parallel_tool_calls: false` is sent except to o-series models, which refuse the parameter;
//!   several calls in one answer are malformed anyway.
//! - Screenshots use `detail: high` (`ChatCompletionContentPartImageParam` allows only `auto`,
//!   `low`, `high`).
//! - Reasoning text that a server returns beside the content (`reasoning_content`, as vLLM's
//!   reasoning parsers and DeepSeek-style APIs send it, or `reasoning`) is echoed verbatim on
//!   the assistant message in the history: thinking models served this way expect their
//!   reasoning back between tool calls. The OpenAI SDK's message type has neither field, so
//!   nothing is sent to servers that never return one.

use desk_harness::{ModelSaid, Observation, TokenUsage, TurnOutcome};
use serde_json::{Value, json};

use crate::config::{ApiKey, ModelConfig, ModelError, is_o_series};
use crate::function::parse_arguments;
use crate::http::{AuthStyle, ModelHttp};
use crate::prompt::{self, TOOL_DESCRIPTION, TOOL_NAME};
use crate::protocol::Protocol;
use crate::session::{self, Session};

/// The adapter.
#[derive(Debug)]
pub(crate) struct ChatAgent {
    config: ModelConfig,
    http: ModelHttp,
    session: Option<Session>,
    messages: Vec<Value>,
}

impl ChatAgent {
    pub(crate) fn new(config: ModelConfig, key: Option<ApiKey>) -> Result<Self, ModelError> {
        let http = ModelHttp::new(&config, "/chat/completions", key, AuthStyle::Bearer, &[])?;
        Ok(ChatAgent {
            config,
            http,
            session: None,
            messages: Vec::new(),
        })
    }

    fn detail(&self) -> String {
        self.config
            .image_detail
            .clone()
            .unwrap_or_else(|| "high".to_string())
    }

    fn push_observation(&mut self, observation: &Observation) -> Result<(), ModelError> {
        let detail = self.detail();
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        let screenshot = json!({"type": "image_url", "image_url": {
            "url": format!("data:image/png;base64,{}", session.screenshot_b64(observation)?),
            "detail": detail}});
        let pending = session.take_pending();
        let mut content = Vec::new();
        if self.messages.is_empty() {
            self.messages
                .push(json!({"role": "system", "content": session.system}));
            content.push(json!({"type": "text", "text": session.task_text}));
            content.push(json!({"type": "image_url", "image_url": {
                "url": format!("data:image/png;base64,{}", session.reference_b64),
                "detail": "high"}}));
            content.push(json!({"type": "text", "text": prompt::first_screen_text(observation)}));
        } else {
            let text = prompt::tool_result_text(observation, &pending);
            for call_id in &pending.call_ids {
                self.messages
                    .push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
            }
            if pending.call_ids.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            content.push(json!({"type": "text", "text": "The screen after the batch:"}));
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
            json!({"type": "text", "text": session::OMITTED_SCREENSHOT}),
        );
        Ok(())
    }

    fn request_body(&self) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": self.messages,
            "tools": [{"type": "function", "function": {"name": TOOL_NAME,
                "description": TOOL_DESCRIPTION, "parameters": prompt::computer_action_schema()}}],
            "tool_choice": "auto",
        });
        if !is_o_series(&self.config.model) {
            body["parallel_tool_calls"] = json!(false);
        }
        if let Some(effort) = &self.config.reasoning_effort {
            body["reasoning_effort"] = json!(effort);
        }
        if let Some(max) = self.config.max_output_tokens {
            body["max_completion_tokens"] = json!(max);
        }
        body
    }

    fn read_choice(&mut self, response: &Value) -> Result<TurnOutcome, ModelError> {
        let Some(message) = response.pointer("/choices/0/message") else {
            return Err(ModelError::Decode(
                "the response has no choices[0].message".into(),
            ));
        };
        let mut echoed = json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(Value::Null)});
        if let Some(tool_calls) = message.get("tool_calls").filter(|calls| !calls.is_null()) {
            echoed["tool_calls"] = tool_calls.clone();
        }
        for field in ["reasoning_content", "reasoning"] {
            if let Some(reasoning) = message.get(field).filter(|value| !value.is_null()) {
                echoed[field] = reasoning.clone();
            }
        }
        self.messages.push(echoed);
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let calls: Vec<Value> = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let call_ids: Vec<String> = calls
            .iter()
            .filter_map(|call| call.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        session.pending.call_ids = call_ids.clone();
        let call_id = call_ids.first().cloned();
        let result = match calls.as_slice() {
            [] => return Ok(TurnOutcome::NoToolCall { text }),
            [call] => {
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let arguments = call
                    .pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if name != TOOL_NAME {
                    Err(format!(
                        "unknown tool `{name}`; the only tool is `{TOOL_NAME}`"
                    ))
                } else if call_id.is_none() {
                    Err("the tool call has no id".to_string())
                } else {
                    parse_arguments(arguments, &session.scale)
                }
            }
            _ => Err(format!(
                "{} tool calls in one turn; send exactly one call per turn",
                calls.len()
            )),
        };
        Ok(match (result, call_id) {
            (Ok(actions), Some(call_id)) => TurnOutcome::Actions { call_id, actions },
            (Ok(_), None) => TurnOutcome::Malformed {
                call_id: None,
                error: "the tool call has no id".to_string(),
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
        input_tokens: session::count(response, "/usage/prompt_tokens"),
        output_tokens: session::count(response, "/usage/completion_tokens"),
        reasoning_tokens: session::count(
            response,
            "/usage/completion_tokens_details/reasoning_tokens",
        ),
    }
}

impl Protocol for ChatAgent {
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
    }

    fn observe(&mut self, observation: &Observation) -> Result<(), ModelError> {
        self.push_observation(observation)
    }

    fn body(&self) -> Value {
        self.request_body()
    }

    fn read(&mut self, response: &Value) -> Result<TurnOutcome, ModelError> {
        self.read_choice(response)
    }

    fn tokens(&self, response: &Value) -> TokenUsage {
        usage(response)
    }

    fn said(&self, response: &Value) -> ModelSaid {
        said(response)
    }
}

/// The message's content and its reasoning (`reasoning_content`, or `reasoning` as some
/// servers name it).
fn said(response: &Value) -> ModelSaid {
    let message = response.pointer("/choices/0/message");
    let field = |name: &str| {
        message
            .and_then(|message| message.get(name))
            .and_then(Value::as_str)
    };
    ModelSaid {
        text: ModelSaid::joined(field("content")),
        reasoning: ModelSaid::joined(field("reasoning_content").or(field("reasoning"))),
    }
}

#[cfg(test)]
mod said_tests {
    use serde_json::json;

    #[test]
    fn content_and_reasoning_are_read() {
        let response = json!({"choices": [{"message": {
            "role": "assistant", "content": "Clicking the line tool.",
            "reasoning_content": "The toolbar is on the left."}}]});
        let said = super::said(&response);
        assert_eq!(said.text.as_deref(), Some("Clicking the line tool."));
        assert_eq!(
            said.reasoning.as_deref(),
            Some("The toolbar is on the left.")
        );
        let bare = json!({"choices": [{"message": {"role": "assistant", "content": null}}]});
        assert!(super::said(&bare).is_empty());
    }
}
