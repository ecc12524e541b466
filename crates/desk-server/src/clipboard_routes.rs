//! The clipboard's routes, `GET` and `PUT /v1/sessions/{id}/clipboard`: the query and the
//! body read and parsed strictly; the checks and the desktop are desk-broker's (`clipboard.rs`).

use axum::Json;
use axum::extract::{FromRequest, RawQuery, Request, State};
use desk_broker::{Broker, BrokerError};
use desk_contract::clipboard::{
    ClipboardText, ClipboardWriteRequest, ClipboardWritten, parse_query,
};

use crate::api_error::ApiError;
use crate::extract::{SessionPath, read_body_within};

/// The largest `PUT .../clipboard` body: the 16 MiB ceiling of text, each byte escaped in at
/// most two (`\n`, `\"`, `\\`), and room for the rest of the body. A body over it is refused
/// (413) before it is parsed.
pub(crate) const CLIPBOARD_BODY_LIMIT_BYTES: usize = 2 * 16 * 1024 * 1024 + 64 * 1024;
const _: () = assert!(
    CLIPBOARD_BODY_LIMIT_BYTES as u64 == 2 * desk_contract::clipboard::CEILING_BYTES + 64 * 1024
);

/// The body of `PUT .../clipboard`, read under [`CLIPBOARD_BODY_LIMIT_BYTES`] and parsed
/// strictly like every body.
pub(crate) struct ClipboardBody(ClipboardWriteRequest);

impl<S: Send + Sync> FromRequest<S> for ClipboardBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body_within(request, state, CLIPBOARD_BODY_LIMIT_BYTES).await?;
        desk_contract::request::parse_request(&bytes)
            .map(ClipboardBody)
            .map_err(|error| BrokerError::InvalidRequest(error.to_string()).into())
    }
}

/// `GET /v1/sessions/{id}/clipboard?max_output_bytes=N&owner=O&generation=G`.
pub(crate) async fn get_clipboard(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    RawQuery(query): RawQuery,
) -> Result<Json<ClipboardText>, ApiError> {
    let query = parse_query(query.as_deref())
        .map_err(|error| BrokerError::InvalidRequest(error.to_string()))?;
    Ok(Json(broker.clipboard_read(&id, query).await?))
}

/// `PUT /v1/sessions/{id}/clipboard` with `{"text", "control"?}`.
pub(crate) async fn put_clipboard(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    ClipboardBody(request): ClipboardBody,
) -> Result<Json<ClipboardWritten>, ApiError> {
    Ok(Json(broker.clipboard_write(&id, request).await?))
}
