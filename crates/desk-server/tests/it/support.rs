//! Test harness: a broker on a temporary state dir with `FakeDesktop` backends, driven through
//! `router(..).oneshot(..)` as a Unix-socket peer of this uid that sends each session's lease
//! token.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use desk_broker::{BackendRequest, Broker, BrokerConfig, FaultHook};
use desk_contract::DisplaySize;
use desk_desktop::fake::{FakeHandle, FakeSave};
use desk_desktop::{AppProfile, BackendError, DesktopBackend, FakeDesktop, ProfileSet};
use desk_server::{Peer, router};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

pub(crate) const DISPLAY: DisplaySize = DisplaySize {
    width: 640,
    height: 400,
};

const FAKE_PROFILE: &str = r#"
name = "fake"
command = ["fake-app", "{attempt}"]
save_keys = ["ctrl", "s"]
save_timeout_ms = 300
[attempt]
filename = "attempt.txt"
template = "initial\n"
[window]
maximize = true
"#;

pub(crate) fn profiles() -> ProfileSet {
    let mut set = ProfileSet::default();
    set.insert(AppProfile::from_toml("fake", FAKE_PROFILE).unwrap());
    let other = FAKE_PROFILE.replace("name = \"fake\"", "name = \"other\"");
    set.insert(AppProfile::from_toml("other", &other).unwrap());
    set
}

pub(crate) struct Harness {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) broker: Broker,
    pub(crate) app: Router,
    pub(crate) fake: FakeHandle,
}

pub(crate) fn config(state_dir: PathBuf) -> BrokerConfig {
    let mut config = BrokerConfig::new(state_dir, profiles());
    config.display = DISPLAY;
    config.default_profile = "fake".to_string();
    config.fault = FaultHook::None;
    config
}

pub(crate) fn open_broker(config: BrokerConfig, fake: &FakeHandle) -> Broker {
    let handle = fake.clone();
    Broker::open(config, move |request: &BackendRequest| {
        let desktop: Box<dyn DesktopBackend> =
            Box::new(FakeDesktop::with_handle(request.display, handle.clone()));
        Ok::<_, BackendError>(desktop)
    })
    .unwrap()
}

impl Harness {
    /// `name` in session `id`'s directory.
    pub(crate) fn session_file(&self, id: &str, name: &str) -> PathBuf {
        self.dir.path().join("sessions").join(id).join(name)
    }

    pub(crate) fn new() -> Harness {
        Harness::with(|_| {})
    }

    pub(crate) fn with(adjust: impl FnOnce(&mut BrokerConfig)) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path().to_path_buf());
        adjust(&mut config);
        let fake = FakeHandle::default();
        fake.set_save(FakeSave::AttemptFromArgv);
        let broker = open_broker(config, &fake);
        Harness {
            app: router(broker.clone()),
            broker,
            fake,
            dir,
        }
    }

    /// Sends a request with a raw body; returns status and body text.
    pub(crate) async fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<String>,
    ) -> (StatusCode, String) {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            // What `serve_unix` attaches for a peer running as this user.
            .extension(ConnectInfo(Peer::current_user()));
        if let Some(token) = lease_token_for(path) {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let request = builder
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .unwrap();
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        if path == "/v1/leases" && status == StatusCode::OK {
            remember_lease_token(&text);
        }
        (status, text)
    }

    /// Sends a request with a JSON body; returns status and parsed JSON.
    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, text) = self
            .raw(method, path, body.map(|value| value.to_string()))
            .await;
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("{method} {path}: non-JSON answer {text:?}: {error}"));
        (status, value)
    }

    pub(crate) async fn lease(&self, task: &str, attempt: &str) -> String {
        let (status, body) = self
            .call(
                "POST",
                "/v1/leases",
                Some(json!({"task_id": task, "attempt_id": attempt})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["session_id"].as_str().unwrap().to_string()
    }

    /// A leased and reset session.
    pub(crate) async fn ready(&self) -> String {
        let id = self.lease("task-1", "attempt-1").await;
        let (status, body) = self
            .call(
                "POST",
                &format!("/v1/sessions/{id}/reset"),
                Some(json!({"request_id": "r0"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        id
    }

    pub(crate) async fn act(
        &self,
        id: &str,
        request_id: &str,
        index: u64,
        action: Value,
    ) -> (StatusCode, Value) {
        let body =
            json!({"request_id": request_id, "expected_action_index": index, "action": action});
        self.call("POST", &format!("/v1/sessions/{id}/actions"), Some(body))
            .await
    }

    pub(crate) async fn status(&self, id: &str) -> Value {
        let (status, body) = self.call("GET", &format!("/v1/sessions/{id}"), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }
}

/// Lease tokens by session id (ids are random, so one map serves every harness), as a client
/// keeps them: each lease answer's token is sent on that session's requests.
static LEASE_TOKENS: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Default::default);

pub(crate) fn remember_lease_token(lease_answer: &str) {
    let answer: Value = serde_json::from_str(lease_answer).unwrap();
    let id = answer["session_id"].as_str().unwrap().to_string();
    let token = answer["lease_token"].as_str().unwrap().to_string();
    LEASE_TOKENS.lock().unwrap().insert(id, token);
}

fn lease_token_for(path: &str) -> Option<String> {
    let id = path
        .strip_prefix("/v1/sessions/")?
        .split(['/', '?'])
        .next()?;
    LEASE_TOKENS.lock().unwrap().get(id).cloned()
}

pub(crate) fn click(x: i64, y: i64) -> Value {
    json!({"type": "click", "x": x, "y": y, "intent": "press a button"})
}

pub(crate) const SHORT: Duration = Duration::from_millis(10);
