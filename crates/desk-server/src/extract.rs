//! Extractors: the broker's one strict path from an HTTP request to typed input. Their
//! rejections are JSON [`BrokerError`]s, never axum's plain-text rejections, and they run before
//! any handler touches state.
//!
//! Bodies ([`ApiJson`], [`ActionBody`]): the request has no query string; the `Content-Type`
//! must be `application/json` (any parameters, e.g. `charset=utf-8`) or absent; the body is read
//! whole under the router's limit (over it: 413); then [`desk_contract::request`] parses it strictly (duplicate keys, NaN,
//! `1e999`, unsafe integers, lone surrogates, invalid UTF-8, nesting beyond
//! [`desk_contract::strict::MAX_DEPTH`], trailing bytes, an empty body) and deserializes it with
//! `deny_unknown_fields`. Problems inside an action's `action` object are `invalid_action`;
//! every other body problem is `invalid_request`. Messages name the JSON path and never echo
//! more than a clipped fragment of the input. Path ids ([`SessionId`]) must be plain tokens.
//! See `docs/strict-parsing.md`.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use desk_contract::api::ActionRequest;
use desk_contract::control::{ProgramStep, SemanticStep};
use desk_contract::request::{self, RequestError, RequestPart};
use serde::de::DeserializeOwned;

use desk_broker::{BrokerError, MAX_SESSION_ID_BYTES, SessionId};

use crate::api_error::ApiError;

/// The largest accepted request body.
pub const BODY_LIMIT_BYTES: usize = 256 * 1024;

/// A JSON body parsed strictly into `T` (a request type without an action inside).
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub(crate) T);

/// Refuses any `Content-Type` but `application/json` (with parameters) or none at all.
fn check_content_type(headers: &HeaderMap) -> Result<(), BrokerError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let media_type = value
        .to_str()
        .ok()
        .and_then(|text| text.split(';').next())
        .map(|media_type| media_type.trim().to_ascii_lowercase());
    if media_type.as_deref() == Some("application/json") {
        Ok(())
    } else {
        Err(BrokerError::InvalidRequest(
            "the content-type must be application/json".to_string(),
        ))
    }
}

async fn read_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, BrokerError> {
    read_body_within(request, state, BODY_LIMIT_BYTES).await
}

/// Reads a body under `limit`, which must be the `DefaultBodyLimit` of the request's route.
pub(crate) async fn read_body_within<S: Send + Sync>(
    request: Request,
    state: &S,
    limit: usize,
) -> Result<Bytes, BrokerError> {
    // Routes with a body take no query parameters; an ignored parameter would be a silent
    // unknown field.
    if request.uri().query().is_some() {
        return Err(BrokerError::InvalidRequest(
            "this route takes no query parameters".to_string(),
        ));
    }
    check_content_type(request.headers())?;
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                BrokerError::BodyTooLarge { limit }
            } else {
                BrokerError::InvalidRequest(format!(
                    "failed to read the body: {}",
                    desk_contract::strict::clip(&rejection.body_text())
                ))
            }
        })
}

/// The broker error for a refused body: `invalid_action` for the action object, else
/// `invalid_request`.
fn refused(error: RequestError) -> BrokerError {
    let message = error.to_string();
    match error.part {
        RequestPart::Action => BrokerError::MalformedAction(message),
        RequestPart::Envelope => BrokerError::InvalidRequest(message),
    }
}

fn rejected(error: RequestError) -> ApiError {
    ApiError(refused(error))
}

impl<T: DeserializeOwned + serde::Serialize, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(request, state).await?;
        request::parse_request(&bytes)
            .map(ApiJson)
            .map_err(rejected)
    }
}

