//! The Chat Completions adapter against a scripted `/chat/completions` server (vLLM-style).

use desk_contract::DisplaySize;
use desk_harness::{TokenUsage, TurnOutcome};
use desk_models::{ModelError, Provider, ToolMode, build_agent_with_env};
use serde_json::{Value, json};

use crate::support::*;

fn tool_call(call_id: &str, arguments: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model-1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": call_id, "type": "function",
                "function": {"name": "computer_action", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940,
                  "completion_tokens_details": {"reasoning_tokens": 12}}
    })
}

#[tokio::test]
async fn batch_then_malformed_then_done_with_scaling() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let batch = r#"{"actions": [
        {"type": "click", "x": 640, "y": 360, "button": "left", "intent": "focus the canvas"},
        {"type": "type", "text": "line", "intent": "command"},
        {"type": "key", "keys": ["enter"], "intent": "run"}]}"#;
    let server = Scripted::start(vec![
        (200, tool_call("tc_1", batch)),
        (200, tool_call("tc_2", r#"{"steps": []}"#)),
        (
            200,
            tool_call(
                "tc_3",
                r#"{"actions": [{"type": "done", "intent": "saved"}]}"#,
            ),
        ),
        (
            200,
            json!({"choices": [{"index": 0, "message": {"role": "assistant",
            "content": "nothing left"}}]}),
        ),
    ])
    .await;
    let mut config = config(Provider::ChatCompletions, &server.url, ToolMode::Function);
    config.reasoning_effort = Some("low".to_string());
    let mut agent = agent(config);
    assert_eq!(agent.info().agent, "chat-completions");
    agent.start(&brief(DisplaySize::FULL_HD)).await.unwrap();

    let turn = agent
        .turn(&observation(1, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    assert_eq!(
        turn.usage,
        TokenUsage {
            input_tokens: 900,
            output_tokens: 40,
            reasoning_tokens: 12
        }
    );
    let TurnOutcome::Actions { call_id, actions } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id, "tc_1");
    assert_eq!(actions.len(), 3);
    assert_eq!(
        (&actions[0]["x"], &actions[0]["y"]),
        (&json!(960), &json!(540))
    );

    let turn = agent
        .turn(&observation(2, DisplaySize::FULL_HD, Some(delivered(3))))
        .await
        .unwrap();
    let TurnOutcome::Malformed { call_id, error } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id.as_deref(), Some("tc_2"));
    assert!(error.contains("lack the `actions` array"), "{error}");

    let turn = agent
        .turn(&observation(3, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    let TurnOutcome::Actions { actions, .. } = turn.outcome else {
        panic!()
    };
    assert_eq!(actions, vec![json!({"type": "done", "intent": "saved"})]);
    let turn = agent
        .turn(&observation(4, DisplaySize::FULL_HD, Some(delivered(1))))
        .await
        .unwrap();
    assert_eq!(
        turn.outcome,
        TurnOutcome::NoToolCall {
            text: "nothing left".into()
        }
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(request.path, "/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {SECRET}").as_str())
        );
        assert_eq!(request.body["model"], "test-model-1");
        assert_eq!(request.body["reasoning_effort"], "low");
        assert_eq!(request.body["parallel_tool_calls"], false);
        assert_eq!(
            request.body["tools"][0]["function"]["name"],
            "computer_action"
        );
        assert_eq!(request.body["messages"][0]["role"], "system");
        assert!(
            request.body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("1280x720")
        );
    }
    let first = &requests[0].body["messages"][1]["content"];
    assert_eq!(first[1]["type"], "image_url");
    assert_eq!(
        png_size_of(first[3]["image_url"]["url"].as_str().unwrap()),
        (1280, 720)
    );
    // Turn 2: assistant echo with tool_calls, tool result for tc_1, then the screenshot.
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "tc_1");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "tc_1");
    let result: Value = serde_json::from_str(messages[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["delivery"]["n_executed"], 3);
    assert_eq!(messages[4]["role"], "user");
    assert_eq!(messages[4]["content"][1]["type"], "image_url");
    // Turn 3: the malformed call's error goes back under tc_2.
    let messages = requests[2].body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "tc_2");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("lack the `actions` array")
    );
    assert_no_secret(&server, &logs, &[]);
}

#[tokio::test]
async fn old_screenshots_are_replaced_by_placeholders() {
    let done = r#"{"actions": [{"type": "wait", "milliseconds": 10, "intent": "x"}]}"#;
    let replies = (0..5)
        .map(|idx| (200, tool_call(&format!("w{idx}"), done)))
        .collect();
    let server = Scripted::start(replies).await;
    let mut config = config(Provider::ChatCompletions, &server.url, ToolMode::Function);
    config.keep_screenshots = 2;
    let display = DisplaySize {
        width: 64,
        height: 48,
    };
    let mut agent = agent(config);
    agent.start(&brief(display)).await.unwrap();
    for turn in 1..=5 {
        let delivery = (turn > 1).then(|| delivered(1));
        agent
            .turn(&observation(turn, display, delivery))
            .await
            .unwrap();
    }
    let last = &server.requests()[4].body["messages"];
    let text = last.to_string();
    let n_screens = text.matches("data:image/png").count();
    // The reference image plus the two most recent screenshots.
    assert_eq!(n_screens, 3, "{text}");
    assert_eq!(text.matches("[older screenshot omitted]").count(), 3);
}

#[tokio::test]
async fn missing_key_and_native_mode_are_config_errors() {
    let config = config(
        Provider::ChatCompletions,
        "http://127.0.0.1:9",
        ToolMode::Function,
    );
    let error = build_agent_with_env(config.clone(), |_| None)
        .err()
        .unwrap();
    assert!(matches!(error, ModelError::MissingKey { ref env } if env == KEY_ENV));
    let mut native = config.clone();
    native.tool_mode = ToolMode::Native;
    let error = build_agent_with_env(native, |_| Some(SECRET.into()))
        .err()
        .unwrap();
    assert!(
        error.to_string().contains("no native computer tool"),
        "{error}"
    );
    // An empty key variable name means a keyless local server.
    let mut keyless = config;
    keyless.api_key_env = String::new();
    assert!(build_agent_with_env(keyless, |_| None).is_ok());
}

#[tokio::test]
async fn connect_errors_are_retried_then_reported() {
    // Bind and drop a listener so the port refuses connections.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let mut agent = agent(config(Provider::ChatCompletions, &url, ToolMode::Function));
    let display = DisplaySize {
        width: 64,
        height: 48,
    };
    agent.start(&brief(display)).await.unwrap();
    let error = agent
        .turn(&observation(1, display, None))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("after 3 attempts"), "{message}");
    assert!(!message.contains(SECRET));
}
