//! The kill path: the one function the watchdog, `deskbroker kill` and
//! `POST /v1/sessions/{id}/kill` share ([`kill_session`]). It needs no broker: it reads the
//! store read-only and acts on the state directory, so it works with the broker hung, dead or
//! alive.
//!
//! In order: (1) the session's tombstone `<state_dir>/kills/<id>.json` is created exclusively
//! (a second kill finds it and is a no-op: idempotent) and fsynced: from then on the lease token
//! authorizes nothing (`auth.rs` answers `session_killed`); (2) the workspace's state becomes
//! `removal_pending` with what must go (`workspace.rs`); (3) the worker's process group is
//! SIGKILLed first (input frozen: no other process injects input), then every other recorded
//! group and the sandbox, then the workspace and the session directory are removed and the
//! removal is checked (`desk_desktop::destroy`); (4) the workspace becomes `destroyed` when
//! proven (else the reconciler retries); (5) a signed terminal receipt is appended to the spool
//! (append, fsync, read back). The broker, when it runs, marks the session `killed` and replays
//! the receipt into the session's evidence (`reconcile.rs`).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::time::Duration;

use desk_desktop::{SessionDir, StateDir, destroy};
use desk_evidence::SigningKey;
use desk_evidence::record::{KILL_CONTROL_ID, SessionKilled};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::util::now_ms;
use crate::workspace::{self, WorkspaceState};

/// How long a kill waits for the killed processes to be gone before it records what is left.
const DESTROY_TIMEOUT: Duration = Duration::from_secs(3);

/// Which limit the watchdog enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// `SessionLimits::max_task`, counted from the handoff.
    MaxTaskMinutes,
    /// `SessionLimits::max_refused_actions`.
    MaxRefusedActions,
    /// `SessionLimits::idle_limit`.
    IdleLimit,
    /// The lease expired (plus its grace) and no broker released it.
    LeaseExpiry,
}

impl Limit {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::MaxTaskMinutes => "max_task_minutes",
            Limit::MaxRefusedActions => "max_refused_actions",
            Limit::IdleLimit => "idle_limit",
            Limit::LeaseExpiry => "lease_expiry",
        }
    }
}

/// Who asks for a kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillSource {
    /// The watchdog, at `limit`.
    Watchdog(Limit),
    /// An operator (`deskbroker kill`, `POST /v1/sessions/{id}/kill`).
    Operator,
}

/// A killed session's tombstone: `<state_dir>/kills/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tombstone {
    /// The killed session.
    pub session_id: String,
    /// Why.
    pub reason: String,
    /// The terminal receipt's id.
    pub record_id: String,
    /// When the kill began, milliseconds since the Unix epoch.
    pub killed_at_ms: u64,
}

/// What [`kill_session`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillOutcome {
    /// The session was killed now; its terminal receipt is in the spool.
    Killed(SessionKilled),
    /// It had been killed before (nothing was done again).
    AlreadyKilled(Tombstone),
}

/// What the kill path needs of a session, read from the store without the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionFacts {
    pub(crate) id: String,
    pub(crate) state: String,
    pub(crate) session_dir: String,
    pub(crate) next_action_index: u64,
    pub(crate) expires_at_ms: u64,
    pub(crate) handoff_ms: Option<u64>,
    /// The end of the last action, or `None` when none ended.
    pub(crate) last_action_end_ms: Option<u64>,
    /// Whether an action is journaled `pending` (in flight).
    pub(crate) action_in_flight: bool,
}

