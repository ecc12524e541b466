//! The deskbroker broker core: lease manager, session state machine, durable store, and every
//! operation behind the HTTP API (the API itself, its routes, auth layer and listeners, is
//! desk-server's; this crate links no HTTP crate).
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
//! desk-server's `serve_unix` (or its `router` for tests and other listeners) and, on shutdown,
//! [`Broker::shutdown_backends`].
#![forbid(unsafe_code)]

mod a11y;
mod actions;
mod admission;
mod approval;
mod artifact;
mod broker;
mod checkpoint;
mod clipboard;
mod config;
mod control;
pub mod credential;
mod door;
mod error;
mod evidence;
mod fault;
mod frames;
mod health;
mod ids;
mod journal;
pub mod kill;
mod lease;
mod lease_token;
mod ledger;
mod line_socket;
mod logs;
mod metrics;
pub mod observer;
mod policy;
mod private;
mod program;
mod reconcile;
mod reset;
mod review;
mod service_key;
mod session;
mod shot_gate;
mod status;
mod step;
mod store;
mod util;
mod watch;
pub mod watchdog;
mod workspace;
pub use artifact::read::{CHILD_COMMAND as WORKSPACE_READ_COMMAND, workspace_read_child};
pub use artifact::{ArtifactValidator, ArtifactValidators};

pub use a11y::parse_limits as parse_accessibility_limits;
pub use approval::issue::Approver;
pub use broker::Broker;
pub use config::{
    AuthConfig, BrokerConfig, DEFAULT_SESSION_QUEUE, EvidenceConfig, PolicyConfig, SessionLimits,
};
pub use desk_contract::shot::CarriesShot;
pub use desk_desktop::{BackendFactory, BackendRequest, SessionDir, StateDir};
pub use error::BrokerError;
pub use evidence::{
    PUBLIC_KEY_FILE, SIGNING_KEY_FILE, export_evidence, load_signing_key, public_key_path,
    verify_evidence, verify_evidence_observed,
};
pub use fault::{FAULT_ENV, FaultHook};
pub use ids::{MAX_SESSION_ID_BYTES, SessionId};
pub use observer::SignedObservation;
pub use policy::{DEFAULT_POLICY_FILE, POLICY_KEY_FILE, POLICY_PUBLIC_KEY_FILE, policy_dir};
pub use private::{DirUse, ensure_private_dir, restrict_umask};
pub use reconcile::Reconciled;
pub use review::{Review, ReviewDecisionRequest, ReviewList};
pub use shot_gate::Stream;
pub use util::{now_ms, sha256_hex};
pub use watch::StatusWait;
pub use workspace::WorkspaceState;

#[cfg(test)]
mod tests;
