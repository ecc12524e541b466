//! The Anthropic Messages adapter against a scripted `/v1/messages` server: function tool and
//! the native computer tool (held mouse button, click modifiers, keys, scroll, scaling).

use desk_contract::DisplaySize;
use desk_harness::{TokenUsage, TurnOutcome};
use desk_models::{Provider, ToolMode};
use serde_json::{Value, json};

use crate::support::*;

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({
        "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": "test-model-1",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig"},
            {"type": "text", "text": "Next step."},
            {"type": "tool_use", "id": id, "name": name, "input": input}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 700, "output_tokens": 60, "cache_read_input_tokens": 100}
    })
}

/// The native tool with a model that takes `computer_20250124`.
fn native_config(url: &str) -> desk_models::ModelConfig {
    let mut config = config(Provider::Anthropic, url, ToolMode::Native);
    config.model = "claude-sonnet-4-5".into();
    config
}

fn text_only(text: &str) -> Value {
    json!({"id": "msg_t", "type": "message", "role": "assistant", "content": [
        {"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}})
}

#[tokio::test]
async fn function_tool_batch_malformed_done() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let batch = json!({"actions": [
        {"type": "double_click", "x": 640, "y": 360, "button": "left", "intent": "select"},
        {"type": "key", "keys": ["ctrl", "a"], "intent": "all"}]});
    let server = Scripted::start(vec![
        (200, tool_use("toolu_1", "computer_action", batch)),
        (
            200,
            tool_use("toolu_2", "computer_action", json!({"actions": []})),
        ),
        (
            200,
            tool_use(
                "toolu_3",
                "computer_action",
                json!({"actions": [{"type": "done", "intent": "finished"}]}),
            ),
        ),
        (200, text_only("All done.")),
    ])
    .await;
    let mut config = config(Provider::Anthropic, &server.url, ToolMode::Function);
    config.reasoning_effort = Some("medium".into());
    let mut agent = agent(config);
    assert_eq!(agent.info().agent, "anthropic");
    agent.start(&brief(DisplaySize::FULL_HD)).await.unwrap();

    let turn = agent
        .turn(&observation(1, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    // The thinking and the text beside the call are kept for the report.
    assert_eq!(turn.said.reasoning.as_deref(), Some("plan"));
    assert_eq!(turn.said.text.as_deref(), Some("Next step."));
    assert_eq!(
        turn.usage,
        TokenUsage {
            input_tokens: 800,
            output_tokens: 60,
            reasoning_tokens: 0
        }
    );
    let TurnOutcome::Actions { call_id, actions } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id, "toolu_1");
    assert_eq!(
        actions[0],
        json!({"type": "double_click", "x": 960, "y": 540, "button": "left",
        "intent": "select"})
    );
    assert_eq!(actions.len(), 2);
    let turn = agent
        .turn(&observation(2, DisplaySize::FULL_HD, Some(delivered(2))))
        .await
        .unwrap();
    let TurnOutcome::Malformed { call_id, error } = turn.outcome else {
        panic!()
    };
    assert_eq!(call_id.as_deref(), Some("toolu_2"));
    assert!(error.contains("empty"), "{error}");
    let turn = agent
        .turn(&observation(3, DisplaySize::FULL_HD, None))
        .await
        .unwrap();
    let TurnOutcome::Actions { actions, .. } = turn.outcome else {
        panic!()
    };
    assert_eq!(actions[0]["type"], "done");
    let turn = agent
        .turn(&observation(4, DisplaySize::FULL_HD, Some(delivered(1))))
        .await
        .unwrap();
    assert_eq!(
        turn.outcome,
        TurnOutcome::NoToolCall {
            text: "All done.".into()
        }
    );

    let requests = server.requests();
    for request in &requests {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some(SECRET));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("anthropic-beta"), None);
        assert_eq!(request.body["model"], "test-model-1");
        assert_eq!(request.body["max_tokens"], 16384);
        assert_eq!(request.body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(request.body["output_config"], json!({"effort": "medium"}));
        assert_eq!(request.body["tools"][0]["name"], "computer_action");
        assert_eq!(request.body["tools"][0]["input_schema"]["type"], "object");
        assert!(
            request.body["system"]
                .as_str()
                .unwrap()
                .contains("1280x720")
        );
    }
    let first = &requests[0].body["messages"][0]["content"];
    assert_eq!(first[1]["type"], "image");
    assert_eq!(first[1]["source"]["media_type"], "image/png");
    assert_eq!(
        png_size_of(first[3]["source"]["data"].as_str().unwrap()),
        (1280, 720)
    );
    // Turn 2: the assistant content (thinking included) verbatim, then the tool_result.
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"][0]["type"], "thinking");
    assert_eq!(messages[1]["content"][0]["signature"], "sig");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["is_error"], false);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("input_injected")
    );
    assert_eq!(result["content"][1]["type"], "image");
    // Turn 3: the malformed call's error, flagged.
    let messages = requests[2].body["messages"].as_array().unwrap();
    let result = &messages.last().unwrap()["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_2");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("empty")
    );
    assert_no_secret(&server, &logs, &[]);
}

