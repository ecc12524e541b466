//! One replay per model family with request and response bodies shaped as the vendors' SDKs
//! define them (anthropic-sdk-typescript `src/resources/beta/messages/messages.ts` and
//! `src/resources/messages/messages.ts`, anthropic-sdk-python
//! `types/beta/beta_tool_result_block_param.py`; openai-python `types/responses/` and
//! `types/chat/`), checking the wire details the live APIs refuse or need.

use desk_contract::DisplaySize;
use desk_harness::TurnOutcome;
use desk_models::{Provider, ToolMode};
use serde_json::{Value, json};

use crate::support::*;

/// A `BetaMessage` answering with one `tool_use` block.
fn message(id: &str, name: &str, input: Value) -> Value {
    json!({"id": format!("msg_{id}"), "type": "message", "role": "assistant",
        "model": "claude-opus-4-6", "content": [
            {"type": "thinking", "thinking": "look closer", "signature": "EqQBCkYIBxgCKkA"},
            {"type": "tool_use", "id": id, "name": name, "input": input}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 1200, "output_tokens": 80,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
}

fn actions(turn: &desk_harness::Turn) -> &Vec<Value> {
    match &turn.outcome {
        TurnOutcome::Actions { actions, .. } => actions,
        other => panic!("expected actions, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_computer_20251124_zoom_modifiers_and_text_only_errors() {
    let display = DisplaySize::FULL_HD; // shown at 1280x720
    let server = Scripted::start(vec![
        (
            200,
            message(
                "toolu_01",
                "computer",
                json!({"action": "zoom",
            "region": [0, 0, 320, 180]}),
            ),
        ),
        (
            200,
            message(
                "toolu_02",
                "computer",
                json!({"action": "left_click",
            "coordinate": [640, 360], "key": "shift"}),
            ),
        ),
        (
            200,
            message(
                "toolu_03",
                "computer",
                json!({"action": "triple_click",
            "coordinate": [10, 10]}),
            ),
        ),
        (
            200,
            message("toolu_04", "computer", json!({"action": "screenshot"})),
        ),
    ])
    .await;
    let mut config = config(Provider::Anthropic, &server.url, ToolMode::Native);
    config.model = "claude-opus-4-6".into();
    let mut agent = agent(config);
    agent.start(&brief(display)).await.unwrap();

    // A zoom is answered without input; the model is asked again within the turn.
    let turn = agent.turn(&observation(1, display, None)).await.unwrap();
    assert_eq!(
        actions(&turn)[0],
        json!({"type": "click", "x": 960, "y": 540, "button": "left", "modifiers": ["shift"],
            "intent": "anthropic computer tool: "})
    );
    assert_eq!(
        turn.usage.input_tokens, 2400,
        "both calls of the turn count"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("anthropic-beta"),
        Some("computer-use-2025-11-24")
    );
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "computer_20251124", "name": "computer", "display_width_px": 1280,
            "display_height_px": 720, "enable_zoom": true}])
    );
    let zoom = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(zoom["type"], "tool_result");
    assert_eq!(zoom["tool_use_id"], "toolu_01");
    assert!(zoom.get("is_error").is_none());
    // [0, 0, 320, 180] of the 1280x720 image is 480x270 screen pixels, shown at full size.
    assert_eq!(
        png_size_of(zoom["content"][1]["source"]["data"].as_str().unwrap()),
        (480, 270)
    );

    // triple_click is refused with a message the model can act on, as a text-only error.
    let turn = agent
        .turn(&observation(2, display, Some(delivered(1))))
        .await
        .unwrap();
    let TurnOutcome::Malformed { error, .. } = &turn.outcome else {
        panic!("{:?}", turn.outcome)
    };
    assert!(error.contains("double_click"), "{error}");
    agent
        .turn(&observation(3, display, Some(rejected(error))))
        .await
        .unwrap();
    let last = server.requests().pop().unwrap().body;
    let blocks = last["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[0]["is_error"], true);
    for part in blocks[0]["content"].as_array().unwrap() {
        assert_eq!(
            part["type"], "text",
            "an error result carries text only: {part}"
        );
    }
    assert_eq!(
        blocks[1]["type"], "image",
        "the screenshot follows the results"
    );
}

#[tokio::test]
async fn anthropic_toolset_for_later_models() {
    let display = DisplaySize::FULL_HD;
    let server = Scripted::start(vec![(
        200,
        message(
            "toolu_11",
            "left_click",
            json!({"coordinate": [100, 50], "text": "ctrl"}),
        ),
    )])
    .await;
    let mut config = config(Provider::Anthropic, &server.url, ToolMode::Native);
    config.model = "claude-sonnet-5".into();
    let mut agent = agent(config);
    agent.start(&brief(display)).await.unwrap();
    let turn = agent.turn(&observation(1, display, None)).await.unwrap();
    assert_eq!(actions(&turn)[0]["modifiers"], json!(["ctrl"]));
    assert_eq!(
        (
            actions(&turn)[0]["x"].clone(),
            actions(&turn)[0]["y"].clone()
        ),
        (json!(150), json!(75))
    );
    let request = &server.requests()[0];
    assert_eq!(
        request.body["tools"],
        json!([{"type": "computer_toolset_20260801"}])
    );
    assert_eq!(request.header("anthropic-beta"), None, "the tool set is GA");
}

/// A `Response` (openai-python `types/responses/response.py`) with the given output items.
fn response(output: Value) -> Value {
    json!({"id": "resp_1", "object": "response", "created_at": 1_764_000_000, "status":
        "completed", "model": "gpt-4.1", "output": output, "parallel_tool_calls": false,
        "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 940}})
}

#[tokio::test]
async fn openai_responses_reasoning_only_where_supported_and_safety_checks_recorded() {
    let display = DisplaySize::FULL_HD;
    let check = json!({"id": "cu_sc_1", "code": "malicious_instructions",
        "message": "The screen shows instructions to the agent."});
    let server = Scripted::start(vec![
        (
            200,
            response(
                json!([{"type": "computer_call", "id": "cu_1", "call_id": "call_1",
            "actions": [{"type": "click", "button": "left", "x": 10, "y": 20}],
            "pending_safety_checks": [check], "status": "completed"}]),
            ),
        ),
        (
            200,
            response(
                json!([{"type": "message", "id": "msg_1", "role": "assistant",
            "status": "completed", "content": [{"type": "output_text", "text": "done",
            "annotations": []}]}]),
            ),
        ),
    ])
    .await;
    let mut cfg = config(Provider::OpenAiResponses, &server.url, ToolMode::Native);
    cfg.model = "gpt-4.1".into();
    let mut agent = crate::support::agent(cfg);
    agent.start(&brief(display)).await.unwrap();
    let turn = agent.turn(&observation(1, display, None)).await.unwrap();
    assert_eq!(turn.acknowledged_safety_checks, vec![check.clone()]);
    agent
        .turn(&observation(2, display, Some(delivered(1))))
        .await
        .unwrap();
    let requests = server.requests();
    for request in &requests {
        assert!(
            request.body.get("include").is_none(),
            "not a reasoning model"
        );
    }
    let first = &requests[0].body["input"][0]["content"];
    assert_eq!(
        first.as_array().unwrap().last().unwrap()["detail"],
        "original"
    );
    let output = &requests[1].body["input"][2];
    assert_eq!(output["type"], "computer_call_output");
    assert_eq!(output["acknowledged_safety_checks"], json!([check]));
    assert_eq!(output["output"]["detail"], "original");

    // A reasoning model gets its encrypted reasoning back.
    let server = Scripted::start(vec![(200, response(json!([])))]).await;
    let mut reasoning = config(Provider::OpenAiResponses, &server.url, ToolMode::Function);
    reasoning.model = "gpt-5.6-sol".into();
    let mut agent = crate::support::agent(reasoning);
    agent.start(&brief(display)).await.unwrap();
    agent.turn(&observation(1, display, None)).await.unwrap();
    assert_eq!(
        server.requests()[0].body["include"],
        json!(["reasoning.encrypted_content"])
    );
}

/// A `ChatCompletion` (openai-python `types/chat/chat_completion.py`) whose message carries the
/// reasoning field vLLM's reasoning parsers add.
fn completion(arguments: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_000_000,
        "model": "Qwen/Qwen3-VL-8B-Thinking", "choices": [{"index": 0, "finish_reason":
        "tool_calls", "logprobs": null, "message": {"role": "assistant", "content": null,
        "reasoning_content": "The circle tool is on the left.", "tool_calls": [{"id":
        "chatcmpl-tool-1", "type": "function", "function": {"name": "computer_action",
        "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 800, "completion_tokens": 30, "total_tokens": 830}})
}

#[tokio::test]
async fn chat_completions_reasoning_echo_and_parallel_tool_calls_only_where_allowed() {
    let display = DisplaySize::FULL_HD;
    let batch = r#"{"actions":[{"type":"wait","milliseconds":5,"intent":"look"}]}"#;
    let server = Scripted::start(vec![(200, completion(batch)), (200, completion(batch))]).await;
    let mut cfg = config(Provider::ChatCompletions, &server.url, ToolMode::Function);
    cfg.model = "Qwen/Qwen3-VL-8B-Thinking".into();
    let mut agent = crate::support::agent(cfg);
    agent.start(&brief(display)).await.unwrap();
    agent.turn(&observation(1, display, None)).await.unwrap();
    agent
        .turn(&observation(2, display, Some(delivered(1))))
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].body["parallel_tool_calls"], false);
    let echoed = &requests[1].body["messages"][2];
    assert_eq!(echoed["role"], "assistant");
    assert_eq!(
        echoed["reasoning_content"],
        "The circle tool is on the left."
    );

    let server = Scripted::start(vec![(200, completion(batch))]).await;
    let mut o_series = config(Provider::ChatCompletions, &server.url, ToolMode::Function);
    o_series.model = "o4-mini".into();
    let mut agent = crate::support::agent(o_series);
    agent.start(&brief(display)).await.unwrap();
    agent.turn(&observation(1, display, None)).await.unwrap();
    let body = &server.requests()[0].body;
    assert!(
        body.get("parallel_tool_calls").is_none(),
        "o-series refuse it: {body}"
    );
}
