//! End to end: `desk_harness::run_rollout` drives each adapter against a scripted model server,
//! through a broker served in-process on a temp Unix socket with a 1920x1080 `FakeDesktop`.
//! Covers multi-item batches, a malformed tool call, `done`, budget exhaustion, and coordinate
//! scaling (the model sees 1280x720 and clicks (640, 360); the desktop receives (960, 540)).

use std::path::PathBuf;
use std::time::Duration;

use desk_broker::{BackendRequest, Broker, BrokerConfig, FaultHook};
use desk_client::Client;
use desk_contract::{Button, DisplaySize, InputAction, ScreenPoint};
use desk_desktop::fake::{FakeHandle, FakeSave};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
use desk_harness::{RolloutOptions, RolloutRecord, RolloutStatus, run_rollout};
use desk_models::{Provider, ToolMode};
use desk_server::serve_unix;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::support::*;

const PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
save_keys = ["ctrl", "s"]
save_timeout_ms = 500
[attempt]
filename = "attempt.dxf"
template = "0\nEOF\n"
[window]
maximize = true
"#;

struct Served {
    dir: tempfile::TempDir,
    socket: PathBuf,
    fake: FakeHandle,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), desk_broker::BrokerError>>,
}

async fn serve_broker() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let mut profiles = ProfileSet::default();
    profiles.insert(AppProfile::from_toml("fake", PROFILE).unwrap());
    let mut config = BrokerConfig::new(dir.path().join("state"), profiles);
    config.display = DisplaySize::FULL_HD;
    config.default_profile = "fake".to_string();
    config.fault = FaultHook::None;
    let fake = FakeHandle::default();
    fake.set_save(FakeSave::AttemptFromArgv);
    let handle = fake.clone();
    let broker = Broker::open(config, move |request: &BackendRequest| {
        let desktop: Box<dyn DesktopBackend> =
            Box::new(FakeDesktop::with_handle(request.display, handle.clone()));
        Ok::<_, BackendError>(desktop)
    })
    .unwrap();
    let socket = dir.path().join("broker.sock");
    let (stop, stopped) = oneshot::channel::<()>();
    let server_socket = socket.clone();
    let task = tokio::spawn(async move {
        serve_unix(&server_socket, broker, async {
            let _ = stopped.await;
        })
        .await
    });
    for _ in 0..200 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Served {
        dir,
        socket,
        fake,
        stop: Some(stop),
        task,
    }
}

impl Served {
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.unwrap().unwrap();
    }
}

/// Wire-format replies of one provider: a `computer_action` call, and a text-only answer.
fn call(provider: Provider, call_id: &str, actions: Value) -> Value {
    let arguments = json!({"actions": actions}).to_string();
    raw_call(provider, call_id, &arguments)
}

