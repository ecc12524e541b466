//! The OpenAI Responses adapter against a scripted `/responses` server: function tool (batch,
//! malformed call, done, scaling, retries, no tool call) and the native computer tool.

use desk_contract::DisplaySize;
use desk_harness::{TokenUsage, TurnOutcome};
use desk_models::{Provider, ToolMode};
use serde_json::{Value, json};

use crate::support::*;

fn function_call(call_id: &str, arguments: &str) -> Value {
    json!({
        "id": format!("resp_{call_id}"), "object": "response", "status": "completed",
        "output": [
            {"type": "reasoning", "id": format!("rs_{call_id}"), "summary": [],
             "encrypted_content": "opaque"},
            {"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
             "name": "computer_action", "arguments": arguments, "status": "completed"}
        ],
        "usage": {"input_tokens": 1200, "output_tokens": 80,
                  "output_tokens_details": {"reasoning_tokens": 30}}
    })
}

fn message(text: &str) -> Value {
    json!({"id": "resp_msg", "status": "completed", "output": [
        {"type": "message", "id": "msg_1", "role": "assistant",
         "content": [{"type": "output_text", "text": text}]}],
        "usage": {"input_tokens": 10, "output_tokens": 5}})
}

const SMALL: DisplaySize = DisplaySize {
    width: 640,
    height: 400,
};

