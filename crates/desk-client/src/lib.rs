//! A typed async client for the broker's HTTP API over its Unix socket.
//!
//! One method per operation, returning the `desk_contract::api` types. Each request opens a
//! fresh connection and does an HTTP/1.1 handshake (sub-millisecond on a Unix socket), so a
//! [`Client`] is cheap to clone and share, and holds no connection state. Error responses become
//! [`ClientError::Api`] with the broker's `{code, message}`; a connection lost mid-request is
//! [`ClientError::Transport`] (for `execute_action` the outcome is then unknown: retry with the
//! same `request_id` and the broker answers from its journal).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_contract::ErrorBody;
use desk_contract::api::{
    ActionRequest, ActionResponse, ArtifactResponse, CheckpointResponse, LeaseRequest,
    LeaseResponse, ReleaseResponse, ResetRequest, ResetResponse, Screenshot, StatusResponse,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::UnixStream;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The broker answered with an error body; its `code` determines the HTTP status.
    #[error("broker refused the request: {0}")]
    Api(ErrorBody),
    /// The socket could not be connected.
    #[error("failed to connect to the broker at {path}")]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The connection failed or was lost during the exchange.
    #[error("broker connection failed")]
    Transport(#[source] hyper::Error),
    /// The broker did not answer within the client's timeout.
    #[error("broker did not answer {operation} within {timeout:?}")]
    Timeout {
        /// The operation.
        operation: &'static str,
        /// The timeout in force.
        timeout: Duration,
    },
    /// The answer could not be decoded.
    #[error("failed to decode the broker's answer to {operation} ({status}): {message}")]
    Decode {
        /// The operation.
        operation: &'static str,
        /// The HTTP status.
        status: StatusCode,
        /// What went wrong.
        message: String,
    },
    /// The request could not be built (e.g. a session id that is not a valid path segment).
    #[error("failed to build the {operation} request: {message}")]
    Request {
        /// The operation.
        operation: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl ClientError {
    /// The broker's error body, when the broker answered with one.
    pub fn api_body(&self) -> Option<&ErrorBody> {
        match self {
            ClientError::Api(body) => Some(body),
            _ => None,
        }
    }
}

/// The broker client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
    timeout: Duration,
}

/// The default per-request timeout: long enough for a slow app start at reset.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

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
    /// A client of the broker listening on `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> Client {
        Client {
            socket: socket.into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same client with another per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    async fn exchange(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let stream =
            UnixStream::connect(&self.socket)
                .await
                .map_err(|source| ClientError::Connect {
                    path: self.socket.clone(),
                    source,
                })?;
        let transport = ClientError::Transport;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(transport)?;
        let driver = tokio::spawn(connection);
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, "deskbroker");
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, "application/json");
        }
        let request = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|error| ClientError::Request {
                operation,
                message: error.to_string(),
            })?;
        let response = sender.send_request(request).await.map_err(transport)?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(transport)?
            .to_bytes();
        drop(sender);
        driver.abort();
        Ok((status, bytes))
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
        let exchange = self.exchange(operation, method, path, body);
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout {
                operation,
                timeout: self.timeout,
            })??;
        if status.is_success() {
            return Ok(bytes);
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
        self.call("lease", Method::POST, "/v1/leases", Some(body))
            .await
    }

    /// `POST /v1/sessions/{id}/reset`.
    pub async fn reset(
        &self,
        session_id: &str,
        request: &ResetRequest,
    ) -> Result<ResetResponse, ClientError> {
        let path = session_path("reset", session_id, "/reset")?;
        let body = Self::json("reset", request)?;
        self.call("reset", Method::POST, &path, Some(body)).await
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
        let path = session_path("execute_action", session_id, "/actions")?;
        let body = Self::json("execute_action", request)?;
        self.call("execute_action", Method::POST, &path, Some(body))
            .await
    }

    /// `POST /v1/sessions/{id}/actions` with a raw JSON body, for callers (and tests) that send
    /// actions the typed [`ActionRequest`] cannot express.
    pub async fn act_json(
        &self,
        session_id: &str,
        body: &serde_json::Value,
    ) -> Result<ActionResponse, ClientError> {
        let path = session_path("execute_action", session_id, "/actions")?;
        let body = Self::json("execute_action", body)?;
        self.call("execute_action", Method::POST, &path, Some(body))
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

    /// `DELETE /v1/sessions/{id}`: idempotent.
    pub async fn release(&self, session_id: &str) -> Result<ReleaseResponse, ClientError> {
        let path = session_path("release_session", session_id, "")?;
        self.call("release_session", Method::DELETE, &path, None)
            .await
    }

    /// `GET /v1/openapi.json`.
    pub async fn openapi(&self) -> Result<serde_json::Value, ClientError> {
        self.call("openapi", Method::GET, "/v1/openapi.json", None)
            .await
    }
}