/// Opens the store at `database` read-only (the watchdog and the kill CLI never write it).
pub(crate) fn open_read_only(database: &Path) -> Result<Connection, BrokerError> {
    let connection = Connection::open_with_flags(
        database,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(BrokerError::store("open read-only"))?;
    connection
        .busy_timeout(Duration::from_millis(500))
        .map_err(BrokerError::store("configure"))?;
    Ok(connection)
}

const FACTS: &str = "SELECT s.id, s.state, s.session_dir, s.next_action_index, s.expires_at_ms, \
    s.handoff_ms, \
    (SELECT MAX(a.updated_at_ms) FROM actions a WHERE a.session_id = s.id AND a.status != 'pending'), \
    EXISTS (SELECT 1 FROM actions a WHERE a.session_id = s.id AND a.status = 'pending') \
    FROM sessions s";

fn facts_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionFacts> {
    let to_u64 = |value: i64| u64::try_from(value).unwrap_or(0);
    Ok(SessionFacts {
        id: row.get(0)?,
        state: row.get(1)?,
        session_dir: row.get(2)?,
        next_action_index: to_u64(row.get(3)?),
        expires_at_ms: to_u64(row.get(4)?),
        handoff_ms: row.get::<_, Option<i64>>(5)?.map(to_u64),
        last_action_end_ms: row.get::<_, Option<i64>>(6)?.map(to_u64),
        action_in_flight: row.get::<_, i64>(7)? != 0,
    })
}

/// The facts of session `id`, if the store knows it.
pub(crate) fn session_facts(
    connection: &Connection,
    id: &str,
) -> Result<Option<SessionFacts>, BrokerError> {
    connection
        .query_row(&format!("{FACTS} WHERE s.id = ?1"), [id], facts_of)
        .optional()
        .map_err(BrokerError::store("read a session"))
}

/// The facts of every session neither released nor killed.
pub(crate) fn live_sessions(connection: &Connection) -> Result<Vec<SessionFacts>, BrokerError> {
    let mut statement = connection
        .prepare(&format!(
            "{FACTS} WHERE s.state NOT IN ('released', 'killed')"
        ))
        .map_err(BrokerError::store("list sessions"))?;
    let rows = statement
        .query_map([], facts_of)
        .map_err(BrokerError::store("list sessions"))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(BrokerError::store("list sessions"))
}

/// Whether `id` may name a file: a broker session id (`[A-Za-z0-9_-]`, at most 128).
pub(crate) fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Checks an operator's reason: 1 to 256 bytes, no control characters.
pub fn check_reason(reason: &str) -> Result<(), BrokerError> {
    if reason.trim().is_empty() || reason.len() > 256 || reason.chars().any(char::is_control) {
        return Err(BrokerError::InvalidRequest(
            "reason must be 1 to 256 bytes of text without control characters".to_string(),
        ));
    }
    Ok(())
}

/// The tombstone of `id`, if it was killed.
pub fn read_tombstone(state: &StateDir, id: &str) -> Option<Tombstone> {
    if !plain_id(id) {
        return None;
    }
    let bytes = std::fs::read(state.kill_record(id)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn create_private_dir(path: &Path) -> Result<(), BrokerError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(BrokerError::io("create", path))
}

/// Creates the tombstone exclusively; `Ok(false)` when it already exists.
fn write_tombstone(state: &StateDir, tombstone: &Tombstone) -> Result<bool, BrokerError> {
    create_private_dir(&state.kills())?;
    let path = state.kill_record(&tombstone.session_id);
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(error) => return Err(BrokerError::io("create the tombstone", &path)(error)),
    };
    let text = serde_json::to_vec(tombstone).map_err(|source| BrokerError::Json {
        operation: "encode the tombstone",
        source,
    })?;
    file.write_all(&text)
        .and_then(|()| file.sync_all())
        .map_err(BrokerError::io("write the tombstone", &path))?;
    std::fs::File::open(state.kills())
        .and_then(|directory| directory.sync_all())
        .map_err(BrokerError::io("fsync", state.kills()))?;
    Ok(true)
}

fn new_record_id() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| BrokerError::Internal(format!("failed to draw a record id: {error}")))?;
    Ok(format!("kill-{}", hex::encode(bytes)))
}

/// Kills session `session_id` of the broker state at `state`: see the module documentation.
/// Refuses (changing nothing) an unknown session (`not_found`), a released one
/// (`invalid_state`) and a bad reason (`invalid_request`).
pub fn kill_session(
    state: &StateDir,
    key: &SigningKey,
    session_id: &str,
    reason: &str,
    source: &KillSource,
) -> Result<KillOutcome, BrokerError> {
    check_reason(reason)?;
    if !plain_id(session_id) {
        return Err(BrokerError::NotFound("session".to_string()));
    }
    if let Some(tombstone) = read_tombstone(state, session_id) {
        return Ok(KillOutcome::AlreadyKilled(tombstone));
    }
    let facts = session_facts(&open_read_only(&state.database())?, session_id)?
        .ok_or_else(|| BrokerError::NotFound("session".to_string()))?;
    if facts.state == "released" {
        return Err(BrokerError::InvalidState {
            operation: "kill_session",
            reason: "the session was released; nothing is left to kill".to_string(),
        });
    }
    let tombstone = Tombstone {
        session_id: session_id.to_string(),
        reason: reason.to_string(),
        record_id: new_record_id()?,
        killed_at_ms: now_ms(),
    };
    if !write_tombstone(state, &tombstone)? {
        return read_tombstone(state, session_id)
            .map(KillOutcome::AlreadyKilled)
            .ok_or_else(|| BrokerError::Internal("a tombstone cannot be read".to_string()));
    }
    let session_dir = SessionDir::at(&facts.session_dir);
    let remains = destroy::remains(&session_dir);
    workspace::record(state, session_id, WorkspaceState::RemovalPending, &remains)?;
    let removal = destroy::destroy(&remains, DESTROY_TIMEOUT);
    if removal.proven() {
        workspace::record(state, session_id, WorkspaceState::Destroyed, &remains)?;
    }
    let receipt = SessionKilled {
        record_id: tombstone.record_id.clone(),
        control_id: KILL_CONTROL_ID.to_string(),
        stage: "terminal".to_string(),
        outcome: if removal.proven() {
            "contained"
        } else {
            "removal_unproven"
        }
        .to_string(),
        recorded_at_ms: now_ms(),
        source: match source {
            KillSource::Watchdog(_) => "watchdog",
            KillSource::Operator => "operator",
        }
        .to_string(),
        reason: reason.to_string(),
        limit: match source {
            KillSource::Watchdog(limit) => Some(limit.as_str().to_string()),
            KillSource::Operator => None,
        },
        last_action_index: facts.next_action_index.checked_sub(1),
        state_destroyed: removal.processes_left.is_empty(),
        lease_revoked: true,
        storage_destroyed: !removal.directory_left && !removal.workspace_left,
    };
    desk_evidence::spool::append(&state.spool(), key, session_id, &receipt).map_err(|source| {
        BrokerError::Evidence {
            operation: "kill_session",
            source: Box::new(source),
        }
    })?;
    tracing::warn!(
        session_id,
        reason,
        outcome = receipt.outcome,
        "session killed"
    );
    Ok(KillOutcome::Killed(receipt))
}
