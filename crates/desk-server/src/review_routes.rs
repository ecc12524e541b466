//! The review queue's HTTP side: `GET /v1/reviews`, `GET /v1/reviews/{id}`,
//! `GET /v1/reviews/{id}/frame`, `POST /v1/reviews/{id}/decision` (each authorized in
//! `auth.rs` by a reviewer credential, whose subject arrives as [`Reviewer`]) and `GET /review`,
//! the page a person decides on (`review_page/page.html`: static HTML and script, no external
//! asset, served with a Content-Security-Policy that allows nothing but itself; the reviewer
//! credential is typed into the page and sent as a bearer header, never put in a URL).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use desk_broker::{Broker, Review, ReviewDecisionRequest, ReviewList};

use crate::api_error::ApiError;
use crate::extract::ApiJson;

/// The page.
/// The subject of the reviewer credential that authorized a review request.
#[derive(Debug, Clone)]
pub(crate) struct Reviewer(pub(crate) String);

const PAGE: &str = include_str!("review_page/page.html");

/// The page's Content-Security-Policy: its own inline script and style (the page is one file),
/// images only from `blob:` (frames fetched with the credential), requests only to itself.
const PAGE_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; img-src blob:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

pub(crate) async fn list_route(
    State(broker): State<Broker>,
    _reviewer: axum::Extension<Reviewer>,
) -> Json<ReviewList> {
    Json(broker.review_list())
}

pub(crate) async fn one_route(
    State(broker): State<Broker>,
    _reviewer: axum::Extension<Reviewer>,
    Path(id): Path<String>,
) -> Result<Json<Review>, ApiError> {
    Ok(Json(broker.review(&id)?))
}

pub(crate) async fn frame_route(
    State(broker): State<Broker>,
    _reviewer: axum::Extension<Reviewer>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let png = broker.review_frame(&id).await?;
    let mut response = png.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

pub(crate) async fn decide_route(
    State(broker): State<Broker>,
    axum::Extension(Reviewer(reviewer)): axum::Extension<Reviewer>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<ReviewDecisionRequest>,
) -> Result<Json<Review>, ApiError> {
    Ok(Json(broker.decide_review(&id, request, reviewer).await?))
}

pub(crate) async fn page_route() -> Response {
    let mut response = PAGE.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
