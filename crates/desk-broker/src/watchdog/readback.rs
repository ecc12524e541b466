//! The watchdog's readback channel (containment G005): `<state_dir>/watchdog.sock`, answered by
//! the watchdog itself, so an operator learns what the watchdog sees and enforces even while the
//! broker is stopped, hung or lying.
//!
//! A caller connects, writes one JSON line `{"nonce": "..."}` (16 to 128 characters of
//! `[A-Za-z0-9_-]`) and reads one line back: a signed [`Envelope`] over a [`Readback`] that
//! echoes the nonce, so an answer cannot be replayed from an earlier exchange or made up by
//! anything without the key. The readback lists every session the watchdog watches (live ones
//! with their limits' inputs and the limit now due, killed ones with their tombstone) and the
//! limits it enforces. A refused request gets an unsigned `{"error": "..."}` line and nothing
//! else.
//!
//! Operator-only: the socket is created 0600 in the 0700 state directory, and a connecting
//! peer whose uid (`SO_PEERCRED`) is neither the watchdog's nor root's is refused unanswered.
//! [`query`] is the client: it sends a fresh nonce and accepts only a verified answer echoing
//! it.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_desktop::StateDir;
use desk_evidence::{Envelope, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::line_socket;
use crate::util::now_ms;

/// `schema_version` of a [`Readback`].
pub const READBACK_SCHEMA: &str = "deskbroker.watchdog.readback.v2";

/// Longest request line read.
const MAX_REQUEST_BYTES: u64 = 4096;
/// Longest answer read by [`query`].
const MAX_ANSWER_BYTES: u64 = 4 * 1024 * 1024;
/// How long one exchange may take on either side.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(2);

/// `<state_dir>/watchdog.sock`.
pub fn socket_path(state_dir: &Path) -> PathBuf {
    state_dir.join("watchdog.sock")
}

/// What a caller sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadbackRequest {
    /// The caller's nonce, echoed inside the signed answer.
    pub nonce: String,
}

/// The limits the watchdog enforces, in milliseconds (`None`: unlimited).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadbackLimits {
    /// Task time from the handoff.
    pub max_task_ms: Option<u64>,
    /// Refused actions before the session is killed.
    pub max_refused_actions: Option<u64>,
    /// Time with no action in flight and none ended.
    pub idle_limit_ms: Option<u64>,
    /// Time past the lease's expiry before a session no broker released is killed.
    pub lease_grace_ms: u64,
}

/// A killed session as its tombstone records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KilledReadback {
    /// Why.
    pub reason: String,
    /// Who killed (`watchdog`, `operator`).
    pub source: String,
    /// The limit enforced, if the watchdog killed.
    pub limit: Option<String>,
    /// When the kill began, milliseconds since the Unix epoch.
    pub killed_at_ms: u64,
    /// The terminal receipt's id.
    pub record_id: String,
}

/// One session as the watchdog sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionReadback {
    /// The session.
    pub session_id: String,
    /// The store's state (`ready`, `running`, ...) or `killed`.
    pub state: String,
    /// The handoff, milliseconds since the Unix epoch.
    pub handoff_ms: Option<u64>,
    /// The lease's expiry, milliseconds since the Unix epoch.
    pub expires_at_ms: Option<u64>,
    /// The end of the last action.
    pub last_action_end_ms: Option<u64>,
    /// Whether an action is in flight.
    pub action_in_flight: bool,
    /// Actions refused before input so far.
    pub refused_actions: u64,
    /// The limit reached now (the watchdog kills on its next round), if any.
    pub due: Option<String>,
    /// The kill, for a killed session.
    pub killed: Option<KilledReadback>,
}