fn strip_intents(actions: &[Value]) -> Vec<Value> {
    actions
        .iter()
        .map(|action| {
            let mut action = action.clone();
            let intent = action.as_object_mut().unwrap().remove("intent").unwrap();
            assert!(
                intent
                    .as_str()
                    .unwrap()
                    .starts_with("anthropic computer tool")
            );
            action
        })
        .collect()
}

#[tokio::test]
async fn native_tool_maps_held_buttons_modifiers_keys_and_scroll() {
    let computer = |id: &str, input: Value| (200, tool_use(id, "computer", input));
    let server = Scripted::start(vec![
        computer(
            "t1",
            json!({"action": "mouse_move", "coordinate": [100, 100]}),
        ),
        computer("t2", json!({"action": "left_mouse_down"})),
        computer(
            "t3",
            json!({"action": "mouse_move", "coordinate": [200, 150]}),
        ),
        computer(
            "t4",
            json!({"action": "left_mouse_up", "coordinate": [300, 200]}),
        ),
        computer(
            "t5",
            json!({"action": "left_click", "coordinate": [640, 360], "text": "shift+ctrl"}),
        ),
        computer("t6", json!({"action": "key", "text": "ctrl+s Return"})),
        computer(
            "t7",
            json!({"action": "scroll", "coordinate": [10, 20], "scroll_direction": "up",
            "scroll_amount": 5, "text": "ctrl"}),
        ),
        computer(
            "t8",
            json!({"action": "left_click_drag", "start_coordinate": [0, 0],
            "coordinate": [2, 2]}),
        ),
        computer(
            "t9",
            json!({"action": "hold_key", "text": "shift", "duration": 12.5}),
        ),
        computer("t10", json!({"action": "screenshot"})),
        computer(
            "t11",
            json!({"action": "triple_click", "coordinate": [1, 1]}),
        ),
        computer("t12", json!({"action": "type", "text": "10,20\n"})),
        (200, text_only("Drawing saved.")),
    ])
    .await;
    let mut agent = agent(native_config(&server.url));
    agent.start(&brief(DisplaySize::FULL_HD)).await.unwrap();
    let mut batches = Vec::new();
    let mut errors = Vec::new();
    for turn in 1..=13u32 {
        let delivery = (turn > 1).then(|| delivered(1));
        let outcome = agent
            .turn(&observation(turn, DisplaySize::FULL_HD, delivery))
            .await
            .unwrap()
            .outcome;
        match outcome {
            TurnOutcome::Actions { call_id, actions } => {
                assert_eq!(call_id, format!("t{turn}"));
                batches.push(strip_intents(&actions));
            }
            TurnOutcome::Malformed { call_id, error } => {
                assert_eq!(call_id, Some(format!("t{turn}")));
                errors.push(error);
            }
            TurnOutcome::NoToolCall { text } => assert_eq!(text, "Drawing saved."),
        }
    }
    let wait1 = json!([{"type": "wait", "milliseconds": 1}]);
    assert_eq!(
        Value::from(batches[0].clone()),
        json!([{"type": "move", "x": 150, "y": 150, "duration_ms": 0}])
    );
    // The press and the held move are deferred; the release emits the whole drag.
    assert_eq!(Value::from(batches[1].clone()), wait1);
    assert_eq!(Value::from(batches[2].clone()), wait1);
    assert_eq!(
        Value::from(batches[3].clone()),
        json!([{"type": "drag", "path": [
        {"x": 150, "y": 150}, {"x": 300, "y": 225}, {"x": 450, "y": 300}],
        "button": "left", "duration_ms": 300}])
    );
    assert_eq!(
        Value::from(batches[4].clone()),
        json!([{"type": "click", "x": 960, "y": 540,
        "button": "left", "modifiers": ["shift", "ctrl"]}])
    );
    assert_eq!(
        Value::from(batches[5].clone()),
        json!([{"type": "key", "keys": ["ctrl+s"]},
        {"type": "key", "keys": ["Return"]}])
    );
    assert_eq!(
        Value::from(batches[6].clone()),
        json!([
        {"type": "move", "x": 15, "y": 30, "duration_ms": 0},
        {"type": "scroll", "dx": 0, "dy": -5, "modifiers": ["ctrl"]}])
    );
    assert_eq!(
        Value::from(batches[7].clone()),
        json!([{"type": "drag", "path": [
        {"x": 0, "y": 0}, {"x": 3, "y": 3}], "button": "left", "duration_ms": 300}])
    );
    assert_eq!(
        Value::from(batches[8].clone()),
        json!([{"type": "key", "keys": ["shift"]},
        {"type": "wait", "milliseconds": 10000}, {"type": "wait", "milliseconds": 2500}])
    );
    assert_eq!(Value::from(batches[9].clone()), wait1);
    assert_eq!(
        Value::from(batches[10].clone()),
        json!([{"type": "type", "text": "10,20"},
        {"type": "key", "keys": ["return"]}])
    );
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("triple_click"), "{}", errors[0]);

    let requests = server.requests();
    for request in &requests {
        assert_eq!(
            request.header("anthropic-beta"),
            Some("computer-use-2025-01-24")
        );
        assert_eq!(
            request.body["tools"],
            json!([{"type": "computer_20250124", "name": "computer",
            "display_width_px": 1280, "display_height_px": 720}])
        );
    }
    // The deferred press is explained to the model in the next tool result.
    let messages = requests[2].body["messages"].as_array().unwrap();
    let result = &messages.last().unwrap()["content"][0];
    assert_eq!(result["tool_use_id"], "t2");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("deferred")
    );
}