fn raw_call(provider: Provider, call_id: &str, arguments: &str) -> Value {
    match provider {
        Provider::OpenAiResponses => json!({"id": "r", "status": "completed", "output": [
            {"type": "function_call", "id": "fc", "call_id": call_id, "name": "computer_action",
             "arguments": arguments}], "usage": {"input_tokens": 10, "output_tokens": 2}}),
        Provider::ChatCompletions => json!({"choices": [{"index": 0, "message": {
            "role": "assistant", "content": null, "tool_calls": [{"id": call_id, "type": "function",
            "function": {"name": "computer_action", "arguments": arguments}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}),
        Provider::Anthropic => {
            let input: Value = serde_json::from_str(arguments).unwrap_or(json!({"actions": 7}));
            json!({"id": "m", "type": "message", "role": "assistant", "content": [
                {"type": "tool_use", "id": call_id, "name": "computer_action", "input": input}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 2}})
        }
    }
}

fn task() -> (desk_cad::Task, desk_cad::Model) {
    let (drawings, _) = desk_cad::generate_corpus_version(desk_cad::CorpusVersion::V1);
    let generated = drawings.into_iter().next().unwrap();
    (generated.task, generated.gold)
}

async fn rollout(
    provider: Provider,
    mode: ToolMode,
    replies: Vec<Value>,
    max_actions: Option<u64>,
) -> (RolloutRecord, Vec<InputAction>, Vec<Recorded>) {
    let served = serve_broker().await;
    let model = Scripted::start(replies.into_iter().map(|reply| (200, reply)).collect()).await;
    let mut config = config(provider, &model.url, mode);
    if provider == Provider::Anthropic {
        config.model = "claude-sonnet-4-5".into(); // takes `computer_20250124`
    }
    let mut agent = agent(config);
    let client = Client::new(&served.socket);
    let (task, gold) = task();
    let options = RolloutOptions {
        rollout_id: "ro-1".to_string(),
        attempt_id: "attempt-1".to_string(),
        dir: served.dir.path().join("rollout"),
        broker_version: "test".to_string(),
        versions: desk_harness::SoftwareVersions::default(),
        profile: None,
        corpus_version: desk_cad::CORPUS_VERSION.to_string(),
        max_actions,
        wall_time: Some(Duration::from_secs(60)),
        require_sandbox: false,
    };
    let reference = png(400, 300, 255);
    let gold = desk_cad::Gold::Drawing(gold);
    let record = run_rollout(&client, &task, &reference, &gold, agent.as_mut(), &options)
        .await
        .unwrap();
    let inputs = served.fake.inputs();
    let requests = model.requests();
    served.stop().await;
    (record, inputs, requests)
}

fn clicks(inputs: &[InputAction]) -> Vec<ScreenPoint> {
    inputs
        .iter()
        .filter_map(|input| match input {
            InputAction::Click {
                at,
                button: Button::Left,
                ..
            } => Some(*at),
            _ => None,
        })
        .collect()
}

/// A request's whole body as text, for substring checks.
fn request_text(request: &Recorded) -> String {
    request.body.to_string()
}

async fn batch_malformed_done(provider: Provider) {
    let replies = vec![
        call(
            provider,
            "c1",
            json!([
            {"type": "click", "x": 640, "y": 360, "button": "left", "intent": "focus the canvas"},
            {"type": "type", "text": "circle", "intent": "command"},
            {"type": "key", "keys": ["enter"], "intent": "run"}]),
        ),
        raw_call(provider, "c2", "{\"actions\": [{\"type\": "),
        call(
            provider,
            "c3",
            json!([{"type": "done", "intent": "finished"}]),
        ),
    ];
    let (record, inputs, requests) = rollout(provider, ToolMode::Function, replies, None).await;
    assert_eq!(
        record.status,
        RolloutStatus::Done,
        "{provider:?}: {:?}",
        record.status_detail
    );
    assert_eq!(record.n_turns, 3);
    assert_eq!(
        record.n_rejected_batches, 1,
        "the malformed call was refused"
    );
    assert_eq!(record.actions_used, 4);
    // Scaled exactly once: (640, 360) in the 1280x720 image is (960, 540) on the display.
    assert_eq!(clicks(&inputs), vec![ScreenPoint { x: 960, y: 540 }]);
    assert!(
        inputs
            .iter()
            .any(|input| matches!(input, InputAction::Type { text } if text == "circle"))
    );
    assert_eq!(requests.len(), 3);
    assert!(request_text(&requests[0]).contains("1280x720"));
    assert!(request_text(&requests[1]).contains("input_injected"));
    let malformed = match provider {
        Provider::Anthropic => "must be an array",
        _ => "not valid JSON",
    };
    assert!(request_text(&requests[2]).contains(malformed));
    assert!(request_text(&requests[2]).contains("batch refused"));
    assert_eq!(record.tokens.input_tokens, 30);
}

async fn budget_exhaustion(provider: Provider) {
    let wait = |intent: &str| json!({"type": "wait", "milliseconds": 5, "intent": intent});
    let replies = vec![
        call(
            provider,
            "b1",
            json!([wait("a"), wait("b"), wait("c"), wait("d")]),
        ),
        call(provider, "b2", json!([wait("a"), wait("b"), wait("c")])),
    ];
    let (record, _, requests) = rollout(provider, ToolMode::Function, replies, Some(3)).await;
    assert_eq!(
        record.status,
        RolloutStatus::ActionBudgetExhausted,
        "{provider:?}: {:?}",
        record.status_detail
    );
    assert_eq!(record.actions_used, 3);
    assert_eq!(record.n_rejected_batches, 1);
    assert_eq!(requests.len(), 2);
    let second = request_text(&requests[1]);
    assert!(second.contains("batch refused"), "{second}");
    assert!(
        second.contains("only 3 remain in the action budget"),
        "{second}"
    );
}

#[tokio::test]
async fn responses_rollout_batch_malformed_done() {
    batch_malformed_done(Provider::OpenAiResponses).await;
}

#[tokio::test]
async fn chat_rollout_batch_malformed_done() {
    batch_malformed_done(Provider::ChatCompletions).await;
}

#[tokio::test]
async fn anthropic_rollout_batch_malformed_done() {
    batch_malformed_done(Provider::Anthropic).await;
}

#[tokio::test]
async fn responses_rollout_budget_exhaustion() {
    budget_exhaustion(Provider::OpenAiResponses).await;
}

#[tokio::test]
async fn chat_rollout_budget_exhaustion() {
    budget_exhaustion(Provider::ChatCompletions).await;
}

#[tokio::test]
async fn anthropic_rollout_budget_exhaustion() {
    budget_exhaustion(Provider::Anthropic).await;
}

#[tokio::test]
async fn native_openai_rollout_scales_and_ends_without_a_tool_call() {
    let replies = vec![
        json!({"id": "r1", "status": "completed", "output": [{"type": "computer_call",
            "id": "cu", "call_id": "cc1", "pending_safety_checks": [], "actions": [
                {"type": "click", "x": 640, "y": 360, "button": "left"},
                {"type": "keypress", "keys": ["CTRL", "S"]}]}]}),
        json!({"id": "r2", "status": "completed", "output": [{"type": "computer_call",
            "id": "cu2", "call_id": "cc2", "action": {"type": "click", "x": 1, "y": 1,
            "button": "forward"}}]}),
        json!({"id": "r3", "status": "completed", "output": [{"type": "message", "id": "m",
            "role": "assistant", "content": [{"type": "output_text", "text": "Saved."}]}]}),
    ];
    let (record, inputs, requests) =
        rollout(Provider::OpenAiResponses, ToolMode::Native, replies, None).await;
    assert_eq!(
        record.status,
        RolloutStatus::NoToolCall,
        "{:?}",
        record.status_detail
    );
    assert_eq!(record.actions_used, 2);
    assert_eq!(record.n_rejected_batches, 1);
    assert_eq!(clicks(&inputs), vec![ScreenPoint { x: 960, y: 540 }]);
    assert!(request_text(&requests[1]).contains("computer_call_output"));
    assert!(request_text(&requests[2]).contains("forward"));
}

#[tokio::test]
async fn native_anthropic_rollout_with_a_held_button_drag() {
    let computer = |id: &str, input: Value| {
        json!({"id": "m", "type": "message",
        "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "computer",
        "input": input}], "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}})
    };
    let replies = vec![
        computer(
            "t1",
            json!({"action": "left_click", "coordinate": [640, 360]}),
        ),
        computer("t2", json!({"action": "left_mouse_down"})),
        computer(
            "t3",
            json!({"action": "left_mouse_up", "coordinate": [700, 400]}),
        ),
        json!({"id": "m", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}),
    ];
    let (record, inputs, _) = rollout(Provider::Anthropic, ToolMode::Native, replies, None).await;
    assert_eq!(
        record.status,
        RolloutStatus::NoToolCall,
        "{:?}",
        record.status_detail
    );
    assert_eq!(clicks(&inputs), vec![ScreenPoint { x: 960, y: 540 }]);
    let drag = inputs
        .iter()
        .find_map(|input| match input {
            InputAction::Drag { path, .. } => Some(path.clone()),
            _ => None,
        })
        .expect("the press and release became one drag");
    assert_eq!(
        drag,
        vec![
            ScreenPoint { x: 960, y: 540 },
            ScreenPoint { x: 1050, y: 600 }
        ]
    );
}