/// The signed answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Readback {
    /// [`READBACK_SCHEMA`].
    pub schema_version: String,
    /// The caller's nonce.
    pub nonce: String,
    /// When the answer was made, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The watchdog's process id.
    pub watchdog_pid: u32,
    /// Whose uid the watchdog runs under: `own` (a uid of its own, under a root broker) or
    /// `shared` (the broker's).
    pub watchdog_identity: super::identity::WatchdogIdentity,
    /// The watchdog's effective uid.
    pub watchdog_uid: u32,
    /// How often the watchdog checks, milliseconds.
    pub interval_ms: u64,
    /// Whether the broker the watchdog watches is alive (`None`: it watches none).
    pub broker_alive: Option<bool>,
    /// The digest of the signed policy the watchdog verified and takes its limits from
    /// (`None`: none verified; it enforces the operator's flags alone).
    pub policy_sha256: Option<String>,
    /// The limits enforced: the policy's, tightened by the operator's flags.
    pub limits: ReadbackLimits,
    /// Every live or killed session of the state directory.
    pub sessions: Vec<SessionReadback>,
}

fn valid_nonce(nonce: &str) -> bool {
    (16..=128).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// What the watchdog answers with: its config, its key and its broker.
pub(crate) struct Responder {
    pub(crate) state: StateDir,
    pub(crate) key: SigningKey,
    pub(crate) policy_sha256: Option<String>,
    /// Its limits as enforced (the policy's, tightened by the flags).
    pub(crate) config: super::rules::WatchdogConfig,
    pub(crate) broker: Option<desk_desktop::launcher::RecordedProcess>,
}

impl Responder {
    /// The readback for `nonce`, now.
    fn readback(&self, nonce: &str) -> Result<Readback, BrokerError> {
        let now = now_ms();
        let mut sessions = Vec::new();
        if self.state.database().exists() {
            let connection = crate::kill::open_read_only(&self.state.database())?;
            for facts in crate::kill::live_sessions(&connection)? {
                if crate::kill::read_tombstone(&self.state, &facts.id).is_some() {
                    continue;
                }
                let refused = super::rules::refused_actions(&desk_desktop::SessionDir::at(
                    &facts.session_dir,
                ));
                let due = super::rules::due(
                    &facts,
                    refused,
                    &self.config.limits,
                    self.config.lease_grace,
                    now,
                )
                .map(|(limit, _)| limit.as_str().to_string());
                sessions.push(SessionReadback {
                    session_id: facts.id.to_string(),
                    state: facts.state.clone(),
                    handoff_ms: facts.handoff_ms,
                    expires_at_ms: Some(facts.expires_at_ms),
                    last_action_end_ms: facts.last_action_end_ms,
                    action_in_flight: facts.action_in_flight,
                    refused_actions: refused,
                    due,
                    killed: None,
                });
            }
        }
        for tombstone in crate::kill::tombstones(&self.state) {
            sessions.push(SessionReadback {
                session_id: tombstone.session_id.to_string(),
                state: "killed".to_string(),
                handoff_ms: None,
                expires_at_ms: None,
                last_action_end_ms: None,
                action_in_flight: false,
                refused_actions: 0,
                due: None,
                killed: Some(KilledReadback {
                    reason: tombstone.reason,
                    source: tombstone.source,
                    limit: tombstone.limit,
                    killed_at_ms: tombstone.killed_at_ms,
                    record_id: tombstone.record_id,
                }),
            });
        }
        sessions.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        Ok(Readback {
            schema_version: READBACK_SCHEMA.to_string(),
            nonce: nonce.to_string(),
            at_ms: now,
            watchdog_pid: std::process::id(),
            watchdog_identity: self.config.identity,
            watchdog_uid: nix::unistd::geteuid().as_raw(),
            interval_ms: millis(self.config.interval),
            broker_alive: self.broker.as_ref().map(|broker| broker.is_alive()),
            policy_sha256: self.policy_sha256.clone(),
            limits: ReadbackLimits {
                max_task_ms: self.config.limits.max_task.map(millis),
                max_refused_actions: self.config.limits.max_refused_actions,
                idle_limit_ms: self.config.limits.idle_limit.map(millis),
                lease_grace_ms: millis(self.config.lease_grace),
            },
            sessions,
        })
    }

    /// Answers one connection: one request line, one answer line.
    fn answer(&self, stream: UnixStream) {
        let peer = line_socket::peer_uid(&stream);
        let own = nix::unistd::geteuid().as_raw();
        if !peer.is_some_and(|uid| uid == own || uid == 0) {
            tracing::warn!(peer_uid = ?peer, "watchdog readback refused a peer");
            return;
        }
        let served = line_socket::serve_one(&stream, EXCHANGE_TIMEOUT, MAX_REQUEST_BYTES, |line| {
            self.signed_answer(line)
        });
        if let Err(error) = served {
            tracing::debug!(%error, "watchdog readback answer not delivered");
        }
    }

    fn signed_answer(&self, line: &str) -> Result<Vec<u8>, String> {
        let request: ReadbackRequest = serde_json::from_str(line.trim_end())
            .map_err(|error| format!("the request is not {{\"nonce\": \"...\"}}: {error}"))?;
        if !valid_nonce(&request.nonce) {
            return Err("the nonce must be 16 to 128 characters of A-Z, a-z, 0-9, - and _".into());
        }
        let readback = self
            .readback(&request.nonce)
            .map_err(|error| format!("cannot read the sessions: {error}"))?;
        Envelope::sign(&readback, &self.key)
            .and_then(|envelope| envelope.canonical_bytes())
            .map_err(|error| format!("cannot sign the answer: {error}"))
    }
}

/// Binds `<state_dir>/watchdog.sock` (0600; a stale socket file is replaced) and answers on a
/// thread of its own until the process exits. A socket that cannot be bound is logged and the
/// watchdog runs on without readback.
pub(crate) fn start(responder: Responder) {
    let path = socket_path(responder.state.path());
    let _ = std::fs::remove_file(&path);
    let listener = match UnixListener::bind(&path) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(path = %path.display(), %error, "watchdog readback socket unavailable");
            return;
        }
    };
    if let Err(error) = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
        tracing::error!(path = %path.display(), %error, "watchdog readback socket not private");
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("watchdog-readback".to_string())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    Ok(stream) => responder.answer(stream),
                    Err(error) => tracing::debug!(%error, "watchdog readback accept failed"),
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!(%error, "watchdog readback thread not started");
    }
}