#[tokio::test]
async fn batch_then_malformed_then_done() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let batch = r#"{"actions": [
        {"type": "click", "x": 100, "y": 50, "button": "left", "intent": "focus the command line"},
        {"type": "type", "text": "circle", "intent": "start the circle command"},
        {"type": "key", "keys": ["enter"], "intent": "run it"}]}"#;
    let server = Scripted::start(vec![
        (200, function_call("call_1", batch)),
        (200, function_call("call_2", "{\"actions\": [oops")),
        (
            200,
            function_call(
                "call_3",
                r#"{"actions": [{"type": "done", "intent": "finished"}]}"#,
            ),
        ),
    ])
    .await;
    let mut config = config(Provider::OpenAiResponses, &server.url, ToolMode::Function);
    config.reasoning_effort = Some("high".to_string());
    let mut agent = agent(config);
    assert_eq!(agent.info().agent, "openai-responses");
    agent.start(&brief(SMALL)).await.unwrap();

    let turn = agent.turn(&observation(1, SMALL, None)).await.unwrap();
    assert_eq!(
        turn.usage,
        TokenUsage {
            input_tokens: 1200,
            output_tokens: 80,
            reasoning_tokens: 30
        }
    );
    let TurnOutcome::Actions { call_id, actions } = turn.outcome else {
        panic!("{:?}", turn.outcome)
    };
    assert_eq!(call_id, "call_1");
    assert_eq!(actions.len(), 3);
    assert_eq!(
        actions[0],
        json!({"type": "click", "x": 100, "y": 50, "button": "left",
        "intent": "focus the command line"})
    );

    let turn = agent
        .turn(&observation(2, SMALL, Some(delivered(3))))
        .await
        .unwrap();
    let TurnOutcome::Malformed { call_id, error } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id.as_deref(), Some("call_2"));
    assert!(error.contains("not valid JSON"), "{error}");

    let turn = agent.turn(&observation(3, SMALL, None)).await.unwrap();
    let TurnOutcome::Actions { call_id, actions } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id, "call_3");
    assert_eq!(actions, vec![json!({"type": "done", "intent": "finished"})]);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path, "/responses");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {SECRET}").as_str())
        );
        let body = &request.body;
        assert_eq!(body["model"], "test-model-1");
        assert_eq!(body["reasoning"], json!({"effort": "high"}));
        assert_eq!(body["store"], false);
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["name"], "computer_action");
        assert_eq!(
            body["tools"][0]["parameters"]["properties"]["actions"]["minItems"],
            1
        );
        let instructions = body["instructions"].as_str().unwrap();
        assert!(instructions.contains("640x400 pixels"), "{instructions}");
        assert!(instructions.contains("one-action batch"), "{instructions}");
    }
    // Turn 1: task text, reference image, screen text, screenshot.
    let first = &requests[0].body["input"][0];
    assert_eq!(first["role"], "user");
    assert_eq!(first["content"][0]["type"], "input_text");
    assert!(
        first["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("40 mm circle")
    );
    assert_eq!(first["content"][1]["type"], "input_image");
    assert_eq!(
        png_size_of(first["content"][1]["image_url"].as_str().unwrap()),
        (320, 240)
    );
    assert_eq!(
        png_size_of(first["content"][3]["image_url"].as_str().unwrap()),
        (640, 400)
    );
    // Turn 2 echoes the output items, then the tool result for call_1, then the screenshot.
    let input = requests[1].body["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"], "opaque");
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["call_id"], "call_1");
    let result: Value = serde_json::from_str(input[3]["output"].as_str().unwrap()).unwrap();
    assert_eq!(result["delivery"]["status"], "input_injected");
    assert_eq!(result["delivery"]["n_executed"], 3);
    assert_eq!(input[4]["content"][1]["type"], "input_image");
    // Turn 3 sends the malformed call's error back under its own call id.
    let input = requests[2].body["input"].as_array().unwrap();
    let output = input
        .iter()
        .rev()
        .find(|item| item["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["call_id"], "call_2");
    let result: Value = serde_json::from_str(output["output"].as_str().unwrap()).unwrap();
    assert!(result["error"].as_str().unwrap().contains("not valid JSON"));
    assert_no_secret(&server, &logs, &[]);
}

#[tokio::test]
async fn coordinates_are_scaled_back_once() {
    let batch = r#"{"actions": [
        {"type": "click", "x": 640, "y": 360, "intent": "center"},
        {"type": "drag", "path": [{"x": 0, "y": 0}, {"x": 1279, "y": 719}], "button": "left",
         "duration_ms": 200, "intent": "select all"},
        {"type": "move", "x": 10.4, "y": 20.6, "duration_ms": 0, "intent": "hover"},
        {"type": "click", "x": 1280, "y": 720, "intent": "just outside"}]}"#;
    let server = Scripted::start(vec![(200, function_call("call_s", batch))]).await;
    let mut agent = agent(config(
        Provider::OpenAiResponses,
        &server.url,
        ToolMode::Function,
    ));
    agent.start(&brief(DisplaySize::FULL_HD)).await.unwrap();
    let turn = agent
        .turn(&observation(1, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    let TurnOutcome::Actions { actions, .. } = turn.outcome else {
        panic!()
    };
    assert_eq!(
        (&actions[0]["x"], &actions[0]["y"]),
        (&json!(960), &json!(540))
    );
    assert_eq!(
        actions[1]["path"],
        json!([{"x": 0, "y": 0}, {"x": 1919, "y": 1079}])
    );
    assert_eq!(
        (&actions[2]["x"], &actions[2]["y"]),
        (&json!(16), &json!(31))
    );
    // Out of range stays out of range for the harness to reject: nothing is clamped.
    assert_eq!(
        (&actions[3]["x"], &actions[3]["y"]),
        (&json!(1920), &json!(1080))
    );

    let request = &server.requests()[0].body;
    assert!(
        request["instructions"]
            .as_str()
            .unwrap()
            .contains("1280x720 pixels")
    );
    let screenshot = request["input"][0]["content"][3]["image_url"]
        .as_str()
        .unwrap();
    assert_eq!(png_size_of(screenshot), (1280, 720));
}

#[tokio::test]
async fn no_tool_call_and_several_calls() {
    let mut two = function_call(
        "call_a",
        r#"{"actions": [{"type": "done", "intent": "x"}]}"#,
    );
    let extra = two["output"][1].clone();
    let mut extra = extra;
    extra["call_id"] = json!("call_b");
    two["output"].as_array_mut().unwrap().push(extra);
    let server = Scripted::start(vec![(200, two), (200, message("I am done."))]).await;
    let mut agent = agent(config(
        Provider::OpenAiResponses,
        &server.url,
        ToolMode::Function,
    ));
    agent.start(&brief(SMALL)).await.unwrap();
    let turn = agent.turn(&observation(1, SMALL, None)).await.unwrap();
    let TurnOutcome::Malformed { call_id, error } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id.as_deref(), Some("call_a"));
    assert!(error.contains("2 tool calls"), "{error}");
    let turn = agent.turn(&observation(2, SMALL, None)).await.unwrap();
    assert_eq!(
        turn.outcome,
        TurnOutcome::NoToolCall {
            text: "I am done.".to_string()
        }
    );
    // Both calls of the malformed turn got an output.
    let input = server.requests()[1].body["input"]
        .as_array()
        .unwrap()
        .clone();
    let ids: Vec<&Value> = input
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| &item["call_id"])
        .collect();
    assert_eq!(ids, vec![&json!("call_a"), &json!("call_b")]);
}

#[tokio::test]
async fn retries_only_no_effect_failures_and_never_leaks_the_key() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let done = r#"{"actions": [{"type": "done", "intent": "x"}]}"#;
    let server = Scripted::start(vec![
        (503, json!({"error": {"message": "overloaded"}})),
        (429, json!({"error": {"message": "rate limited"}})),
        (200, function_call("call_r", done)),
        (
            400,
            json!({"error": {"message": format!("bad key {SECRET} in request")}}),
        ),
    ])
    .await;
    let mut agent = agent(config(
        Provider::OpenAiResponses,
        &server.url,
        ToolMode::Function,
    ));
    agent.start(&brief(SMALL)).await.unwrap();
    let turn = agent.turn(&observation(1, SMALL, None)).await.unwrap();
    assert!(matches!(turn.outcome, TurnOutcome::Actions { .. }));
    assert_eq!(server.requests().len(), 3, "503 and 429 were retried");
    let error = agent
        .turn(&observation(2, SMALL, Some(delivered(1))))
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 4, "400 is not retried");
    let message = error.to_string();
    assert!(message.contains("http 400"), "{message}");
    assert!(message.contains("[redacted]"), "{message}");
    assert_no_secret(&server, &logs, &[message, format!("{error:?}")]);
}