/// An action request: envelope errors are `invalid_request` (rejected here); an action object
/// that does not parse is kept with its request id, so the handler can answer a reused request
/// id with `action_sequence_conflict` rather than `invalid_action`.
#[derive(Debug)]
pub(crate) enum ActionBody {
    Parsed(ActionRequest),
    /// A body with `approval_id`: an approved exact action (`approval/exec.rs`).
    Approved(desk_contract::approval::ApprovedActionRequest),
    Refused {
        request_id: String,
        error: BrokerError,
    },
}

/// The `request_id` of an envelope whose action object was refused.
fn envelope_request_id(bytes: &[u8]) -> Option<String> {
    let value = desk_contract::strict::parse_value(bytes).ok()?;
    value.get("request_id")?.as_str().map(str::to_string)
}

impl<S: Send + Sync> FromRequest<S> for ActionBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(request, state).await?;
        if desk_contract::strict::parse_value(&bytes)
            .ok()
            .is_some_and(|value| value.get("approval_id").is_some())
        {
            return request::parse_request(&bytes)
                .map(ActionBody::Approved)
                .map_err(rejected);
        }
        match request::parse_action_request(&bytes) {
            Ok(parsed) => Ok(ActionBody::Parsed(parsed)),
            Err(error) if error.part == RequestPart::Action => {
                let error = refused(error);
                match envelope_request_id(&bytes) {
                    Some(request_id) => Ok(ActionBody::Refused { request_id, error }),
                    None => Err(error.into()),
                }
            }
            Err(error) => Err(rejected(error)),
        }
    }
}

/// A program request: envelope problems are `invalid_request`; a step that does not parse is
/// `invalid_params` naming its index and field (`steps[3].x: ...`). Nothing is sent either way.
/// A step whose `type` is a semantic step type is parsed as one, any other as an action.
#[derive(Debug)]
pub(crate) struct ProgramBody(pub(crate) desk_contract::control::ProgramRequest);

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct ProgramEnvelope {
    request_id: String,
    expected_action_index: u64,
    #[serde(default)]
    control: Option<desk_contract::control::ControlToken>,
    #[serde(default)]
    screenshot_id: Option<String>,
    steps: Vec<serde_json::Value>,
}

impl<S: Send + Sync> FromRequest<S> for ProgramBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(request, state).await?;
        let envelope: ProgramEnvelope = request::parse_request(&bytes).map_err(rejected)?;
        let mut steps = Vec::with_capacity(envelope.steps.len());
        for (index, value) in envelope.steps.iter().enumerate() {
            let path = format!("$.steps[{index}]");
            let semantic = value
                .get("type")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|kind| ProgramStep::SEMANTIC_TYPES.contains(&kind));
            let step = if semantic {
                desk_contract::strict::from_value::<SemanticStep>(value, &path)
                    .map(ProgramStep::Semantic)
            } else {
                request::action_from_value(value, &path).map(ProgramStep::Input)
            };
            let step = step.map_err(|error| BrokerError::Control {
                code: desk_contract::ErrorCode::InvalidParams,
                message: format!("steps[{index}]: {error}"),
            })?;
            steps.push(step);
        }
        Ok(ProgramBody(desk_contract::control::ProgramRequest {
            request_id: envelope.request_id,
            expected_action_index: envelope.expected_action_index,
            control: envelope.control,
            screenshot_id: envelope.screenshot_id,
            steps,
        }))
    }
}

/// The `{id}` path segment, a plain token ([`SessionId::parse`]).
/// The session id of a session route's path, parsed (a handler's `SessionPath(id)`).
#[derive(Debug)]
pub(crate) struct SessionPath(pub(crate) SessionId);

impl<S: Send + Sync> FromRequestParts<S> for SessionPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| BrokerError::InvalidRequest("bad session id in the path".to_string()))?;
        SessionId::parse(&id).map(SessionPath).map_err(|_| {
            BrokerError::InvalidRequest(format!(
                "bad session id in the path: expected 1 to {MAX_SESSION_ID_BYTES} letters, \
                 digits, '_' or '-'"
            ))
            .into()
        })
    }
}

#[cfg(test)]
mod tests;