/// Asks the watchdog of `state_dir` with `nonce` and returns its answer once its signature
/// verifies with `key` and it echoes `nonce`.
pub fn query(state_dir: &Path, nonce: &str, key: &VerifyingKey) -> Result<Readback, BrokerError> {
    let path = socket_path(state_dir);
    let refused =
        |why: String| BrokerError::Watchdog(format!("readback {}: {why}", path.display()));
    let stream = UnixStream::connect(&path).map_err(|error| refused(format!("{error}")))?;
    line_socket::set_timeouts(&stream, EXCHANGE_TIMEOUT).map_err(refused)?;
    let request = serde_json::to_vec(&ReadbackRequest {
        nonce: nonce.to_string(),
    })
    .map_err(BrokerError::json("encode a readback request"))?;
    let line = line_socket::exchange(&stream, request, MAX_ANSWER_BYTES).map_err(refused)?;
    if let Some(error) = line_socket::refusal(line.trim_end().as_bytes()) {
        return Err(refused(format!("the watchdog refused: {error}")));
    }
    let envelope = Envelope::parse(line.trim_end().as_bytes())
        .map_err(|error| refused(format!("not a signed answer: {error}")))?;
    envelope
        .verify(key)
        .map_err(|error| refused(format!("signature: {error}")))?;
    let readback: Readback = envelope
        .decode_payload()
        .map_err(|error| refused(format!("not a readback: {error}")))?;
    if readback.schema_version != READBACK_SCHEMA {
        return Err(refused(format!(
            "schema {} (expected {READBACK_SCHEMA})",
            readback.schema_version
        )));
    }
    if readback.nonce != nonce {
        return Err(refused("the answer does not echo the nonce".to_string()));
    }
    Ok(readback)
}

/// A fresh nonce: 32 random bytes, hex.
pub fn fresh_nonce() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|error| BrokerError::Internal(format!("random: {error}")))?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_bounded_plain_tokens() {
        assert!(valid_nonce("0123456789abcdef"));
        assert!(valid_nonce(&"A_-z".repeat(32)));
        assert!(!valid_nonce("short"));
        assert!(!valid_nonce(&"a".repeat(129)));
        assert!(!valid_nonce("0123456789abcdef\n"));
        assert!(!valid_nonce("0123456789abcdef\"}"));
    }
}