#[tokio::test]
async fn native_computer_calls_map_onto_normalized_actions() {
    let call = json!({"id": "resp_n1", "status": "completed", "output": [
        {"type": "reasoning", "id": "rs_n1", "summary": []},
        {"type": "computer_call", "id": "cu_1", "call_id": "ccall_1", "status": "completed",
         "pending_safety_checks": [{"id": "sc_1", "code": "malicious_instructions", "message": "m"}],
         "actions": [
            {"type": "click", "x": 640, "y": 360, "button": "right"},
            {"type": "click", "x": 10, "y": 10, "button": "left", "keys": ["SHIFT"]},
            {"type": "double_click", "x": 20, "y": 20},
            {"type": "drag", "path": [{"x": 0, "y": 0}, {"x": 100, "y": 50}, {"x": 200, "y": 100}]},
            {"type": "keypress", "keys": ["CTRL", "S"]},
            {"type": "type", "text": "line\n"},
            {"type": "scroll", "x": 640, "y": 360, "scroll_x": 0, "scroll_y": -200},
            {"type": "move", "x": 1, "y": 2},
            {"type": "wait"},
            {"type": "screenshot"}]}],
        "usage": {"input_tokens": 5, "output_tokens": 6}});
    let bad = json!({"id": "resp_n2", "status": "completed", "output": [
        {"type": "computer_call", "id": "cu_2", "call_id": "ccall_2", "status": "completed",
         "action": {"type": "click", "x": 5, "y": 5, "button": "back"}}]});
    let server = Scripted::start(vec![
        (200, call),
        (200, bad),
        (200, message("Saved and done.")),
    ])
    .await;
    let mut agent = agent(config(
        Provider::OpenAiResponses,
        &server.url,
        ToolMode::Native,
    ));
    agent.start(&brief(DisplaySize::FULL_HD)).await.unwrap();
    let turn = agent
        .turn(&observation(1, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    let TurnOutcome::Actions { call_id, actions } = turn.outcome else {
        panic!("{:?}", turn.outcome)
    };
    assert_eq!(call_id, "ccall_1");
    let stripped: Vec<Value> = actions
        .iter()
        .map(|action| {
            assert!(
                action["intent"]
                    .as_str()
                    .unwrap()
                    .starts_with("openai computer tool")
            );
            let mut action = action.clone();
            action.as_object_mut().unwrap().remove("intent");
            action
        })
        .collect();
    assert_eq!(
        stripped,
        vec![
            json!({"type": "click", "x": 960, "y": 540, "button": "right"}),
            json!({"type": "click", "x": 15, "y": 15, "button": "left", "modifiers": ["shift"]}),
            json!({"type": "double_click", "x": 30, "y": 30, "button": "left"}),
            json!({"type": "drag", "path": [{"x": 0, "y": 0}, {"x": 150, "y": 75}, {"x": 300, "y": 150}],
               "button": "left", "duration_ms": 300}),
            json!({"type": "key", "keys": ["ctrl", "s"]}),
            json!({"type": "type", "text": "line"}),
            json!({"type": "key", "keys": ["return"]}),
            json!({"type": "move", "x": 960, "y": 540, "duration_ms": 0}),
            json!({"type": "scroll", "dx": 0, "dy": -3}),
            json!({"type": "move", "x": 2, "y": 3, "duration_ms": 0}),
            json!({"type": "wait", "milliseconds": 1000}),
            json!({"type": "wait", "milliseconds": 1}),
        ]
    );

    let turn = agent
        .turn(&observation(2, DisplaySize::FULL_HD, Some(delivered(12))))
        .await
        .unwrap();
    let TurnOutcome::Malformed { call_id, error } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id.as_deref(), Some("ccall_2"));
    assert!(error.contains("back"), "{error}");
    let turn = agent
        .turn(&observation(3, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    assert!(matches!(turn.outcome, TurnOutcome::NoToolCall { .. }));

    let requests = server.requests();
    assert_eq!(requests[0].body["tools"], json!([{"type": "computer"}]));
    let input = requests[1].body["input"].as_array().unwrap();
    let output = input
        .iter()
        .find(|item| item["type"] == "computer_call_output")
        .unwrap();
    assert_eq!(output["call_id"], "ccall_1");
    assert_eq!(output["output"]["type"], "computer_screenshot");
    assert_eq!(output["output"]["detail"], "original");
    assert_eq!(
        png_size_of(output["output"]["image_url"].as_str().unwrap()),
        (1280, 720)
    );
    assert_eq!(output["acknowledged_safety_checks"][0]["id"], "sc_1");
    let text = input.last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("input_injected"), "{text}");
    let input = requests[2].body["input"].as_array().unwrap();
    let output = input
        .iter()
        .rev()
        .find(|item| item["type"] == "computer_call_output")
        .unwrap();
    assert_eq!(output["call_id"], "ccall_2");
    let text = input.last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("not supported"), "{text}");
}
