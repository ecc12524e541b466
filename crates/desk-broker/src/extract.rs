//! Extractors whose rejections are JSON [`BrokerError`]s (`invalid_request`), never axum's
//! plain-text rejections.
//!
//! [`ApiJson`] reads the whole body (bounded by the router's body limit) and parses it with
//! serde; `deny_unknown_fields` on the request types turns unknown fields into 400s. The
//! `Content-Type` header is not checked. [`ActionBody`] parses an action request in two stages so
//! that a malformed envelope is `invalid_request` while a malformed `action` object is
//! `invalid_action`.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use desk_contract::Action;
use desk_contract::api::ActionRequest;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::BrokerError;
use crate::routes::BODY_LIMIT_BYTES;

/// A JSON body parsed into `T`.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub(crate) T);

async fn read_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, BrokerError> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                BrokerError::BodyTooLarge {
                    limit: BODY_LIMIT_BYTES,
                }
            } else {
                BrokerError::InvalidRequest(format!(
                    "failed to read the body: {}",
                    rejection.body_text()
                ))
            }
        })
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = BrokerError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(request, state).await?;
        serde_json::from_slice(&bytes)
            .map(ApiJson)
            .map_err(|error| BrokerError::InvalidRequest(format!("malformed JSON body: {error}")))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionEnvelope {
    request_id: String,
    expected_action_index: u64,
    action: serde_json::Value,
}

/// An action request: envelope errors are `invalid_request`, action errors `invalid_action`.
#[derive(Debug)]
pub(crate) struct ActionBody(pub(crate) ActionRequest);

impl<S: Send + Sync> FromRequest<S> for ActionBody {
    type Rejection = BrokerError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let ApiJson(envelope) = ApiJson::<ActionEnvelope>::from_request(request, state).await?;
        let action: Action = serde_json::from_value(envelope.action)
            .map_err(|error| BrokerError::MalformedAction(error.to_string()))?;
        Ok(ActionBody(ActionRequest {
            request_id: envelope.request_id,
            expected_action_index: envelope.expected_action_index,
            action,
        }))
    }
}

/// The `{id}` path segment.
#[derive(Debug)]
pub(crate) struct SessionId(pub(crate) String);

impl<S: Send + Sync> FromRequestParts<S> for SessionId {
    type Rejection = BrokerError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(id)| SessionId(id))
            .map_err(|rejection| {
                BrokerError::InvalidRequest(format!("bad session id: {}", rejection.body_text()))
            })
    }
}