#[tokio::test]
async fn rejected_batch_restores_the_pointer_state() {
    let computer = |id: &str, input: Value| (200, tool_use(id, "computer", input));
    let server = Scripted::start(vec![
        computer("a", json!({"action": "mouse_move", "coordinate": [10, 10]})),
        computer(
            "b",
            json!({"action": "mouse_move", "coordinate": [99999, 10]}),
        ),
        computer("c", json!({"action": "left_click"})),
    ])
    .await;
    let display = DisplaySize {
        width: 640,
        height: 400,
    };
    let mut agent = agent(native_config(&server.url));
    agent.start(&brief(display)).await.unwrap();
    agent.turn(&observation(1, display, None)).await.unwrap();
    agent
        .turn(&observation(2, display, Some(delivered(1))))
        .await
        .unwrap();
    // The harness refused the out-of-range move, so the pointer is still at (10, 10).
    let turn = agent
        .turn(&observation(
            3,
            display,
            Some(rejected("x=99999 is outside the 640x400 display")),
        ))
        .await
        .unwrap();
    let TurnOutcome::Actions { actions, .. } = turn.outcome else {
        panic!()
    };
    assert_eq!(
        (&actions[0]["x"], &actions[0]["y"]),
        (&json!(10), &json!(10))
    );
    let messages = server.requests()[2].body["messages"].clone();
    assert!(messages.to_string().contains("outside the 640x400 display"));
}
