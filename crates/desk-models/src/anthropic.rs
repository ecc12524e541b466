//! The Anthropic Messages adapter (`POST {base_url}/v1/messages`), function or native tool.
//!
//! Headers: `x-api-key`, `anthropic-version: 2023-06-01`, and in native mode with a single
//! computer tool the `anthropic-beta` flag of its version (`computer-use-2025-01-24` for
//! `computer_20250124`, `computer-use-2025-11-24` for `computer_20251124`; the tool set
//! `computer_toolset_20260801` is GA and needs none). The tool form is chosen by model
//! (`native_anthropic::tool_for_model`). Parallel tool use is disabled; several `tool_use` blocks
//! anyway make the turn malformed, and every one of them gets an error `tool_result`.
//!
//! Each turn appends the assistant content verbatim (thinking blocks and their signatures
//! included), then one user message whose `tool_result` blocks hold the delivery JSON text and
//! the screenshot as a base64 image block. An error result (`is_error: true`, a malformed call)
//! carries text only, as the API requires ("all content must be type 'text' if 'is_error' is
//! true"; `BetaToolResultBlockParam` in anthropic-sdk-python), and the screenshot follows the
//! results as an image block of the same user message.
//!
//! `zoom` (`computer_20251124` with `enable_zoom`, or the tool set's `zoom` member) sends no
//! input: the adapter answers it itself with a crop of the last full-resolution frame, fitted to
//! the model's image size, and asks the model again within the same turn (at most
//! `MAX_ZOOMS_PER_TURN` times; later zooms are refused).
//!
//! Over 400 lines: the request shape, both tool modes and the zoom loop are one protocol adapter.

use desk_harness::{ModelSaid, Observation, TokenUsage, TurnOutcome};
use serde_json::{Value, json};

use crate::config::{ApiKey, ModelConfig, ModelError, ToolMode};
use crate::function::parse_input;
use crate::http::{AuthStyle, ModelHttp};
use crate::native::{NativeBatch, PointerState};
use crate::native_anthropic::{self, TOOLSET_20260801, map_input};
use crate::prompt::{self, TOOL_DESCRIPTION, TOOL_NAME};
use crate::protocol::Protocol;
use crate::session::{self, Session, excerpt};

/// The Messages API version header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
const DEFAULT_MAX_TOKENS: u32 = 16_384;
/// Zooms answered locally within one turn before further zooms are refused.
const MAX_ZOOMS_PER_TURN: u32 = 8;

/// The adapter.
#[derive(Debug)]
pub(crate) struct AnthropicAgent {
    config: ModelConfig,
    http: ModelHttp,
    session: Option<Session>,
    messages: Vec<Value>,
    pointer: PointerState,
    pointer_before: PointerState,
    /// The native tool type in use (by model, or `native_tool`).
    tool_type: String,
    /// Zooms answered in the current turn.
    n_zooms: u32,
    /// Set when the last response was answered locally (a zoom): ask the model again.
    local_answer: bool,
}

impl AnthropicAgent {
    pub(crate) fn new(config: ModelConfig, key: Option<ApiKey>) -> Result<Self, ModelError> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        let tool_type = config
            .native_tool
            .clone()
            .unwrap_or_else(|| native_anthropic::tool_for_model(&config.model).to_string());
        if config.tool_mode == ToolMode::Native && tool_type != TOOLSET_20260801 {
            let beta = native_anthropic::beta_header(&tool_type).ok_or_else(|| {
                ModelError::Config(format!(
                    "unknown anthropic computer tool type `{tool_type}`"
                ))
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
            tool_type,
            n_zooms: 0,
            local_answer: false,
        })
    }

