//! `POST /v1/sessions/{id}/approvals`: the approver's credential was checked by the auth layer
//! (`auth.rs`, which hands the handler the [`Approver`] it names); issuing the receipt is
//! desk-broker's (`approval/issue.rs`).

use axum::extract::State;
use axum::{Extension, Json};
use desk_broker::{Approver, Broker};
use desk_contract::approval::{ApprovalReceipt, ApprovalRequest};

use crate::api_error::ApiError;
use crate::extract::{ApiJson, SessionPath};

/// The handler of `POST /v1/sessions/{id}/approvals`.
pub(crate) async fn approve_route(
    State(broker): State<Broker>,
    SessionPath(id): SessionPath,
    Extension(approver): Extension<Approver>,
    ApiJson(request): ApiJson<ApprovalRequest>,
) -> Result<Json<ApprovalReceipt>, ApiError> {
    Ok(Json(broker.approve(&id, approver, request).await?))
}
