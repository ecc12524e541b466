//! The durable session store: one SQLite database (`<state_dir>/broker.sqlite3`, WAL,
//! `synchronous=FULL`) with schema migrations in code, keyed by `PRAGMA user_version`.
//!
//! Tables: `sessions` (one row per lease, whole-row writes), `actions` (the journal, see
//! `journal.rs`) and `lease_tokens` (the SHA-256 of every lease token minted for a session;
//! migration 2, so databases of earlier versions gain it empty: their sessions have no valid
//! token and are left to the reaper). Invariant: every write that must survive a crash is
//! committed before the broker acts on it; callers serialize writes per session under the
//! session lock.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use desk_contract::api::SessionState;
use desk_desktop::SessionDir;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::session::{Lifecycle, StoredLifecycle};

const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    profile TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    expired INTEGER NOT NULL DEFAULT 0,
    next_action_index INTEGER NOT NULL DEFAULT 0,
    last_sequence INTEGER NOT NULL DEFAULT 0,
    reset_request_id TEXT,
    reset_response TEXT,
    reset_sha TEXT,
    attempt_path TEXT,
    handoff_ms INTEGER,
    last_frame_ms INTEGER,
    checkpoint_sha TEXT,
    checkpoint_size INTEGER,
    checkpoint_method TEXT,
    last_error_code TEXT,
    last_error_message TEXT,
    session_dir TEXT NOT NULL,
    UNIQUE (task_id, attempt_id)
);
CREATE TABLE actions (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    action_index INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    action_type TEXT NOT NULL,
    intent TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'complete', 'unknown')),
    response TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, action_index),
    UNIQUE (session_id, request_id)
);
CREATE INDEX actions_by_status ON actions (status);
"#,
    r#"
CREATE TABLE lease_tokens (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    token_sha256 TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, token_sha256)
);
"#,
    // Migration 3: the workspace policy each session was leased under (`policy.rs`). Sessions
    // of earlier versions have no row.
    r#"
CREATE TABLE session_policies (
    session_id TEXT PRIMARY KEY,
    policy_sha256 TEXT NOT NULL
);
"#,
];

/// One session row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionRow {
    pub(crate) id: SessionId,
    pub(crate) task_id: String,
    pub(crate) attempt_id: String,
    pub(crate) profile: String,
    /// The phase and the next action index; changed only by its transitions (`session.rs`).
    pub(crate) lifecycle: Lifecycle,
    pub(crate) created_at_ms: u64,
    pub(crate) expires_at_ms: u64,
    /// The sequence of the last screenshot handed out; the next one is larger.
    pub(crate) last_sequence: u64,
    pub(crate) reset_request_id: Option<String>,
    pub(crate) reset_response: Option<String>,
    pub(crate) reset_sha: Option<String>,
    pub(crate) attempt_path: Option<String>,
    /// Capture time of the handoff frame: video time 0 of `frame_events.json`.
    pub(crate) handoff_ms: Option<u64>,
    /// Capture time of the last frame written to `frame_events.json`.
    pub(crate) last_frame_ms: Option<u64>,
    pub(crate) checkpoint_sha: Option<String>,
    pub(crate) checkpoint_size: Option<u64>,
    pub(crate) checkpoint_method: Option<String>,
    /// The session's directory ([`SessionRow::dir`]), as a string for the store.
    pub(crate) session_dir: String,
}

impl SessionRow {
    /// The session's directory.
    pub(crate) fn dir(&self) -> SessionDir {
        SessionDir::at(&self.session_dir)
    }

    /// The wire state.
    pub(crate) fn state(&self) -> SessionState {
        self.lifecycle.state()
    }

    /// Whether the reaper released the session because its lease expired.
    pub(crate) fn expired(&self) -> bool {
        self.lifecycle.expired()
    }

    pub(crate) fn next_action_index(&self) -> u64 {
        self.lifecycle.next_action_index()
    }
}

