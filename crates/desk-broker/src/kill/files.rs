//! What a kill leaves on disk and every part of the kill path shares, naming none of them: the
//! directory of tombstones and kill locks ([`KillDir`]: the state directory's, or the
//! watchdog's while the state directory cannot be written, `kill/place.rs`), the tombstone's
//! shape ([`Tombstone`]) and how long a kill waits for the killed processes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_desktop::StateDir;
use desk_evidence::record::ProhibitedProcess;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::ids::SessionId;

/// How long a kill waits for the killed processes to be gone before it records what is left.
pub(super) const DESTROY_TIMEOUT: Duration = Duration::from_secs(3);

/// A directory of tombstones and kill locks, below the root it must never recreate.
#[derive(Debug, Clone)]
pub(crate) struct KillDir {
    root: PathBuf,
    dir: PathBuf,
    watchdog: bool,
}

impl KillDir {
    /// `<state_dir>/kills`.
    pub(crate) fn state(state: &StateDir) -> Self {
        Self {
            root: state.path().to_path_buf(),
            dir: state.kills(),
            watchdog: false,
        }
    }

    /// `<state_dir>.watchdog/kills`.
    pub(crate) fn watchdog(state: &StateDir) -> Self {
        Self {
            root: crate::watchdog::key::watchdog_dir(state.path()),
            dir: crate::watchdog::key::kills_dir(state.path()),
            watchdog: true,
        }
    }

    /// Whether this is the watchdog's directory (the state directory could not be written).
    pub(crate) fn is_watchdog(&self) -> bool {
        self.watchdog
    }

    /// Creates the directory (never its root).
    pub(crate) fn create(&self) -> Result<(), BrokerError> {
        crate::private::create_dir_below(&self.root, &self.dir)
            .map_err(BrokerError::io("create", &self.dir))
    }

    /// The path of `id`'s tombstone.
    pub(crate) fn record(&self, id: &SessionId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The path of `id`'s kill lock.
    pub(crate) fn lock(&self, id: &SessionId) -> PathBuf {
        self.dir.join(format!("{id}.lock"))
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

/// A killed session's tombstone: `<state_dir>/kills/<id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tombstone {
    /// The killed session.
    pub session_id: SessionId,
    /// Why.
    pub reason: String,
    /// The terminal receipt's id.
    pub record_id: String,
    /// When the kill began, milliseconds since the Unix epoch.
    pub killed_at_ms: u64,
    /// Who killed (`watchdog`, `operator`), for a receipt written by whoever finishes the kill.
    #[serde(default = "operator")]
    pub source: String,
    /// The limit the watchdog enforced, `None` for an operator's kill.
    #[serde(default)]
    pub limit: Option<String>,
    /// The prohibited process a census found, for a `prohibited_process` kill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProhibitedProcess>,
}

fn operator() -> String {
    "operator".to_string()
}

/// Creates `state`'s kill directory (never the state directory itself).
pub(super) fn create_kills_dir(state: &StateDir) -> Result<(), BrokerError> {
    let path = state.kills();
    crate::private::create_dir_below(state.path(), &path).map_err(BrokerError::io("create", &path))
}
