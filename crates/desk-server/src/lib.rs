//! The deskbroker HTTP server: the `/v1` routes and their handlers, built from one route table
//! (`routes/table.rs`), the extractors, the one auth layer, errors on the wire, the bounded
//! accept loop, TLS, serving, the health listener and the OpenAPI document.
//!
//! Everything behind a handler is desk-broker's core ([`desk_broker::Broker`]); this crate
//! depends on it, never the reverse, and desk-broker links no HTTP crate.
//!
//! Entry points for the binary: [`serve_unix`] and [`serve_tls`] (or [`router`] for tests and
//! other listeners), [`serve_health`], [`server_config`].
#![forbid(unsafe_code)]

mod api_error;
mod approval_routes;
mod auth;
mod clipboard_routes;
mod conn;
mod extract;
mod handlers;
mod health;
mod observer_routes;
mod openapi;
mod peer;
mod review_routes;
mod routes;
mod serve;
mod shot_json;
mod tls;

pub use api_error::{ApiError, status as error_status};
pub use conn::{ConnectionLimits, raise_open_file_limit};
pub use extract::BODY_LIMIT_BYTES;
pub use health::{health_router, serve_health};
pub use openapi::{openapi_json, statuses as error_statuses};
pub use peer::Peer;
pub use routes::{Credential, ROUTES, Route, router};
pub use rustls::ServerConfig as TlsServerConfig;
pub use serve::{serve_tls, serve_tls_with, serve_unix, serve_unix_with};
pub use tls::{TlsFiles, install_crypto_provider, server_config};

#[cfg(test)]
mod tests;
