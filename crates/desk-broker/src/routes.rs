//! The HTTP API (`/v1`): routes, handlers, the body limit and per-request tracing.
//!
//! Every route is listed in [`ROUTES`], which a test checks against the OpenAPI document.
//! Unknown paths answer 404 `not_found` and wrong methods 405 `invalid_request`, both as JSON.
//!
//! Operator view: [`trace_requests`] logs exactly one `request` line per request with the
//! operation name, the session id when the route has one, the status, the error code when any
//! and the latency, and feeds the same facts to the metrics served at `GET /v1/metrics`. It never
//! logs header values (credentials travel in `Authorization`) or query strings.
//!
//! Over 400 lines: the route table and its handlers, one short function each, read best beside each
//! other.

use std::time::Instant;

use axum::body::{Body, HttpBody as _};
use axum::extract::{DefaultBodyLimit, RawQuery, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use desk_contract::api::{LeaseRequest, ResetRequest};
use tracing::Instrument;

use crate::auth::authorize;
use crate::broker::Broker;
use crate::error::BrokerError;
use crate::extract::{ActionBody, ApiJson, BODY_LIMIT_BYTES, ProgramBody};
use crate::ids::SessionId;
use crate::metrics::operation;
use crate::openapi::openapi_json;
use crate::shot_gate::Stream;
use crate::shot_json::ShotJson;
use crate::watch::StatusWait;

/// Every route as `(method, path)`, in axum path syntax.
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/leases"),
    ("POST", "/v1/sessions/{id}/reset"),
    ("GET", "/v1/sessions/{id}/screenshot"),
    ("POST", "/v1/sessions/{id}/actions"),
    ("POST", "/v1/sessions/{id}/checkpoint"),
    ("GET", "/v1/sessions/{id}/artifact"),
    ("GET", "/v1/sessions/{id}/events"),
    ("GET", "/v1/sessions/{id}/frame-events"),
    ("GET", "/v1/sessions/{id}"),
    ("DELETE", "/v1/sessions/{id}"),
    ("POST", "/v1/sessions/{id}/kill"),
    ("GET", "/v1/metrics"),
    ("GET", "/v1/openapi.json"),
    ("POST", "/v1/sessions/{id}/programs"),
    ("GET", "/v1/sessions/{id}/control"),
    ("POST", "/v1/sessions/{id}/control"),
    ("POST", "/v1/sessions/{id}/control/restart"),
    ("POST", "/v1/sessions/{id}/stop"),
    ("POST", "/v1/sessions/{id}/zoom"),
    ("GET", "/v1/sessions/{id}/capabilities"),
    ("GET", "/v1/capabilities"),
    ("GET", "/v1/capabilities/{feature}"),
    ("GET", "/v1/sessions/{id}/clipboard"),
    ("PUT", "/v1/sessions/{id}/clipboard"),
    ("GET", "/v1/sessions/{id}/accessibility"),
    ("GET", "/v1/sessions/{id}/windows"),
    ("POST", "/v1/sessions/{id}/approvals"),
    ("POST", "/v1/sessions/{id}/observations"),
    ("GET", "/v1/sessions/{id}/observations/{observation_id}"),
    ("POST", "/v1/drain"),
    ("GET", "/v1/reviews"),
    ("GET", "/v1/reviews/{id}"),
    ("GET", "/v1/reviews/{id}/frame"),
    ("POST", "/v1/reviews/{id}/decision"),
    ("GET", "/review"),
];

/// The largest error body the tracing layer reads back to learn its `code`.
const ERROR_BODY_PEEK_BYTES: usize = 64 * 1024;

type ApiResult<T> = Result<Json<T>, BrokerError>;
/// An answer carrying a screenshot, its base64 copied rather than escaped (`shot_json.rs`).
type ShotResult<T> = Result<ShotJson<T>, BrokerError>;

async fn lease(
    State(broker): State<Broker>,
    ApiJson(request): ApiJson<LeaseRequest>,
) -> ApiResult<desk_contract::api::LeaseResponse> {
    broker.lease(request).await.map(Json)
}

async fn reset(
    State(broker): State<Broker>,
    id: SessionId,
    ApiJson(request): ApiJson<ResetRequest>,
) -> ShotResult<desk_contract::api::ResetResponse> {
    let answer = broker.reset(&id, request).await?;
    broker
        .gate_answer(&id, answer, Stream::Screen)
        .await
        .map(ShotJson)
}

async fn screenshot(
    State(broker): State<Broker>,
    id: SessionId,
) -> ShotResult<desk_contract::api::Screenshot> {
    let answer = broker.screenshot(&id).await?;
    broker
        .gate_answer(&id, answer, Stream::Screen)
        .await
        .map(ShotJson)
}

async fn execute(
    State(broker): State<Broker>,
    id: SessionId,
    body: ActionBody,
) -> Result<Response, BrokerError> {
    match body {
        ActionBody::Parsed(request) => {
            let answer = broker.execute(&id, request).await?;
            broker
                .gate_answer(&id, answer, Stream::Screen)
                .await
                .map(|answer| ShotJson(answer).into_response())
        }
        ActionBody::Approved(request) => broker
            .execute_approved(&id, request)
            .await
            .map(|answer| Json(answer).into_response()),
        ActionBody::Refused { request_id, error } => {
            Err(broker.refused_action(&id, request_id, error).await)
        }
    }
}

