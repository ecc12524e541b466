//! The OpenAI Responses API adapter (`POST {base_url}/responses`), function or native tool.
//!
//! The conversation is kept client-side (`store: false`): every output item the model returns
//! (reasoning with its encrypted content, messages, calls) is sent back verbatim in `input`,
//! followed by this turn's tool result and screenshot:
//! - function mode: one `function_call_output` per pending call id with the delivery JSON text,
//!   then a user message with the screenshot as `input_image`;
//! - native mode: one `computer_call_output` per pending call id carrying the screenshot (and
//!   acknowledging the call's pending safety checks: the desktop is a disposable sandbox), then a
//!   user message with the delivery JSON text. The acknowledged checks are also returned with
//!   the turn, so the rollout record keeps them.
//!
//! `include: ["reasoning.encrypted_content"]` is asked for only from reasoning models (those the
//! request gives `reasoning_effort`, and by name the o-series and GPT-5 family except `-chat`,
//! `config::is_openai_reasoning_model`): other models refuse it. Screenshots go out with
//! `detail: original` unless the config says otherwise. Wire shapes checked against
//! openai-python `src/openai/types/responses/` (`response_create_params.py`,
//! `response_input_image_param.py`, `response_input_item_param.py`).

use desk_harness::{ModelSaid, Observation, TokenUsage, TurnOutcome};
use serde_json::{Value, json};

use crate::config::{ApiKey, ModelConfig, ModelError, ToolMode, is_openai_reasoning_model};
use crate::function::parse_arguments;
use crate::http::{AuthStyle, ModelHttp};
use crate::native::{NativeBatch, PointerState};
use crate::native_openai::{call_actions, map_action};
use crate::prompt::{self, TOOL_DESCRIPTION, TOOL_NAME};
use crate::protocol::Protocol;
use crate::session::{self, Session, excerpt};

/// The adapter.
#[derive(Debug)]
pub(crate) struct ResponsesAgent {
    config: ModelConfig,
    http: ModelHttp,
    session: Option<Session>,
    input: Vec<Value>,
    pointer: PointerState,
    pointer_before: PointerState,
    safety_checks: Vec<Value>,
}

impl ResponsesAgent {
    pub(crate) fn new(config: ModelConfig, key: Option<ApiKey>) -> Result<Self, ModelError> {
        let http = ModelHttp::new(&config, "/responses", key, AuthStyle::Bearer, &[])?;
        Ok(ResponsesAgent {
            config,
            http,
            session: None,
            input: Vec::new(),
            pointer: PointerState::default(),
            pointer_before: PointerState::default(),
            safety_checks: Vec::new(),
        })
    }

    fn native_tool_type(&self) -> &str {
        self.config.native_tool.as_deref().unwrap_or("computer")
    }

    fn detail(&self) -> String {
        self.config
            .image_detail
            .clone()
            .unwrap_or_else(|| "original".to_string())
    }

    fn reasoning_model(&self) -> bool {
        self.config.reasoning_effort.is_some() || is_openai_reasoning_model(&self.config.model)
    }

