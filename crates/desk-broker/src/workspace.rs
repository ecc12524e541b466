//! Each workspace's durable state, `<state_dir>/workspaces/<id>.json`: `launching` (reset is
//! starting its desktop), `running` (handed off), `stopped` (its session failed: every process
//! stopped, the directory kept until release), `removal_pending` (release or a kill began
//! destroying it; what must go is recorded beside it), `destroyed` (removal proven: no process,
//! no directory, no X socket, no sandbox). Written atomically (temporary file, fsync, rename)
//! by the broker and by the kill path; the reconciler (`reconcile.rs`) moves every
//! `removal_pending` workspace to `destroyed` once it proves the removal.

use std::io::Write as _;

use desk_desktop::StateDir;
use desk_desktop::destroy::Remains;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::util::now_ms;

pub use desk_contract::api::WorkspaceState;

/// The record on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkspaceRecord {
    pub(crate) state: WorkspaceState,
    pub(crate) at_ms: u64,
    /// What must be gone before `destroyed` (from `removal_pending` on).
    pub(crate) remains: Remains,
}

/// Writes `state` for session `id`'s workspace.
pub(crate) fn record(
    state_dir: &StateDir,
    id: &SessionId,
    state: WorkspaceState,
    remains: &Remains,
) -> Result<(), BrokerError> {
    let directory = state_dir.workspaces();
    crate::private::create_dir_below(state_dir.path(), &directory)
        .map_err(BrokerError::io("create", &directory))?;
    let path = state_dir.workspace_state(id.as_str());
    let temporary = path.with_extension("json.tmp");
    let text = serde_json::to_vec(&WorkspaceRecord {
        state,
        at_ms: now_ms(),
        remains: remains.clone(),
    })
    .map_err(|source| BrokerError::Json {
        operation: "encode a workspace state",
        source,
    })?;
    let mut file =
        crate::private::create_file(&temporary).map_err(BrokerError::io("create", &temporary))?;
    file.write_all(&text)
        .and_then(|()| file.sync_all())
        .map_err(BrokerError::io("write", &temporary))?;
    std::fs::rename(&temporary, &path).map_err(BrokerError::io("rename", &path))?;
    std::fs::File::open(&directory)
        .and_then(|handle| handle.sync_all())
        .map_err(BrokerError::io("fsync", &directory))
}

/// The recorded state of session `id`'s workspace, if any.
pub(crate) fn read(state_dir: &StateDir, id: &SessionId) -> Option<WorkspaceRecord> {
    let bytes = std::fs::read(state_dir.workspace_state(id.as_str())).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Every recorded workspace, by session id.
pub(crate) fn all(state_dir: &StateDir) -> Vec<(SessionId, WorkspaceRecord)> {
    let Ok(entries) = std::fs::read_dir(state_dir.workspaces()) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            // Files not named by a session id are no workspace records.
            let id = SessionId::parse(name.strip_suffix(".json")?).ok()?;
            let record = read(state_dir, &id)?;
            Some((id, record))
        })
        .collect()
}
