//! The health listener and the drain route: `GET /livez` 200 while the process serves,
//! `GET /readyz` 200 or 503 with the broker's [`Capacity`] (plain HTTP, no credentials, counts
//! only: a Kubernetes readiness probe that turns false when the broker cannot lease), and
//! `POST /v1/drain`. The capacity and drain rules are desk-broker's (`health.rs`).

use std::future::Future;
use std::net::SocketAddr;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use desk_broker::{Broker, BrokerError};
use desk_contract::api::Capacity;

use crate::api_error::ApiError;
use crate::conn::{ConnectionLimits, serve_bounded};
use crate::peer::Peer;

/// `POST /v1/drain`.
pub(crate) async fn drain_route(State(broker): State<Broker>) -> Result<Json<Capacity>, ApiError> {
    Ok(Json(broker.drain().await?))
}

async fn livez() -> &'static str {
    "ok\n"
}

async fn readyz(State(broker): State<Broker>) -> Response {
    match broker.capacity().await {
        Ok(capacity) if capacity.ready => (StatusCode::OK, Json(capacity)).into_response(),
        Ok(capacity) => (StatusCode::SERVICE_UNAVAILABLE, Json(capacity)).into_response(),
        Err(error) => {
            tracing::error!(error = %error, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "capacity unknown\n").into_response()
        }
    }
}

/// The health listener's routes: `GET /livez` and `GET /readyz`, no credentials; every other
/// path is 404. They carry counts only, never a session id or token.
pub fn health_router(broker: Broker) -> Router {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .with_state(broker)
}

fn tcp_peer(_: &tokio::net::TcpStream, _: &SocketAddr) -> Peer {
    Peer::Tls {
        client_cert_sha256: None,
    }
}

/// Serves [`health_router`] over plain HTTP on `addr` (the bounded accept loop of `conn.rs`,
/// a small connection cap) until `shutdown` resolves.
pub async fn serve_health(
    addr: SocketAddr,
    broker: Broker,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BrokerError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(BrokerError::io("bind the health address", addr.to_string()))?;
    tracing::info!(address = %addr, "health listening (plain HTTP: /livez, /readyz)");
    let limits = ConnectionLimits {
        max_connections: 16,
        ..ConnectionLimits::default()
    };
    serve_bounded(listener, health_router(broker), limits, tcp_peer, shutdown).await;
    Ok(())
}
