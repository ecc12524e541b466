//! The observer (containment G001): a process of its own (`deskbroker observer`, started by
//! `serve` like the watchdog) that reads a session's app accessibility tree itself, on the
//! session's AT-SPI bus, hashes the last frame the worker captured for the session, and signs
//! what it saw with a key of its own. This module holds what the observer and the broker share:
//! the wire types, the socket and key paths ([`key`]); the broker's client, which verifies and
//! stores an observation, is [`client`].
//!
//! Exchange: the broker connects to `<state_dir>/observer.sock` (the observer refuses, unanswered,
//! a peer whose uid, by `SO_PEERCRED`, is not the broker's), writes one JSON line
//! [`ObserveRequest`] and reads one line back: a signed [`desk_evidence::Envelope`] over an
//! [`Observation`] echoing the nonce and the session. An observation that could not read the
//! tree (no bus, app not registered, the deadline) is still signed, with outcome
//! `insufficient_data` and the reason. A request the observer refuses gets an unsigned
//! `{"error": ...}` line. See `docs/observer.md`.

use desk_contract::desktop::WindowRect;
use serde::{Deserialize, Serialize};

pub mod client;
pub mod key;
mod ops;
pub mod serve;
mod sight;

/// `schema_version` of an [`Observation`].
pub const OBSERVATION_SCHEMA: &str = "deskbroker.observer.observation.v1";

/// The capability's name.
pub const OBSERVER: &str = "observer";

/// Longest request line the observer reads.
pub const MAX_REQUEST_BYTES: u64 = 4096;
/// Longest answer the client reads.
pub const MAX_ANSWER_BYTES: u64 = 8 * 1024 * 1024;
/// Most accessible elements one observation holds (more: `truncated`).
pub const MAX_NODES: u32 = 2000;
/// Deepest element read.
pub const MAX_DEPTH: u32 = 64;
/// How long the observer may take to read the tree (the walk's own deadline is shorter).
pub const TREE_DEADLINE_MS: u32 = 3000;
/// Largest frame file the observer hashes.
pub const MAX_FRAME_BYTES: u64 = 64 * 1024 * 1024;

/// `<state_dir>/observer.sock`.
pub fn socket_path(state_dir: &std::path::Path) -> std::path::PathBuf {
    state_dir.join("observer.sock")
}

/// What the broker sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveRequest {
    /// `observe`.
    pub op: String,
    /// The session.
    pub session: String,
    /// The broker's nonce, echoed inside the signed answer.
    pub nonce: String,
    /// A screen point to aim the walk at (a pointer step's): only what may be at it is read,
    /// and the observation's `scope` says so. Absent: the whole tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<[u32; 2]>,
}

/// What part of the app an observation read, when not all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationScope {
    /// The walk was aimed at this screen point: below the application and its top-level
    /// windows it read a node's children only where the node's extents contain the point (or
    /// it has none), so everything left out lies outside the point. Such an observation
    /// decides what is at this point only.
    pub point: [u32; 2],
}

/// Whether the observer could see the session's app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObservationOutcome {
    /// The tree was read (it may be `truncated`).
    Observed,
    /// The tree could not be read; `reason` says why. Nothing may be judged from it.
    InsufficientData,
}

/// One accessible element as the observer read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedElement {
    /// Its path from the application: child ordinals joined by `.` (`0` is the application).
    pub id: String,
    /// Its index in this observation (pre-order of the breadth-first walk).
    pub index: u32,
    /// Its parent's index; `None` for the application.
    pub parent: Option<u32>,
    /// AT-SPI role name.
    pub role: String,
    /// Accessible name.
    pub name: String,
    /// Screen rectangle, when it has one.
    pub bounds: Option<WindowRect>,
    /// AT-SPI states.
    pub states: Vec<String>,
}

/// The last frame the worker captured for the session, hashed by the observer from the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedFrame {
    /// Its sequence (`<session>/frames/<sequence>.png`).
    pub sequence: u64,
    /// sha256 of the PNG file's bytes, hex.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The signed observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// [`OBSERVATION_SCHEMA`].
    pub schema_version: String,
    /// `obs_` and 32 hex digits, made by the observer.
    pub observation_id: String,
    /// The session observed.
    pub session_id: String,
    /// The broker's nonce.
    pub nonce: String,
    /// Whether the tree was read.
    pub outcome: ObservationOutcome,
    /// Why not, for `insufficient_data`.
    pub reason: Option<String>,
    /// The app's elements (empty for `insufficient_data`).
    pub elements: Vec<ObservedElement>,
    /// Whether the walk stopped at a limit (node count, depth, time).
    pub truncated: bool,
    /// Absent: the whole tree was walked; else what the walk was aimed at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ObservationScope>,
    /// The last frame captured for the session, when there is one.
    pub frame: Option<ObservedFrame>,
    /// `CLOCK_MONOTONIC` of the observer's host when the observation was made, milliseconds.
    pub monotonic_ms: u64,
    /// Wall time, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// How long reading the tree took.
    pub tree_ms: u64,
    /// The fingerprint of the observer's public key.
    pub observer_key_id: String,
    /// The observer's process id.
    pub observer_pid: u32,
    /// The observer's effective uid.
    pub observer_uid: u32,
    /// `own` (a uid of its own, under a root broker) or `shared` (the broker's uid).
    pub observer_identity: String,
}

impl Observation {
    /// The elements as an accessibility tree, for the hit-test (`approval/hit.rs`): indices and
    /// parents as observed, `window` unclassified.
    pub fn tree(&self) -> desk_contract::a11y::AxTree {
        let children = |index: u32| {
            self.elements
                .iter()
                .filter(|element| element.parent == Some(index))
                .count() as u32
        };
        desk_contract::a11y::AxTree {
            observation_id: self.observation_id.clone(),
            nodes: self
                .elements
                .iter()
                .map(|element| desk_contract::a11y::AxNode {
                    index: element.index,
                    parent: element.parent,
                    depth: element.id.matches('.').count() as u32,
                    role: element.role.clone(),
                    name: element.name.clone(),
                    states: element.states.clone(),
                    bounds: element.bounds,
                    actions: Vec::new(),
                    editable: false,
                    child_count: children(element.index),
                    window: Default::default(),
                })
                .collect(),
            truncated: self.truncated,
            elapsed_ms: self.tree_ms,
        }
    }
}

/// A signed observation as the routes answer it (the envelope), for the OpenAPI document.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignedObservation {
    /// The observation.
    pub payload: Observation,
    /// Standard base64 of the Ed25519 signature over JCS(`payload`) with the observer's key.
    pub signature_b64: String,
}

/// Valid observation ids: `obs_` and 32 lowercase hex digits.
pub fn valid_observation_id(id: &str) -> bool {
    id.strip_prefix("obs_").is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

/// Valid nonces: 16 to 128 characters of `[A-Za-z0-9_-]`.
pub fn valid_nonce(nonce: &str) -> bool {
    (16..=128).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_nonces_are_bounded_plain_tokens() {
        assert!(valid_observation_id(&format!("obs_{}", "a1".repeat(16))));
        assert!(!valid_observation_id(&format!("obs_{}", "A1".repeat(16))));
        assert!(!valid_observation_id("obs_../../etc/passwd"));
        assert!(!valid_observation_id(&"a".repeat(36)));
        assert!(valid_nonce("0123456789abcdef"));
        assert!(!valid_nonce("short"));
        assert!(!valid_nonce("0123456789abcdef\n"));
    }
}
