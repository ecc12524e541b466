//! The handlers of the broker's own routes, one short function each: the request's parts in,
//! the broker's operation (desk-broker), the answer out. The route table (`routes/table.rs`)
//! names each one's method and path.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use desk_broker::{Broker, StatusWait, Stream};
use desk_contract::api::{LeaseRequest, ResetRequest};

use crate::api_error::ApiError;
use crate::extract::{ActionBody, ApiJson, ProgramBody, SessionPath};
use crate::openapi::openapi_json;
use crate::shot_json::{ShotForm, ShotJson};

type ApiResult<T> = Result<Json<T>, ApiError>;
/// An answer carrying a screenshot, as JSON (its base64 copied rather than escaped) or, when
/// the caller's `Accept` asks, JSON then the raw PNG (`shot_json.rs`).
type ShotResult<T> = Result<ShotJson<T>, ApiError>;

pub(crate) async fn lease(
    State(broker): State<Broker>,
    ApiJson(request): ApiJson<LeaseRequest>,
) -> ApiResult<desk_contract::api::LeaseResponse> {
    Ok(Json(broker.lease(request).await?))
}

pub(crate) async fn reset(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    form: ShotForm,
    ApiJson(request): ApiJson<ResetRequest>,
) -> ShotResult<desk_contract::api::ResetResponse> {
    let answer = broker.reset(&id, request).await?;
    Ok(ShotJson(
        broker.gate_answer(&id, answer, Stream::Screen).await?,
        form,
    ))
}

pub(crate) async fn screenshot(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    form: ShotForm,
) -> ShotResult<desk_contract::api::Screenshot> {
    let answer = broker.screenshot(&id).await?;
    Ok(ShotJson(
        broker.gate_answer(&id, answer, Stream::Screen).await?,
        form,
    ))
}

pub(crate) async fn execute(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    form: ShotForm,
    body: ActionBody,
) -> Result<Response, ApiError> {
    match body {
        ActionBody::Parsed(request) => {
            let answer = broker.execute(&id, request).await?;
            let answer = broker.gate_answer(&id, answer, Stream::Screen).await?;
            Ok(ShotJson(answer, form).into_response())
        }
        ActionBody::Approved(request) => {
            Ok(Json(broker.execute_approved(&id, request).await?).into_response())
        }
        ActionBody::Refused { request_id, error } => {
            Err(broker.refused_action(&id, request_id, error).await.into())
        }
    }
}

pub(crate) async fn accessibility(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    RawQuery(query): RawQuery,
) -> ApiResult<desk_contract::api::AccessibilityResponse> {
    let limits = desk_broker::parse_accessibility_limits(query.as_deref())?;
    Ok(Json(broker.accessibility(&id, limits).await?))
}

pub(crate) async fn windows(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> ApiResult<desk_contract::api::WindowsResponse> {
    Ok(Json(broker.windows(&id).await?))
}

pub(crate) async fn checkpoint(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> ApiResult<desk_contract::api::CheckpointResponse> {
    Ok(Json(broker.checkpoint(&id).await?))
}

pub(crate) async fn artifact(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> ApiResult<desk_contract::api::ArtifactResponse> {
    Ok(Json(broker.artifact(&id).await?))
}

fn ndjson(text: String) -> Response {
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

pub(crate) async fn events(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> Result<Response, ApiError> {
    Ok(ndjson(broker.events(&id).await?))
}

pub(crate) async fn frame_events(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> Result<Response, ApiError> {
    Ok(ndjson(broker.frame_events(&id).await?))
}

pub(crate) async fn status(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    RawQuery(query): RawQuery,
) -> ApiResult<desk_contract::api::StatusResponse> {
    let wait = StatusWait::parse(query.as_deref())?;
    Ok(Json(broker.status_wait(&id, wait).await?))
}

pub(crate) async fn release(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> ApiResult<desk_contract::api::ReleaseResponse> {
    Ok(Json(broker.release(&id).await?))
}

pub(crate) async fn kill(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    ApiJson(request): ApiJson<desk_contract::api::KillRequest>,
) -> ApiResult<desk_contract::api::KillResponse> {
    Ok(Json(broker.kill(&id, &request.reason).await?))
}

pub(crate) async fn metrics(State(broker): State<Broker>) -> Result<Response, ApiError> {
    let text = broker.metrics_text().await?;
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

pub(crate) async fn openapi() -> Response {
    let mut response = openapi_json().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(crate) async fn program(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    form: ShotForm,
    ProgramBody(request): ProgramBody,
) -> ShotResult<desk_contract::control::ProgramResponse> {
    let answer = broker.execute_program(&id, request).await?;
    Ok(ShotJson(
        broker.gate_answer(&id, answer, Stream::Screen).await?,
        form,
    ))
}

pub(crate) async fn control_status(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> ApiResult<desk_contract::control::ControlStatus> {
    Ok(Json(broker.control_status(&id).await?))
}

pub(crate) async fn claim_control(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    ApiJson(claim): ApiJson<desk_contract::control::ControlClaim>,
) -> ApiResult<desk_contract::control::ControlStatus> {
    Ok(Json(broker.claim_control(&id, claim).await?))
}

pub(crate) async fn restart_control(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    ApiJson(claim): ApiJson<desk_contract::control::ControlClaim>,
) -> ApiResult<desk_contract::control::ControlStatus> {
    Ok(Json(broker.restart_control(&id, claim).await?))
}

pub(crate) async fn zoom(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    form: ShotForm,
    ApiJson(request): ApiJson<desk_contract::control::ZoomRequest>,
) -> ShotResult<desk_contract::api::Screenshot> {
    let answer = broker.zoom(&id, request).await?;
    Ok(ShotJson(
        broker.gate_answer(&id, answer, Stream::Zoom).await?,
        form,
    ))
}

pub(crate) async fn stop(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    ApiJson(request): ApiJson<desk_contract::control::StopRequest>,
) -> ApiResult<desk_contract::control::StopResponse> {
    Ok(Json(broker.stop(&id, request).await?))
}

/// `GET /v1/sessions/{id}/capabilities`; `routes` is the route table's list.
pub(crate) async fn session_capabilities(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    routes: Vec<String>,
) -> ApiResult<desk_contract::control::Capabilities> {
    let mut document = broker.session_capabilities(&id).await?;
    document.routes = routes;
    Ok(Json(document))
}

/// `GET /v1/capabilities`; `routes` is the route table's list.
pub(crate) async fn capabilities(
    State(broker): State<Broker>,
    routes: Vec<String>,
) -> Json<desk_contract::control::Capabilities> {
    let mut document = broker.capabilities();
    document.routes = routes;
    Json(document)
}

pub(crate) async fn capability(
    State(broker): State<Broker>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> ApiResult<desk_contract::control::FeatureSupport> {
    Ok(Json(broker.feature(&name)?))
}
