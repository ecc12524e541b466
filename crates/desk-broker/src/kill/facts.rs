//! What the kill path and the watchdog read of a session without the broker: the store opened
//! read-only (they never write it), one row per session with its handoff, lease expiry, last
//! action end and whether an action is in flight.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::error::BrokerError;
use crate::ids::SessionId;

/// What the kill path needs of a session, read from the store without the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionFacts {
    pub(crate) id: SessionId,
    pub(crate) state: String,
    pub(crate) session_dir: String,
    pub(crate) next_action_index: u64,
    pub(crate) expires_at_ms: u64,
    pub(crate) handoff_ms: Option<u64>,
    /// The end of the last action, or `None` when none ended.
    pub(crate) last_action_end_ms: Option<u64>,
    /// Whether an action is journaled `pending` (in flight).
    pub(crate) action_in_flight: bool,
    /// The index of the action journaled `pending`, if any: a kill now leaves its outcome
    /// unknown.
    pub(crate) pending_action: Option<u64>,
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
    (SELECT MIN(a.action_index) FROM actions a WHERE a.session_id = s.id AND a.status = 'pending') \
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
        action_in_flight: row.get::<_, Option<i64>>(7)?.is_some(),
        pending_action: row.get::<_, Option<i64>>(7)?.map(to_u64),
    })
}

/// The facts of session `id`, if the store knows it.
pub(crate) fn session_facts(
    connection: &Connection,
    id: &SessionId,
) -> Result<Option<SessionFacts>, BrokerError> {
    connection
        .query_row(&format!("{FACTS} WHERE s.id = ?1"), params![id], facts_of)
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
