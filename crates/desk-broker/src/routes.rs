//! The HTTP API (`/v1`): routes, handlers, the body limit and per-request tracing.
//!
//! Every route is listed in [`ROUTES`], which a test checks against the OpenAPI document.
//! Unknown paths answer 404 `not_found` and wrong methods 405 `invalid_request`, both as JSON.

use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request, State};
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
use crate::extract::{ActionBody, ApiJson, SessionId};
use crate::openapi::OPENAPI_JSON;

/// The largest accepted request body.
pub const BODY_LIMIT_BYTES: usize = 256 * 1024;

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
    ("GET", "/v1/openapi.json"),
];

type ApiResult<T> = Result<Json<T>, BrokerError>;

async fn lease(
    State(broker): State<Broker>,
    ApiJson(request): ApiJson<LeaseRequest>,
) -> ApiResult<desk_contract::api::LeaseResponse> {
    broker.lease(request).await.map(Json)
}

async fn reset(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
    ApiJson(request): ApiJson<ResetRequest>,
) -> ApiResult<desk_contract::api::ResetResponse> {
    broker.reset(&id, request).await.map(Json)
}

async fn screenshot(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
) -> ApiResult<desk_contract::api::Screenshot> {
    broker.screenshot(&id).await.map(Json)
}

async fn execute(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
    ActionBody(request): ActionBody,
) -> ApiResult<desk_contract::api::ActionResponse> {
    broker.execute(&id, request).await.map(Json)
}

async fn checkpoint(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
) -> ApiResult<desk_contract::api::CheckpointResponse> {
    broker.checkpoint(&id).await.map(Json)
}

async fn artifact(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
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

async fn events(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
) -> Result<Response, BrokerError> {
    broker.events(&id).await.map(ndjson)
}

async fn frame_events(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
) -> Result<Response, BrokerError> {
    broker.frame_events(&id).await.map(ndjson)
}

async fn status(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
) -> ApiResult<desk_contract::api::StatusResponse> {
    broker.status(&id).await.map(Json)
}

async fn release(
    State(broker): State<Broker>,
    SessionId(id): SessionId,
) -> ApiResult<desk_contract::api::ReleaseResponse> {
    broker.release(&id).await.map(Json)
}

async fn openapi() -> Response {
    let mut response = OPENAPI_JSON.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn no_route() -> BrokerError {
    BrokerError::NotFound("route".to_string())
}

async fn wrong_method() -> Response {
    let error = BrokerError::InvalidRequest("method not allowed on this route".to_string());
    (StatusCode::METHOD_NOT_ALLOWED, Json(error.to_body())).into_response()
}

/// One structured line per request, and a span that error logs of the request nest in.
async fn trace_requests(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let span = tracing::info_span!("request", %method, path);
    let response = next.run(request).instrument(span.clone()).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1_000.0;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            latency_ms,
            "handled request"
        );
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
        .route("/v1/openapi.json", get(openapi))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(middleware::from_fn_with_state(broker.clone(), authorize))
        .layer(middleware::from_fn(trace_requests))
        .with_state(broker)
}
