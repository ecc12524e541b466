//! The HTTP API (`/v1`): routes, handlers, the body limit and per-request tracing.
//!
//! Every route is one row of [`ROUTES`] (`routes/table.rs`): its method, path, operation name
//! (the log and metrics label) and credential; the router is built from it, and a test checks
//! it against the OpenAPI document.
//! Unknown paths answer 404 `not_found` and wrong methods 405 `invalid_request`, both as JSON.
//!
//! Operator view: [`trace_requests`] logs exactly one `request` line per request with the
//! operation name, the session id when the route has one, the status, the error code when any
//! and the latency, and feeds the same facts to the metrics served at `GET /v1/metrics`. It never
//! logs header values (credentials travel in `Authorization`) or query strings.
//!

use std::time::Instant;

use axum::body::{Body, HttpBody as _};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use tracing::Instrument;

use desk_broker::{Broker, BrokerError, SessionId};

use crate::api_error::ApiError;
use crate::auth::authorize;
use crate::extract::BODY_LIMIT_BYTES;

mod table;

pub(crate) use table::{APPROVALS_ROUTE, KILL_ROUTE, operation, scope_of};
pub use table::{Credential, ROUTES, Route};

/// The largest error body the tracing layer reads back to learn its `code`.
const ERROR_BODY_PEEK_BYTES: usize = 64 * 1024;

async fn no_route() -> ApiError {
    BrokerError::NotFound("route".to_string()).into()
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
    broker.record_request(op, status.as_u16(), code.as_deref(), elapsed.as_secs_f64());
    span.in_scope(|| {
        // `op` and `session_id` are the span's fields, printed on the same line; the target is
        // the one operators' filters and tools know (`desk_broker::routes`, docs/operations.md).
        tracing::info!(
            target: "desk_broker::routes",
            status = status.as_u16(),
            code,
            latency_ms,
            "request"
        );
    });
    response
}

/// The broker's HTTP API: one route per row of [`ROUTES`], in its order.
pub fn router(broker: Broker) -> Router {
    ROUTES
        .iter()
        .fold(Router::new(), |router, route| {
            router.route(route.path, route.handler())
        })
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