pub(crate) fn to_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn from_sql(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn opt_from_sql(value: Option<i64>) -> Option<u64> {
    value.map(from_sql)
}

const COLUMNS: &str = "id, task_id, attempt_id, profile, state, created_at_ms, expires_at_ms, \
    expired, next_action_index, last_sequence, reset_request_id, reset_response, reset_sha, \
    attempt_path, handoff_ms, last_frame_ms, checkpoint_sha, checkpoint_size, checkpoint_method, \
    last_error_code, last_error_message, session_dir";

fn row_to_session(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let state_text: String = row.get(4)?;
    let state = SessionState::parse(&state_text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            4,
            rusqlite::types::Type::Text,
            format!("unknown session state {state_text:?}").into(),
        )
    })?;
    let lifecycle = Lifecycle::from_stored(StoredLifecycle {
        state,
        expired: row.get::<_, i64>(7)? != 0,
        error_code: row.get(19)?,
        error_message: row.get(20)?,
        next_action_index: from_sql(row.get(8)?),
    });
    Ok(SessionRow {
        id: row.get(0)?,
        task_id: row.get(1)?,
        attempt_id: row.get(2)?,
        profile: row.get(3)?,
        lifecycle,
        created_at_ms: from_sql(row.get(5)?),
        expires_at_ms: from_sql(row.get(6)?),
        last_sequence: from_sql(row.get(9)?),
        reset_request_id: row.get(10)?,
        reset_response: row.get(11)?,
        reset_sha: row.get(12)?,
        attempt_path: row.get(13)?,
        handoff_ms: opt_from_sql(row.get(14)?),
        last_frame_ms: opt_from_sql(row.get(15)?),
        checkpoint_sha: row.get(16)?,
        checkpoint_size: opt_from_sql(row.get(17)?),
        checkpoint_method: row.get(18)?,
        session_dir: row.get(21)?,
    })
}

/// The store. All methods are blocking; call them from blocking threads.
#[derive(Debug)]
pub(crate) struct Store {
    connection: Mutex<Connection>,
}

