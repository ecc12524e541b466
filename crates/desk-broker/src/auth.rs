//! Authorization of every request (issue 3): lease-bound bearer credentials, the Unix socket's
//! peer-uid allowlist and short-lived orchestration credentials.
//!
//! [`authorize`] runs as a router layer before any handler. Until the credential checks land it
//! admits every request.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::broker::Broker;

/// Who may call the broker. Part of [`crate::BrokerConfig`].
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {}

/// The router layer that authorizes a request before its handler runs.
pub(crate) async fn authorize(
    State(_broker): State<Broker>,
    request: Request,
    next: Next,
) -> Response {
    next.run(request).await
}
