//! A scripted model server on 127.0.0.1 that records every request and answers from a queue,
//! plus builders for briefs, observations and captured logs.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use desk_contract::DisplaySize;
use desk_harness::{Agent, BatchDelivery, DeliveryStatus, Observation, ObservedImage, TaskBrief};
use desk_models::{ModelConfig, Provider, ToolMode, build_agent_with_env};
use serde_json::Value;

/// The key the tests put in the fake environment; it must never show up in logs or errors.
pub(crate) const SECRET: &str = "sk-test-SECRET-5f2c9a";
pub(crate) const KEY_ENV: &str = "DESK_MODELS_TEST_KEY";

/// One recorded request.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

#[derive(Default)]
struct Script {
    replies: VecDeque<(u16, Value)>,
    requests: Vec<Recorded>,
}

/// A running scripted server.
pub(crate) struct Scripted {
    pub(crate) url: String,
    script: Arc<Mutex<Script>>,
}

impl Scripted {
    pub(crate) async fn start(replies: Vec<(u16, Value)>) -> Scripted {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            requests: Vec::new(),
        }));
        let app = Router::new().fallback(answer).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Scripted {
            url: format!("http://{address}"),
            script,
        }
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }
}

async fn answer(
    State(script): State<Arc<Mutex<Script>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut script = script.lock().unwrap();
    script.requests.push(Recorded {
        path: uri.path().to_string(),
        headers,
        body,
    });
    let (status, reply) = script.replies.pop_front().unwrap_or((
        418,
        serde_json::json!({"error": {"message": "script exhausted"}}),
    ));
    (StatusCode::from_u16(status).unwrap(), axum::Json(reply)).into_response()
}

/// A config pointed at the scripted server, with fast retries and the test key variable.
pub(crate) fn config(provider: Provider, url: &str, mode: ToolMode) -> ModelConfig {
    let mut config = ModelConfig::new(provider, "test-model-1");
    config.base_url = url.to_string();
    config.api_key_env = KEY_ENV.to_string();
    config.tool_mode = mode;
    config.retry_base_delay = std::time::Duration::from_millis(5);
    config.max_retries = 2;
    config.request_timeout = std::time::Duration::from_secs(20);
    config
}

pub(crate) fn agent(config: ModelConfig) -> Box<dyn Agent> {
    build_agent_with_env(config, |name| (name == KEY_ENV).then(|| SECRET.to_string())).unwrap()
}

/// A solid PNG with a marker pixel color, at `width` x `height`.
pub(crate) fn png(width: u32, height: u32, shade: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    let data = vec![shade; (width * height * 3) as usize];
    writer.write_image_data(&data).unwrap();
    writer.finish().unwrap();
    out
}

pub(crate) fn image(width: u32, height: u32, shade: u8, sequence: u64) -> ObservedImage {
    ObservedImage {
        png: png(width, height, shade),
        width,
        height,
        sequence,
        sha256: format!("{shade:064x}"),
    }
}

pub(crate) fn brief(display: DisplaySize) -> TaskBrief {
    TaskBrief {
        task_id: "task-007".to_string(),
        prompt: "Draw a 40 mm circle at the origin.".to_string(),
        reference: image(320, 240, 200, 0),
        display,
        max_actions: 5000,
        wall_time_s: 900,
    }
}

pub(crate) fn observation(
    turn: u32,
    display: DisplaySize,
    delivery: Option<BatchDelivery>,
) -> Observation {
    Observation {
        turn,
        screenshot: image(
            display.width,
            display.height,
            10 + turn as u8,
            u64::from(turn),
        ),
        delivery,
        remaining_actions: 5000 - u64::from(turn) * 2,
        remaining_ms: 800_000,
    }
}

pub(crate) fn delivered(n_executed: u64) -> BatchDelivery {
    BatchDelivery {
        status: DeliveryStatus::InputInjected,
        n_executed,
        message: format!("{n_executed} actions injected"),
        batch_start_sha256: "a".repeat(64),
        final_sha256: "b".repeat(64),
        screen_changed: true,
    }
}

pub(crate) fn rejected(message: &str) -> BatchDelivery {
    BatchDelivery {
        status: DeliveryStatus::Rejected,
        n_executed: 0,
        message: message.to_string(),
        batch_start_sha256: "a".repeat(64),
        final_sha256: "a".repeat(64),
        screen_changed: false,
    }
}

/// Decodes a `data:image/png;base64,` URL or raw base64 and returns the PNG's size.
pub(crate) fn png_size_of(data: &str) -> (u32, u32) {
    let b64 = data.strip_prefix("data:image/png;base64,").unwrap_or(data);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let size = desk_models::scale::png_size(&bytes).unwrap();
    (size.width, size.height)
}

/// A tracing writer that keeps everything logged during a test.
#[derive(Clone, Default)]
pub(crate) struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Installs a TRACE-level subscriber for the current thread (tests run on current_thread).
    pub(crate) fn install(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }
}

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Asserts the secret appears in no request body, no log line and nowhere in `extra`.
pub(crate) fn assert_no_secret(server: &Scripted, logs: &LogBuffer, extra: &[String]) {
    for request in server.requests() {
        assert!(
            !request.body.to_string().contains(SECRET),
            "secret in a request body"
        );
    }
    assert!(!logs.text().contains(SECRET), "secret in the logs");
    for text in extra {
        assert!(!text.contains(SECRET), "secret in {text}");
    }
}
