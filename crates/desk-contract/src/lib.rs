//! The deskbroker contract: every type that crosses a process boundary, and the pure rules that
//! decide what may reach a desktop.
//!
//! This crate does no I/O and knows nothing of tokio, X11 or HTTP. It holds:
//! - the agent action schema ([`Action`]) and its validation into an [`InputAction`]
//!   ([`validate_action`]), including key names and forbidden system chords ([`keys`]);
//! - the HTTP request/response bodies ([`api`]) and stable [`ErrorCode`]s;
//! - the task-scoped clipboard's wire types and limits ([`clipboard`]);
//! - the desktop worker's JSONL protocol ([`worker`]) and the facts it reports ([`desktop`]);
//! - the event-log records ([`events`]) and the settle decision ([`settle`]);
//! - the workspace's one strict JSON parser ([`strict`]) and the request parsers built on it
//!   ([`request`]), which every request body passes before any state changes.
//!
//! Compatibility policy: wire names are API. Adding an optional field is compatible; renaming or
//! removing a field, variant or error code is a breaking change and bumps the API path (`/v1`) or
//! [`worker::WORKER_PROTOCOL_VERSION`].
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod a11y;
pub mod action;
pub mod api;
pub mod approval;
pub mod b64;
pub mod clipboard;
pub mod control;
pub mod desktop;
pub mod digest;
pub mod error;
pub mod events;
pub mod geometry;
pub mod keys;
pub mod request;
pub mod settle;
pub mod shot;
pub mod strict;
pub mod validate;
pub mod wire;
pub mod worker;

#[cfg(feature = "schemars")]
#[doc(hidden)]
pub use schemars;

pub use action::{Action, ActionType, Button, Modifier, WirePoint};
pub use digest::sha256_hex;
pub use error::{ActionError, ErrorBody, ErrorCode, StrictJsonError, StrictJsonProblem};
pub use geometry::{DisplaySize, ScreenPoint};
pub use keys::{Key, NamedKey};
pub use settle::{
    SettleOutcome, SettlePolicy, SettleReport, SettleRule, SettleValidation, ValidationKind,
};
pub use validate::{InputAction, ValidatedAction, validate_action};

#[cfg(test)]
mod tests;