    fn push_observation(&mut self, observation: &Observation) -> Result<(), ModelError> {
        let Some(session) = self.session.as_mut() else {
            return Err(ModelError::Config("turn called before start".into()));
        };
        if session::rejected(observation) {
            self.pointer = self.pointer_before.clone();
        }
        self.n_zooms = 0;
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
        let mut blocks: Vec<Value> = pending
            .call_ids
            .iter()
            .enumerate()
            .map(|(call_idx, call_id)| {
                let mut content = vec![json!({"type": "text", "text": text})];
                // The screenshot goes with the last result only, and never into an error result.
                if call_idx + 1 == n_calls && !is_error {
                    content.push(screenshot.clone());
                }
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content,
                    "is_error": is_error})
            })
            .collect();
        let pointer = if is_error {
            blocks.push(screenshot);
            format!("/content/{n_calls}")
        } else {
            format!("/content/{}/content/1", n_calls - 1)
        };
        self.messages
            .push(json!({"role": "user", "content": blocks}));
        let item_idx = self.messages.len() - 1;
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
            ToolMode::Native if self.tool_type == TOOLSET_20260801 => {
                json!([{"type": TOOLSET_20260801}])
            }
            ToolMode::Native => {
                let image = self.session.as_ref().map(|s| s.scale.image());
                let mut tool = json!({"type": self.tool_type, "name": "computer",
                    "display_width_px": image.map(|i| i.width),
                    "display_height_px": image.map(|i| i.height)});
                if self.tool_type == native_anthropic::TOOL_20251124 {
                    tool["enable_zoom"] = json!(true);
                }
                json!([tool])
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
                let toolset = self.tool_type == TOOLSET_20260801;
                let input = if toolset && native_anthropic::is_toolset_member(name) {
                    native_anthropic::member_input(name, &input)
                } else {
                    input
                };
                let native_call = match self.config.tool_mode {
                    ToolMode::Native if toolset => native_anthropic::is_toolset_member(name),
                    ToolMode::Native => name == "computer",
                    ToolMode::Function => false,
                };
                let is_zoom = input.get("action").and_then(Value::as_str) == Some("zoom");
                match (self.config.tool_mode, name) {
                    (ToolMode::Function, TOOL_NAME) => parse_input(input, &session.scale),
                    _ if native_call && is_zoom => {
                        let Some(call_id) = call_id.clone() else {
                            return Ok(TurnOutcome::Malformed {
                                call_id: None,
                                error: "the tool_use has no id".into(),
                            });
                        };
                        if self.n_zooms >= MAX_ZOOMS_PER_TURN {
                            Err(format!(
                                "at most {MAX_ZOOMS_PER_TURN} zooms per turn; act on what you saw"
                            ))
                        } else {
                            match zoom_result(session, &input, &call_id) {
                                Ok(message) => {
                                    session.take_pending();
                                    self.messages.push(message);
                                    let item_idx = self.messages.len() - 1;
                                    let placeholder = json!({"type": "text",
                                        "text": session::OMITTED_SCREENSHOT});
                                    session.inline_screenshot(
                                        &mut self.messages,
                                        item_idx,
                                        "/content/0/content/1",
                                        placeholder,
                                    );
                                    self.n_zooms += 1;
                                    self.local_answer = true;
                                    return Ok(TurnOutcome::NoToolCall { text });
                                }
                                Err(error) => Err(error),
                            }
                        }
                    }
                    _ if native_call => {
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

/// The user message answering a `zoom` call: the crop of `region` (image pixels of the last
/// screenshot) from the full-resolution frame, fitted to the model's image size.
fn zoom_result(session: &Session, input: &Value, call_id: &str) -> Result<Value, String> {
    let region: Vec<f64> = match input.get("region") {
        Some(Value::Array(values)) if values.len() == 4 => {
            values.iter().filter_map(Value::as_f64).collect()
        }
        _ => Vec::new(),
    };
    let [x0, y0, x1, y1] = region[..] else {
        return Err("zoom needs `region` as [x0, y0, x1, y1] in screenshot pixels".to_string());
    };
    let from = session
        .scale
        .to_screen(crate::scale::ImagePoint { x: x0, y: y0 });
    let to = session
        .scale
        .to_screen(crate::scale::ImagePoint { x: x1, y: y1 });
    let corner = |value: i64| u32::try_from(value).ok();
    let (Some(sx0), Some(sy0), Some(sx1), Some(sy1)) =
        (corner(from.x), corner(from.y), corner(to.x), corner(to.y))
    else {
        return Err(format!(
            "zoom region [{x0}, {y0}, {x1}, {y1}] lies outside the screenshot"
        ));
    };
    let crop = crate::scale::crop_png(
        &session.last_frame,
        (sx0, sy0, sx1, sy1),
        session.scale.image(),
    )
    .map_err(|error| format!("zoom region [{x0}, {y0}, {x1}, {y1}] refused: {error}"))?;
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, crop);
    Ok(
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
        "content": [
            {"type": "text", "text": format!(
                "zoomed view of [{x0}, {y0}, {x1}, {y1}] from the last screenshot at full \
                 resolution; no input was sent. Coordinates of later actions still refer to the \
                 full screenshot.")},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                "data": data}}]}]}),
    )
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

    fn said(&self, response: &Value) -> ModelSaid {
        let blocks = response
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let of = |kind: &'static str, field: &'static str| {
            blocks
                .iter()
                .filter(move |block| block.get("type").and_then(Value::as_str) == Some(kind))
                .filter_map(move |block| block.get(field).and_then(Value::as_str))
        };
        ModelSaid {
            text: ModelSaid::joined(of("text", "text")),
            reasoning: ModelSaid::joined(of("thinking", "thinking")),
        }
    }

    fn answered_locally(&mut self) -> bool {
        std::mem::take(&mut self.local_answer)
    }
}