impl Store {
    /// Opens (creating if needed) and migrates the database at `path`.
    pub(crate) fn open(path: &Path) -> Result<Store, BrokerError> {
        let mut connection = Connection::open(path).map_err(BrokerError::store("open"))?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
            )
            .map_err(BrokerError::store("configure"))?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(BrokerError::store("configure"))?;
        let version: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(BrokerError::store("read the schema version"))?;
        let tx = connection
            .transaction()
            .map_err(BrokerError::store("migrate"))?;
        for (migration_idx, migration) in MIGRATIONS.iter().enumerate() {
            let target = i64::try_from(migration_idx + 1).unwrap_or(i64::MAX);
            if version < target {
                tx.execute_batch(migration)
                    .map_err(BrokerError::store("migrate"))?;
                tx.pragma_update(None, "user_version", target)
                    .map_err(BrokerError::store("migrate"))?;
            }
        }
        tx.commit().map_err(BrokerError::store("migrate"))?;
        Ok(Store {
            connection: Mutex::new(connection),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half-written transaction behind: an
        // uncommitted rusqlite transaction rolls back on drop.
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn insert_session(&self, session: &SessionRow) -> Result<(), BrokerError> {
        let stored = session.lifecycle.to_stored();
        let connection = self.lock();
        connection
            .execute(
                &format!(
                    "INSERT INTO sessions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, \
                     ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"
                ),
                params![
                    session.id,
                    session.task_id,
                    session.attempt_id,
                    session.profile,
                    stored.state.as_str(),
                    to_sql(session.created_at_ms),
                    to_sql(session.expires_at_ms),
                    i64::from(stored.expired),
                    to_sql(stored.next_action_index),
                    to_sql(session.last_sequence),
                    session.reset_request_id,
                    session.reset_response,
                    session.reset_sha,
                    session.attempt_path,
                    session.handoff_ms.map(to_sql),
                    session.last_frame_ms.map(to_sql),
                    session.checkpoint_sha,
                    session.checkpoint_size.map(to_sql),
                    session.checkpoint_method,
                    stored.error_code,
                    stored.error_message,
                    session.session_dir,
                ],
            )
            .map_err(BrokerError::store("insert a session"))?;
        Ok(())
    }

    /// Writes every mutable column of `session`.
    pub(crate) fn save_session(&self, session: &SessionRow) -> Result<(), BrokerError> {
        save_session_on(&self.lock(), session)
    }

    pub(crate) fn session(
        &self,
        session_id: &SessionId,
    ) -> Result<Option<SessionRow>, BrokerError> {
        session_on(&self.lock(), session_id)
    }

    pub(crate) fn session_by_identity(
        &self,
        task_id: &str,
        attempt_id: &str,
    ) -> Result<Option<SessionRow>, BrokerError> {
        self.lock()
            .query_row(
                &format!("SELECT {COLUMNS} FROM sessions WHERE task_id = ?1 AND attempt_id = ?2"),
                [task_id, attempt_id],
                row_to_session,
            )
            .optional()
            .map_err(BrokerError::store("find a lease"))
    }

    /// Records the SHA-256 (hex) of a lease token minted for `session_id`.
    pub(crate) fn insert_lease_token(
        &self,
        session_id: &SessionId,
        token_sha256: &str,
        now_ms: u64,
    ) -> Result<(), BrokerError> {
        self.lock()
            .execute(
                "INSERT INTO lease_tokens (session_id, token_sha256, created_at_ms) \
                 VALUES (?1, ?2, ?3)",
                params![session_id, token_sha256, to_sql(now_ms)],
            )
            .map_err(BrokerError::store("record a lease token"))?;
        Ok(())
    }

    /// The SHA-256 (hex) of every lease token of `session_id`; empty for an unknown session.
    pub(crate) fn lease_token_hashes(
        &self,
        session_id: &SessionId,
    ) -> Result<Vec<String>, BrokerError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare_cached("SELECT token_sha256 FROM lease_tokens WHERE session_id = ?1")
            .map_err(BrokerError::store("read lease tokens"))?;
        let rows = statement
            .query_map([session_id], |row| row.get::<_, String>(0))
            .map_err(BrokerError::store("read lease tokens"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(BrokerError::store("read lease tokens"))
    }

    /// Sessions not yet released.
    pub(crate) fn unreleased_sessions(&self) -> Result<Vec<SessionRow>, BrokerError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE state NOT IN ('released', 'killed')"
            ))
            .map_err(BrokerError::store("list sessions"))?;
        let rows = statement
            .query_map([], row_to_session)
            .map_err(BrokerError::store("list sessions"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(BrokerError::store("list sessions"))
    }
}

pub(crate) fn session_on(
    connection: &Connection,
    session_id: &SessionId,
) -> Result<Option<SessionRow>, BrokerError> {
    connection
        .prepare_cached(&format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"))
        .and_then(|mut statement| statement.query_row([session_id], row_to_session))
        .optional()
        .map_err(BrokerError::store("read a session"))
}

pub(crate) fn save_session_on(
    connection: &Connection,
    session: &SessionRow,
) -> Result<(), BrokerError> {
    let stored = session.lifecycle.to_stored();
    // Cached: every action's two journal commits run it (`journal.rs`).
    connection
        .prepare_cached(
            "UPDATE sessions SET state = ?2, expires_at_ms = ?3, expired = ?4, \
             next_action_index = ?5, last_sequence = ?6, reset_request_id = ?7, \
             reset_response = ?8, reset_sha = ?9, attempt_path = ?10, handoff_ms = ?11, \
             last_frame_ms = ?12, checkpoint_sha = ?13, checkpoint_size = ?14, \
             checkpoint_method = ?15, last_error_code = ?16, last_error_message = ?17 \
             WHERE id = ?1",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                session.id,
                stored.state.as_str(),
                to_sql(session.expires_at_ms),
                i64::from(stored.expired),
                to_sql(stored.next_action_index),
                to_sql(session.last_sequence),
                session.reset_request_id,
                session.reset_response,
                session.reset_sha,
                session.attempt_path,
                session.handoff_ms.map(to_sql),
                session.last_frame_ms.map(to_sql),
                session.checkpoint_sha,
                session.checkpoint_size.map(to_sql),
                session.checkpoint_method,
                stored.error_code,
                stored.error_message,
            ])
        })
        .map_err(BrokerError::store("update a session"))?;
    Ok(())
}