    fn push_observation(&mut self, observation: &Observation) -> Result<(), ModelError> {
        let native = self.config.tool_mode == ToolMode::Native;
        let detail = self.detail();
        let preview = self.native_tool_type() != "computer";
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        if session::rejected(observation) {
            self.pointer = self.pointer_before.clone();
        }
        let screenshot_url = format!(
            "data:image/png;base64,{}",
            session.screenshot_b64(observation)?
        );
        let pending = session.take_pending();
        let image_part =
            json!({"type": "input_image", "image_url": screenshot_url, "detail": detail});
        let placeholder = json!({"type": "input_text", "text": session::OMITTED_SCREENSHOT});
        if self.input.is_empty() || pending.call_ids.is_empty() {
            let mut content = Vec::new();
            if self.input.is_empty() {
                content.push(json!({"type": "input_text", "text": session.task_text}));
                content.push(json!({"type": "input_image", "detail": "high",
                    "image_url": format!("data:image/png;base64,{}", session.reference_b64)}));
                content.push(
                    json!({"type": "input_text", "text": prompt::first_screen_text(observation)}),
                );
            } else {
                content.push(json!({"type": "input_text",
                    "text": prompt::tool_result_text(observation, &pending)}));
            }
            let image_idx = content.len();
            content.push(image_part);
            self.input.push(json!({"role": "user", "content": content}));
            let item_idx = self.input.len() - 1;
            session.inline_screenshot(
                &mut self.input,
                item_idx,
                &format!("/content/{image_idx}"),
                placeholder,
            );
            return Ok(());
        }
        let text = prompt::tool_result_text(observation, &pending);
        if native {
            let checks = std::mem::take(&mut self.safety_checks);
            for call_id in &pending.call_ids {
                let mut output =
                    json!({"type": "computer_screenshot", "image_url": screenshot_url});
                if !preview {
                    output["detail"] = json!(detail);
                }
                let mut item =
                    json!({"type": "computer_call_output", "call_id": call_id, "output": output});
                if !checks.is_empty() {
                    item["acknowledged_safety_checks"] = json!(checks);
                }
                self.input.push(item);
            }
            self.input
                .push(json!({"role": "user", "content": [{"type": "input_text", "text": text}]}));
        } else {
            for call_id in &pending.call_ids {
                self.input.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": text}),
                );
            }
            self.input.push(json!({"role": "user", "content": [
                {"type": "input_text", "text": "The screen after the batch:"}, image_part]}));
            let item_idx = self.input.len() - 1;
            session.inline_screenshot(&mut self.input, item_idx, "/content/1", placeholder);
        }
        Ok(())
    }

    fn request_body(&self) -> Value {
        let system = self
            .session
            .as_ref()
            .map(|s| s.system.clone())
            .unwrap_or_default();
        let tools = match self.config.tool_mode {
            ToolMode::Function => json!([{"type": "function", "name": TOOL_NAME,
                "description": TOOL_DESCRIPTION, "parameters": prompt::computer_action_schema(),
                "strict": false}]),
            ToolMode::Native => {
                let tool_type = self.native_tool_type();
                if tool_type == "computer" {
                    json!([{"type": "computer"}])
                } else {
                    let image = self.session.as_ref().map(|s| s.scale.image());
                    json!([{"type": tool_type, "environment": "linux",
                        "display_width": image.map(|i| i.width), "display_height": image.map(|i| i.height)}])
                }
            }
        };
        let mut body = json!({
            "model": self.config.model, "instructions": system, "input": self.input,
            "tools": tools, "parallel_tool_calls": false, "store": false, "truncation": "auto",
        });
        if self.reasoning_model() {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        if let Some(effort) = &self.config.reasoning_effort {
            body["reasoning"] = json!({"effort": effort});
        }
        if let Some(max) = self.config.max_output_tokens {
            body["max_output_tokens"] = json!(max);
        }
        body
    }

    fn read_output(&mut self, response: &Value) -> Result<TurnOutcome, ModelError> {
        let Some(Value::Array(output)) = response.get("output") else {
            return Err(ModelError::Decode(
                "the response has no `output` array".into(),
            ));
        };
        self.input.extend(output.iter().cloned());
        let text: String = output
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
            .flat_map(|item| {
                item.get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|part| part.get("text").and_then(Value::as_str).map(str::to_string))
            .collect::<Vec<_>>()
            .join("\n");
        let calls: Vec<&Value> = output
            .iter()
            .filter(|item| {
                matches!(
                    item.get("type").and_then(Value::as_str),
                    Some("function_call" | "computer_call")
                )
            })
            .collect();
        let call_ids: Vec<String> = calls
            .iter()
            .filter_map(|call| {
                call.get("call_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        session.pending.call_ids = call_ids.clone();
        let call = match calls.as_slice() {
            [] => return Ok(TurnOutcome::NoToolCall { text }),
            [call] => *call,
            _ => {
                let error = format!(
                    "{} tool calls in one turn; send exactly one call per turn",
                    calls.len()
                );
                session.pending.error = Some(error.clone());
                return Ok(TurnOutcome::Malformed {
                    call_id: call_ids.first().cloned(),
                    error,
                });
            }
        };
        let call_id = call_ids.first().cloned();
        let mapped = match call.get("type").and_then(Value::as_str) {
            Some("computer_call") => {
                self.safety_checks = call
                    .get("pending_safety_checks")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if !self.safety_checks.is_empty() {
                    tracing::warn!(
                        n_checks = self.safety_checks.len(),
                        "acknowledging the computer call's pending safety checks (sandboxed desktop)"
                    );
                }
                let intent = format!("openai computer tool: {}", excerpt(&text, 200));
                self.pointer_before = self.pointer.clone();
                let mut batch = NativeBatch::new(&session.scale, &mut self.pointer, intent);
                let mapped = call_actions(call).and_then(|actions| {
                    actions
                        .iter()
                        .try_for_each(|action| map_action(&mut batch, action))
                });
                let (actions, note) = batch.finish();
                session.pending.note = note;
                if mapped.is_err() {
                    self.pointer = self.pointer_before.clone();
                }
                mapped.map(|()| actions)
            }
            _ => {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                if name == TOOL_NAME {
                    let arguments = call
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    parse_arguments(arguments, &session.scale)
                } else {
                    Err(format!(
                        "unknown tool `{name}`; the only tool is `{TOOL_NAME}`"
                    ))
                }
            }
        };
        Ok(match (mapped, call_id) {
            (Ok(actions), Some(call_id)) => TurnOutcome::Actions { call_id, actions },
            (Ok(_), None) => {
                let error = "the tool call has no call_id".to_string();
                session.pending.error = Some(error.clone());
                TurnOutcome::Malformed {
                    call_id: None,
                    error,
                }
            }
            (Err(error), call_id) => {
                session.pending.error = Some(error.clone());
                TurnOutcome::Malformed { call_id, error }
            }
        })
    }
}

/// The visible text of the output's messages and the text of its reasoning summaries.
fn said(response: &Value) -> ModelSaid {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let parts = |kind: &'static str, field: &'static str| {
        output
            .iter()
            .filter(move |item| item.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(move |item| item.get(field).and_then(Value::as_array))
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
    };
    ModelSaid {
        text: ModelSaid::joined(parts("message", "content")),
        reasoning: ModelSaid::joined(parts("reasoning", "summary")),
    }
}

fn usage(response: &Value) -> TokenUsage {
    TokenUsage {
        input_tokens: session::count(response, "/usage/input_tokens"),
        output_tokens: session::count(response, "/usage/output_tokens"),
        reasoning_tokens: session::count(response, "/usage/output_tokens_details/reasoning_tokens"),
    }
}

impl Protocol for ResponsesAgent {
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
        self.input.clear();
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
        self.read_output(response)
    }

    fn tokens(&self, response: &Value) -> TokenUsage {
        usage(response)
    }

    fn said(&self, response: &Value) -> ModelSaid {
        said(response)
    }

    fn safety_checks(&self) -> Vec<Value> {
        self.safety_checks.clone()
    }
}

#[cfg(test)]
mod said_tests {
    use serde_json::json;

    #[test]
    fn message_text_and_reasoning_summaries_are_read() {
        let response = json!({"output": [
            {"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "Find the line tool."}]},
            {"type": "message", "id": "msg_1", "role": "assistant",
             "content": [{"type": "output_text", "text": "Drawing now."}]},
            {"type": "function_call", "call_id": "c1", "name": "computer_action",
             "arguments": "{}"}]});
        let said = super::said(&response);
        assert_eq!(said.text.as_deref(), Some("Drawing now."));
        assert_eq!(said.reasoning.as_deref(), Some("Find the line tool."));
        assert!(super::said(&json!({"output": []})).is_empty());
    }
}
