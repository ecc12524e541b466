//! A typed async client for the broker's HTTP API, over its Unix socket or over TLS.
//!
//! One method per operation, returning the `desk_contract::api` types. Each request opens a
//! fresh connection and does an HTTP/1.1 handshake (sub-millisecond on a Unix socket), so a
//! [`Client`] is cheap to clone and share, and holds no connection state. Error responses become
//! [`ClientError::Api`] with the broker's `{code, message}`; a connection lost mid-request is
//! [`ClientError::Transport`] (for `execute_action` the outcome is then unknown: retry with the
//! same `request_id` and the broker answers from its journal).
//!
//! Credentials: every lease answer carries a `lease_token`, which the client remembers (keyed by
//! broker endpoint and session id) and sends as `Authorization: Bearer …` on that session's
//! requests. By default all clients of one endpoint in this process share that memory, so a
//! session leased through one `Client` value can be driven through another;
//! [`Client::with_private_tokens`] gives a client its own. [`Client::set_lease_token`] supplies a
//! token learned elsewhere (e.g. from the command line). Over TLS ([`Client::remote`]), an
//! optional orchestration credential is sent on the non-session routes. `Debug` never prints a
//! credential. Over a Unix socket, nothing is sent until the socket's directory and the
//! listener's uid (`SO_PEERCRED`) are trusted (`trust`).
//!
//! Over 400 lines: one method per API operation, a few lines each, which read best as one list.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use desk_contract::ErrorBody;
use desk_contract::api::{
    ActionRequest, ActionResponse, ArtifactResponse, CheckpointResponse, LeaseRequest,
    LeaseResponse, LeaseToken, ReleaseResponse, ResetRequest, ResetResponse, Screenshot,
    StatusResponse,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

pub mod binary;
mod clipboard;
mod error;
mod observer;
mod remote;
mod trust;

pub use error::ClientError;
pub use remote::RemoteConfig;

/// Where the broker listens.
#[derive(Clone)]
enum Endpoint {
    Unix(PathBuf),
    Tls(Arc<remote::TlsEndpoint>),
}

impl Endpoint {
    /// The key under which lease tokens of this endpoint are shared.
    fn key(&self) -> String {
        match self {
            Endpoint::Unix(path) => format!("unix:{}", path.display()),
            Endpoint::Tls(tls) => format!("tls:{}", tls.address),
        }
    }
}

type TokenMap = Arc<Mutex<HashMap<String, LeaseToken>>>;

/// Lease tokens shared by all clients of one endpoint in this process.
static SHARED_TOKENS: LazyLock<Mutex<HashMap<String, TokenMap>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn shared_tokens(endpoint: &Endpoint) -> TokenMap {
    let mut shared = SHARED_TOKENS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Arc::clone(shared.entry(endpoint.key()).or_default())
}

/// The broker client. Cheap to clone; clones share their lease tokens.
#[derive(Clone)]
pub struct Client {
    endpoint: Endpoint,
    timeout: Duration,
    tokens: TokenMap,
    /// Orchestration credential, sent on non-session routes.
    credential: Option<Arc<str>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Client")
            .field("endpoint", &self.endpoint.key())
            .field("timeout", &self.timeout)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

/// The default per-request timeout: long enough for a slow app start at reset.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

fn session_path(
    operation: &'static str,
    session_id: &str,
    suffix: &str,
) -> Result<String, ClientError> {
    if session_id.is_empty()
        || !session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~".contains(c))
    {
        return Err(ClientError::Request {
            operation,
            message: format!("session id {session_id:?} is not a plain path segment"),
        });
    }
    Ok(format!("/v1/sessions/{session_id}{suffix}"))
}

impl Client {
    /// A client of the broker listening on the Unix socket `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> Client {
        Client::with_endpoint(Endpoint::Unix(socket.into()))
    }

    fn with_endpoint(endpoint: Endpoint) -> Client {
        Client {
            tokens: shared_tokens(&endpoint),
            endpoint,
            timeout: DEFAULT_TIMEOUT,
            credential: None,
        }
    }

    /// A client of a remote broker over TLS, configured by `config`.
    pub fn remote(config: &RemoteConfig) -> Result<Client, ClientError> {
        let endpoint = remote::TlsEndpoint::new(config)?;
        let mut client = Client::with_endpoint(Endpoint::Tls(Arc::new(endpoint)));
        client.credential = config.credential.as_deref().map(Arc::from);
        Ok(client)
    }

    /// The same client with another per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// The same client with its own, initially empty, lease-token memory (shared only with its
    /// clones).
    pub fn with_private_tokens(mut self) -> Client {
        self.tokens = TokenMap::default();
        self
    }

    /// The same client sending `credential` (an orchestration credential) on non-session routes.
    pub fn with_credential(mut self, credential: impl Into<String>) -> Client {
        self.credential = Some(Arc::from(credential.into()));
        self
    }

    /// The socket path, for a Unix-socket client.
    pub fn socket(&self) -> Option<&Path> {
        match &self.endpoint {
            Endpoint::Unix(path) => Some(path),
            Endpoint::Tls(_) => None,
        }
    }

    fn lock_tokens(&self) -> std::sync::MutexGuard<'_, HashMap<String, LeaseToken>> {
        self.tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Uses `token` for the requests of `session_id` from now on.
    pub fn set_lease_token(&self, session_id: &str, token: LeaseToken) {
        self.lock_tokens().insert(session_id.to_string(), token);
    }

    /// The token this client sends for `session_id`, if it has one.
    pub fn lease_token(&self, session_id: &str) -> Option<LeaseToken> {
        self.lock_tokens().get(session_id).cloned()
    }

    /// Forgets the token of `session_id`; its requests then carry none.
    pub fn forget_lease_token(&self, session_id: &str) {
        self.lock_tokens().remove(session_id);
    }

    async fn exchange(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        bearer: Option<String>,
        accept: Option<&'static str>,
    ) -> Result<Answered, ClientError> {
        let mut builder = Request::builder().method(method).uri(path);
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, "application/json");
        }
        if let Some(accept) = accept {
            builder = builder.header(ACCEPT, accept);
        }
        if let Some(bearer) = bearer {
            builder = builder.header(AUTHORIZATION, format!("Bearer {bearer}"));
        }
        match &self.endpoint {
            Endpoint::Unix(socket) => {
                let stream = trust::connect_trusted(socket).await?;
                let request = build(operation, builder.header(HOST, "deskbroker"), body)?;
                send(stream, request).await
            }
            Endpoint::Tls(tls) => {
                let stream = TcpStream::connect(&tls.address).await.map_err(|source| {
                    ClientError::ConnectRemote {
                        address: tls.address.clone(),
                        source,
                    }
                })?;
                let stream = tls
                    .connector
                    .connect(tls.server_name.clone(), stream)
                    .await
                    .map_err(|source| ClientError::Tls {
                        address: tls.address.clone(),
                        source,
                    })?;
                let request = build(operation, builder.header(HOST, tls.address.as_str()), body)?;
                send(stream, request).await
            }
        }
    }

    /// The bearer sent on `path`: the session's lease token, or the orchestration credential.
    fn bearer_for(&self, path: &str) -> Option<String> {
        match path.strip_prefix("/v1/sessions/") {
            Some(rest) => {
                let session_id = rest.split(['/', '?']).next().unwrap_or(rest);
                self.lease_token(session_id)
                    .map(|token| token.expose().to_string())
            }
            None => self.credential.as_deref().map(str::to_string),
        }
    }

    /// `POST /v1/sessions/{id}<suffix>` with `body` as JSON, for `operation`.
    async fn post_session<B: Serialize, T: DeserializeOwned>(
        &self,
        operation: &'static str,
        session_id: &str,
        suffix: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let path = session_path(operation, session_id, suffix)?;
        let body = Self::json(operation, body)?;
        self.call(operation, Method::POST, &path, Some(body)).await
    }

    async fn call<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let bytes = self.call_raw(operation, method, path, body).await?;
        serde_json::from_slice(&bytes).map_err(|error| ClientError::Decode {
            operation,
            status: StatusCode::OK,
            message: error.to_string(),
        })
    }

    async fn call_raw(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Bytes, ClientError> {
        self.call_accepting(operation, method, path, body, None)
            .await
            .map(|(_, bytes)| bytes)
    }

    /// A call sending `Accept: accept` when given: the answer's `Content-Type` and body.
    async fn call_accepting(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        accept: Option<&'static str>,
    ) -> Result<(Option<HeaderValue>, Bytes), ClientError> {
        let bearer = self.bearer_for(path);
        let exchange = self.exchange(operation, method, path, body, bearer, accept);
        let Answered {
            status,
            content_type,
            body: bytes,
        } = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout {
                operation,
                timeout: self.timeout,
            })??;
        if status.is_success() {
            return Ok((content_type, bytes));
        }
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => Err(ClientError::Api(body)),
            Err(error) => Err(ClientError::Decode {
                operation,
                status,
                message: format!(
                    "error body is not {{code, message}} ({error}): {}",
                    String::from_utf8_lossy(&bytes)
                        .chars()
                        .take(200)
                        .collect::<String>()
                ),
            }),
        }
    }

    fn json<T: Serialize>(operation: &'static str, value: &T) -> Result<Vec<u8>, ClientError> {
        serde_json::to_vec(value).map_err(|error| ClientError::Request {
            operation,
            message: error.to_string(),
        })
    }

    /// `POST /v1/leases`.
    pub async fn lease(&self, request: &LeaseRequest) -> Result<LeaseResponse, ClientError> {
        let body = Self::json("lease", request)?;
        let response: LeaseResponse = self
            .call("lease", Method::POST, "/v1/leases", Some(body))
            .await?;
        self.set_lease_token(&response.session_id, response.lease_token.clone());
        Ok(response)
    }

    /// `POST /v1/sessions/{id}/reset`.
    pub async fn reset(
        &self,
        session_id: &str,
        request: &ResetRequest,
    ) -> Result<ResetResponse, ClientError> {
        self.post_session("reset", session_id, "/reset", request)
            .await
    }

    /// `GET /v1/sessions/{id}/screenshot`.
    pub async fn screenshot(&self, session_id: &str) -> Result<Screenshot, ClientError> {
        let path = session_path("screenshot", session_id, "/screenshot")?;
        self.call("screenshot", Method::GET, &path, None).await
    }

    /// `POST /v1/sessions/{id}/actions`.
    pub async fn act(
        &self,
        session_id: &str,
        request: &ActionRequest,
    ) -> Result<ActionResponse, ClientError> {
        self.post_session("execute_action", session_id, "/actions", request)
            .await
    }

    /// `POST /v1/sessions/{id}/actions` with a raw JSON body, for callers (and tests) that send
    /// actions the typed [`ActionRequest`] cannot express.
    pub async fn act_json(
        &self,
        session_id: &str,
        body: &serde_json::Value,
    ) -> Result<ActionResponse, ClientError> {
        self.post_session("execute_action", session_id, "/actions", body)
            .await
    }

    /// `POST /v1/sessions/{id}/programs`: a typed input program, run exactly once per
    /// request id.
    pub async fn program(
        &self,
        session_id: &str,
        request: &desk_contract::control::ProgramRequest,
    ) -> Result<desk_contract::control::ProgramResponse, ClientError> {
        self.post_session("execute_program", session_id, "/programs", request)
            .await
    }

    /// `GET /v1/sessions/{id}/control`.
    pub async fn control(
        &self,
        session_id: &str,
    ) -> Result<desk_contract::control::ControlStatus, ClientError> {
        let path = session_path("control_status", session_id, "/control")?;
        self.call("control_status", Method::GET, &path, None).await
    }

    /// `POST /v1/sessions/{id}/control`: claims the session's control (or changes the mode).
    pub async fn claim_control(
        &self,
        session_id: &str,
        claim: &desk_contract::control::ControlClaim,
    ) -> Result<desk_contract::control::ControlStatus, ClientError> {
        self.post_session("claim_control", session_id, "/control", claim)
            .await
    }

    /// `POST /v1/sessions/{id}/control/restart`: a new generation after Stop.
    pub async fn restart_control(
        &self,
        session_id: &str,
        claim: &desk_contract::control::ControlClaim,
    ) -> Result<desk_contract::control::ControlStatus, ClientError> {
        self.post_session("restart_control", session_id, "/control/restart", claim)
            .await
    }

    /// `POST /v1/sessions/{id}/stop`.
    pub async fn stop(
        &self,
        session_id: &str,
        request: &desk_contract::control::StopRequest,
    ) -> Result<desk_contract::control::StopResponse, ClientError> {
        self.post_session("stop", session_id, "/stop", request)
            .await
    }

    /// `POST /v1/sessions/{id}/zoom`.
    pub async fn zoom(
        &self,
        session_id: &str,
        request: &desk_contract::control::ZoomRequest,
    ) -> Result<desk_contract::api::Screenshot, ClientError> {
        self.post_session("zoom", session_id, "/zoom", request)
            .await
    }

    /// `GET /v1/capabilities`.
    pub async fn capabilities(&self) -> Result<desk_contract::control::Capabilities, ClientError> {
        self.call("capabilities", Method::GET, "/v1/capabilities", None)
            .await
    }

    /// `POST /v1/sessions/{id}/checkpoint`.
    pub async fn checkpoint(&self, session_id: &str) -> Result<CheckpointResponse, ClientError> {
        let path = session_path("checkpoint", session_id, "/checkpoint")?;
        self.call("checkpoint", Method::POST, &path, None).await
    }

    /// `GET /v1/sessions/{id}/artifact`.
    pub async fn artifact(&self, session_id: &str) -> Result<ArtifactResponse, ClientError> {
        let path = session_path("retrieve_artifact", session_id, "/artifact")?;
        self.call("retrieve_artifact", Method::GET, &path, None)
            .await
    }

    async fn text(&self, operation: &'static str, path: &str) -> Result<String, ClientError> {
        let bytes = self.call_raw(operation, Method::GET, path, None).await?;
        String::from_utf8(bytes.to_vec()).map_err(|error| ClientError::Decode {
            operation,
            status: StatusCode::OK,
            message: error.to_string(),
        })
    }

    /// `GET /v1/sessions/{id}/events`: `events.json` NDJSON text.
    pub async fn events(&self, session_id: &str) -> Result<String, ClientError> {
        let path = session_path("retrieve_events", session_id, "/events")?;
        self.text("retrieve_events", &path).await
    }

    /// `GET /v1/sessions/{id}/frame-events`: `frame_events.json` NDJSON text.
    pub async fn frame_events(&self, session_id: &str) -> Result<String, ClientError> {
        let path = session_path("retrieve_frame_events", session_id, "/frame-events")?;
        self.text("retrieve_frame_events", &path).await
    }

    /// `GET /v1/sessions/{id}`.
    pub async fn status(&self, session_id: &str) -> Result<StatusResponse, ClientError> {
        let path = session_path("get_status", session_id, "")?;
        self.call("get_status", Method::GET, &path, None).await
    }

    /// `GET /v1/sessions/{id}?wait_ms=…`: the status long-poll. Answers as soon as the session's
    /// state or next action index differs from `state` / `next_action_index` (each defaults to
    /// the value when the broker receives the request), or after `wait` (at most 5 s; more is
    /// refused with `invalid_request`) with the unchanged status.
    pub async fn status_wait(
        &self,
        session_id: &str,
        wait: Duration,
        state: Option<desk_contract::api::SessionState>,
        next_action_index: Option<u64>,
    ) -> Result<StatusResponse, ClientError> {
        let mut path = session_path("get_status", session_id, "")?;
        path.push_str(&format!("?wait_ms={}", wait.as_millis()));
        if let Some(state) = state {
            path.push_str(&format!("&state={}", state.as_str()));
        }
        if let Some(next_action_index) = next_action_index {
            path.push_str(&format!("&next_action_index={next_action_index}"));
        }
        self.call("get_status", Method::GET, &path, None).await
    }

    /// `DELETE /v1/sessions/{id}`: idempotent.
    pub async fn release(&self, session_id: &str) -> Result<ReleaseResponse, ClientError> {
        let path = session_path("release_session", session_id, "")?;
        self.call("release_session", Method::DELETE, &path, None)
            .await
    }

    /// `POST /v1/sessions/{id}/kill`: the operator's kill switch (a Unix peer, or over TLS an
    /// orchestration credential with the `kill` scope). Idempotent.
    pub async fn kill(
        &self,
        session_id: &str,
        reason: &str,
    ) -> Result<desk_contract::api::KillResponse, ClientError> {
        let path = session_path("kill_session", session_id, "/kill")?;
        let body = Self::json(
            "kill_session",
            &desk_contract::api::KillRequest {
                reason: reason.to_string(),
            },
        )?;
        self.call("kill_session", Method::POST, &path, Some(body))
            .await
    }

    /// `POST /v1/drain`: the broker stops leasing until it restarts (an operator route, like
    /// kill). Idempotent; answers the capacity, whose `live_sessions` a drain waits out.
    pub async fn drain(&self) -> Result<desk_contract::api::Capacity, ClientError> {
        self.call("drain", Method::POST, "/v1/drain", None).await
    }

    /// `GET /v1/openapi.json`.
    pub async fn openapi(&self) -> Result<serde_json::Value, ClientError> {
        self.call("openapi", Method::GET, "/v1/openapi.json", None)
            .await
    }

    /// `GET /v1/sessions/{id}/accessibility?max_nodes=&max_depth=`: the app's accessibility
    /// tree (a new current observation); the broker's defaults when `None`.
    pub async fn accessibility(
        &self,
        session_id: &str,
        max_nodes: Option<u32>,
        max_depth: Option<u32>,
    ) -> Result<desk_contract::api::AccessibilityResponse, ClientError> {
        let mut path = session_path("get_accessibility", session_id, "/accessibility")?;
        let query: Vec<String> = [("max_nodes", max_nodes), ("max_depth", max_depth)]
            .into_iter()
            .filter_map(|(name, value)| Some(format!("{name}={}", value?)))
            .collect();
        if !query.is_empty() {
            path.push('?');
            path.push_str(&query.join("&"));
        }
        self.call("get_accessibility", Method::GET, &path, None)
            .await
    }

    /// `GET /v1/sessions/{id}/windows`: the app's top-level windows.
    pub async fn windows(
        &self,
        session_id: &str,
    ) -> Result<desk_contract::api::WindowsResponse, ClientError> {
        let path = session_path("get_windows", session_id, "/windows")?;
        self.call("get_windows", Method::GET, &path, None).await
    }
}

fn build(
    operation: &'static str,
    builder: hyper::http::request::Builder,
    body: Option<Vec<u8>>,
) -> Result<Request<Full<Bytes>>, ClientError> {
    builder
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|error| ClientError::Request {
            operation,
            message: error.to_string(),
        })
}

/// An HTTP answer as received.
struct Answered {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    body: Bytes,
}

async fn send<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<Answered, ClientError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let transport = ClientError::Transport;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(transport)?;
    let mut driver = tokio::spawn(connection);
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(error) => {
            // When the connection itself failed (e.g. the broker's TLS alert for a refused
            // client certificate), its error says more than the request's "not ready".
            let connection_error =
                tokio::time::timeout(Duration::from_millis(200), &mut driver).await;
            driver.abort();
            return Err(match connection_error {
                Ok(Ok(Err(connection_error))) => transport(connection_error),
                _ => transport(error),
            });
        }
    };
    let status = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(transport)?
        .to_bytes();
    drop(sender);
    driver.abort();
    Ok(Answered {
        status,
        content_type,
        body: bytes,
    })
}