async fn accessibility(
    State(broker): State<Broker>,
    id: SessionId,
    RawQuery(query): RawQuery,
) -> ApiResult<desk_contract::api::AccessibilityResponse> {
    let limits = crate::a11y::parse_limits(query.as_deref())?;
    broker.accessibility(&id, limits).await.map(Json)
}

async fn windows(
    State(broker): State<Broker>,
    id: SessionId,
) -> ApiResult<desk_contract::api::WindowsResponse> {
    broker.windows(&id).await.map(Json)
}

async fn checkpoint(
    State(broker): State<Broker>,
    id: SessionId,
) -> ApiResult<desk_contract::api::CheckpointResponse> {
    broker.checkpoint(&id).await.map(Json)
}

async fn artifact(
    State(broker): State<Broker>,
    id: SessionId,
) -> ApiResult<desk_contract::api::ArtifactResponse> {
    broker.artifact(&id).await.map(Json)
}

fn ndjson(text: String) -> Response {
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

async fn events(State(broker): State<Broker>, id: SessionId) -> Result<Response, BrokerError> {
    broker.events(&id).await.map(ndjson)
}

async fn frame_events(
    State(broker): State<Broker>,
    id: SessionId,
) -> Result<Response, BrokerError> {
    broker.frame_events(&id).await.map(ndjson)
}

async fn status(
    State(broker): State<Broker>,
    id: SessionId,
    RawQuery(query): RawQuery,
) -> ApiResult<desk_contract::api::StatusResponse> {
    let wait = StatusWait::parse(query.as_deref())?;
    broker.status_wait(&id, wait).await.map(Json)
}

async fn release(
    State(broker): State<Broker>,
    id: SessionId,
) -> ApiResult<desk_contract::api::ReleaseResponse> {
    broker.release(&id).await.map(Json)
}

async fn kill(
    State(broker): State<Broker>,
    id: SessionId,
    ApiJson(request): ApiJson<desk_contract::api::KillRequest>,
) -> ApiResult<desk_contract::api::KillResponse> {
    broker.kill(&id, &request.reason).await.map(Json)
}

async fn metrics(State(broker): State<Broker>) -> Result<Response, BrokerError> {
    let text = broker.metrics_text().await?;
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

async fn openapi() -> Response {
    let mut response = openapi_json().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn program(
    State(broker): State<Broker>,
    id: SessionId,
    ProgramBody(request): ProgramBody,
) -> ShotResult<desk_contract::control::ProgramResponse> {
    let answer = broker.execute_program(&id, request).await?;
    broker
        .gate_answer(&id, answer, Stream::Screen)
        .await
        .map(ShotJson)
}

async fn control_status(
    State(broker): State<Broker>,
    id: SessionId,
) -> ApiResult<desk_contract::control::ControlStatus> {
    broker.control_status(&id).await.map(Json)
}

async fn claim_control(
    State(broker): State<Broker>,
    id: SessionId,
    ApiJson(claim): ApiJson<desk_contract::control::ControlClaim>,
) -> ApiResult<desk_contract::control::ControlStatus> {
    broker.claim_control(&id, claim).await.map(Json)
}

async fn restart_control(
    State(broker): State<Broker>,
    id: SessionId,
    ApiJson(claim): ApiJson<desk_contract::control::ControlClaim>,
) -> ApiResult<desk_contract::control::ControlStatus> {
    broker.restart_control(&id, claim).await.map(Json)
}

async fn zoom(
    State(broker): State<Broker>,
    id: SessionId,
    ApiJson(request): ApiJson<desk_contract::control::ZoomRequest>,
) -> ShotResult<desk_contract::api::Screenshot> {
    let answer = broker.zoom(&id, request).await?;
    broker
        .gate_answer(&id, answer, Stream::Zoom)
        .await
        .map(ShotJson)
}

async fn stop(
    State(broker): State<Broker>,
    id: SessionId,
    ApiJson(request): ApiJson<desk_contract::control::StopRequest>,
) -> ApiResult<desk_contract::control::StopResponse> {
    broker.stop(&id, request).await.map(Json)
}

async fn session_capabilities(
    State(broker): State<Broker>,
    id: SessionId,
) -> ApiResult<desk_contract::control::Capabilities> {
    broker.session_capabilities(&id).await.map(Json)
}

async fn capabilities(State(broker): State<Broker>) -> Json<desk_contract::control::Capabilities> {
    Json(broker.capabilities())
}

async fn capability(
    State(broker): State<Broker>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> ApiResult<desk_contract::control::FeatureSupport> {
    broker.feature(&name).map(Json)
}

async fn no_route() -> BrokerError {
    BrokerError::NotFound("route".to_string())
}

async fn wrong_method() -> Response {
    let error = BrokerError::InvalidRequest("method not allowed on this route".to_string());
    (StatusCode::METHOD_NOT_ALLOWED, Json(error.to_body())).into_response()
}

/// The session id as logged: the path segment when it is a plain identifier (ids are not
/// credentials), else a placeholder.
fn loggable_session_id(id: &str) -> String {
    SessionId::parse(id).map_or_else(|_| "(invalid)".to_string(), |id| id.to_string())
}

/// Reads back an error response's body to learn its `code`, and rebuilds the response. Only a
/// JSON body of known, small size is read; any other answer is passed on untouched.
async fn error_code_of(response: Response) -> (Response, Option<String>) {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    let small = response
        .body()
        .size_hint()
        .upper()
        .is_some_and(|upper| upper <= ERROR_BODY_PEEK_BYTES as u64);
    if !is_json || !small {
        return (response, None);
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, ERROR_BODY_PEEK_BYTES).await {
        Ok(bytes) => {
            let code = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|value| value.get("code")?.as_str().map(str::to_string));
            (Response::from_parts(parts, Body::from(bytes)), code)
        }
        Err(_) => (
            Response::from_parts(parts, Body::empty()),
            Some("unreadable".to_string()),
        ),
    }
}

/// One structured line per request, a span that error logs of the request nest in, and the
/// request's entry in the metrics.
async fn trace_requests(State(broker): State<Broker>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let long_poll = request
        .uri()
        .query()
        .is_some_and(|query| query.split('&').any(|pair| pair.starts_with("wait_ms=")));
    let (op, session_id) = operation(request.method(), request.uri().path(), long_poll);
    let session_id = session_id.map(loggable_session_id);
    let span = tracing::info_span!("request", op, session_id);
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    let mut code = None;
    if status.is_client_error() || status.is_server_error() {
        (response, code) = error_code_of(response).await;
    }
    let elapsed = started.elapsed();
    // Microsecond resolution is plenty for a log line.
    let latency_ms = (elapsed.as_secs_f64() * 1_000_000.0).round() / 1_000.0;
    broker.inner.observability.metrics.record(
        op,
        status.as_u16(),
        code.as_deref(),
        elapsed.as_secs_f64(),
    );
    span.in_scope(|| {
        // `op` and `session_id` are the span's fields, printed on the same line.
        tracing::info!(status = status.as_u16(), code, latency_ms, "request");
    });
    response
}

/// The broker's HTTP API.
pub fn router(broker: Broker) -> Router {
    Router::new()
        .route("/v1/leases", post(lease))
        .route("/v1/sessions/{id}/reset", post(reset))
        .route("/v1/sessions/{id}/screenshot", get(screenshot))
        .route("/v1/sessions/{id}/actions", post(execute))
        .route("/v1/sessions/{id}/checkpoint", post(checkpoint))
        .route("/v1/sessions/{id}/artifact", get(artifact))
        .route("/v1/sessions/{id}/events", get(events))
        .route("/v1/sessions/{id}/frame-events", get(frame_events))
        .route("/v1/sessions/{id}", get(status).delete(release))
        .route(crate::auth::KILL_ROUTE, post(kill))
        .route("/v1/sessions/{id}/accessibility", get(accessibility))
        .route("/v1/sessions/{id}/windows", get(windows))
        .route(
            crate::auth::APPROVALS_ROUTE,
            post(crate::approval::issue::approve_route),
        )
        .route(
            "/v1/sessions/{id}/observations",
            post(crate::observer::routes::observe_route),
        )
        .route(
            "/v1/sessions/{id}/observations/{observation_id}",
            get(crate::observer::routes::observation_route),
        )
        .route("/v1/metrics", get(metrics))
        .route("/v1/drain", post(crate::health::drain_route))
        .route("/v1/openapi.json", get(openapi))
        .route("/v1/sessions/{id}/programs", post(program))
        .route(
            "/v1/sessions/{id}/control",
            get(control_status).post(claim_control),
        )
        .route("/v1/sessions/{id}/control/restart", post(restart_control))
        .route("/v1/sessions/{id}/stop", post(stop))
        .route("/v1/sessions/{id}/zoom", post(zoom))
        .route("/v1/sessions/{id}/capabilities", get(session_capabilities))
        .route("/v1/capabilities", get(capabilities))
        .route("/v1/capabilities/{feature}", get(capability))
        .route(
            "/v1/sessions/{id}/clipboard",
            get(crate::clipboard::get_clipboard)
                .put(crate::clipboard::put_clipboard)
                .layer(DefaultBodyLimit::max(
                    crate::clipboard::CLIPBOARD_BODY_LIMIT_BYTES,
                )),
        )
        .route("/v1/reviews", get(crate::review_routes::list_route))
        .route("/v1/reviews/{id}", get(crate::review_routes::one_route))
        .route(
            "/v1/reviews/{id}/frame",
            get(crate::review_routes::frame_route),
        )
        .route(
            "/v1/reviews/{id}/decision",
            post(crate::review_routes::decide_route),
        )
        .route("/review", get(crate::review_routes::page_route))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(middleware::from_fn_with_state(broker.clone(), authorize))
        .layer(middleware::from_fn_with_state(
            broker.clone(),
            trace_requests,
        ))
        .with_state(broker)
}
