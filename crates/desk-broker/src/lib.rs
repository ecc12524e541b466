//! The deskbroker broker: lease manager, session state machine, durable store and HTTP routes.
//!
//! The broker sees desktops only through [`desk_desktop::DesktopBackend`], created per session by
//! a [`BackendFactory`] the binary injects. Every operation runs on tokio's blocking pool under a
//! per-session lock, so a slow desktop never blocks the async runtime and operations on one
//! session are serialized; an operation waits for its session's turn before it takes a thread,
//! in a bounded queue per session, so one busy session cannot starve the others.
//!
//! Exactly-once: an action is journaled `pending` in a committed SQLite transaction before the
//! backend sees it, and `complete` with its cached response after; a `pending` row found at
//! startup becomes `unknown` and is never re-injected (see [`journal`](crate::journal)).
//!
//! Entry points for the binary: [`BrokerConfig::new`], [`Broker::open`], [`Broker::spawn_reaper`],
//! [`serve_unix`] (or [`router`] for tests and other listeners) and, on shutdown,
//! [`Broker::shutdown_backends`].
#![forbid(unsafe_code)]

mod a11y;
mod actions;
mod admission;
mod api_error;
mod approval;
mod artifact;
mod auth;
mod broker;
mod checkpoint;
mod clipboard;
mod config;
mod conn;
mod control;
pub mod credential;
mod door;
mod error;
mod evidence;
mod extract;
mod fault;
mod frames;
mod health;
mod ids;
mod journal;
pub mod kill;
mod lease;
mod ledger;
mod line_socket;
mod logs;
mod metrics;
pub mod observer;
mod openapi;
mod policy;
mod private;
mod program;
mod reconcile;
mod reset;
mod review;
mod review_routes;
mod routes;
mod serve;
mod service_key;
mod session;
mod shot_gate;
mod shot_json;
mod status;
mod store;
mod tls;
mod util;
mod watch;
pub mod watchdog;
mod workspace;
pub use artifact::read::{CHILD_COMMAND as WORKSPACE_READ_COMMAND, workspace_read_child};
pub use artifact::{ArtifactValidator, ArtifactValidators};

pub use auth::Peer;
pub use broker::Broker;
pub use config::{
    AuthConfig, BrokerConfig, DEFAULT_SESSION_QUEUE, EvidenceConfig, PolicyConfig, SessionLimits,
};
pub use conn::{ConnectionLimits, raise_open_file_limit};
pub use desk_desktop::{BackendFactory, BackendRequest, SessionDir, StateDir};
pub use error::BrokerError;
pub use evidence::{
    PUBLIC_KEY_FILE, SIGNING_KEY_FILE, export_evidence, load_signing_key, public_key_path,
    verify_evidence, verify_evidence_observed,
};
pub use extract::BODY_LIMIT_BYTES;
pub use fault::{FAULT_ENV, FaultHook};
pub use health::{health_router, serve_health};
pub use ids::SessionId;
pub use openapi::{openapi_json, statuses as error_statuses};
pub use policy::{DEFAULT_POLICY_FILE, POLICY_KEY_FILE, POLICY_PUBLIC_KEY_FILE, policy_dir};
pub use private::restrict_umask;
pub use reconcile::Reconciled;
pub use routes::{ROUTES, router};
pub use rustls::ServerConfig as TlsServerConfig;
pub use serve::{serve_tls, serve_tls_with, serve_unix, serve_unix_with};
pub use tls::{TlsFiles, install_crypto_provider, server_config};
pub use workspace::WorkspaceState;

#[cfg(test)]
mod tests;
