//! The observer's routes (lease token, like every session route):
//! `POST /v1/sessions/{id}/observations` asks the observer for a fresh signed observation of
//! the session and answers it as stored; `GET /v1/sessions/{id}/observations/{observation_id}`
//! answers a stored one, byte for byte. Both answer the signed envelope itself
//! (`{payload, signature_b64}`), so a client verifies it with the observer's public key.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use desk_broker::{Broker, BrokerError, SessionId};

use crate::api_error::ApiError;
use crate::extract::SessionPath;

fn json_bytes(bytes: Vec<u8>) -> Response {
    let mut response = bytes.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `POST /v1/sessions/{id}/observations`
pub(crate) async fn observe_route(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
) -> Result<Response, ApiError> {
    let verified = broker.observe(&id).await?;
    Ok(json_bytes(verified.signed))
}

/// `GET /v1/sessions/{id}/observations/{observation_id}`.
pub(crate) async fn observation_route(
    State(broker): State<Broker>,
    Path((id, observation_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = SessionId::parse(&id).map_err(|_| BrokerError::NotFound("session".to_string()))?;
    let bytes = broker.stored_observation(&id, observation_id).await?;
    Ok(json_bytes(bytes))
}
