//! Where a kill's files live. Normally `<state_dir>/kills/` (`<id>.json` the tombstone,
//! `<id>.lock` the kill lock). When the state directory cannot be written (a read-only bind,
//! a full or failing disk, a mode the killer's uid cannot write) the watchdog kills all the
//! same and keeps its tombstone and lock in its own directory, `<state_dir>.watchdog/kills/`
//! (`watchdog/key.rs`), with its receipt in its own spool; it then skips what would write the
//! state directory (the workspace record, the input logs kept in the evidence) and the
//! removal of the session's directory stays unproven. Once the state directory is writable
//! again the watchdog hands the kill over ([`hand_over`]): the tombstone is written into
//! `<state_dir>/kills/`, the logs are kept and the removal is finished and recorded, and the
//! broker's reconciler replays the receipt from the watchdog's spool into the journal as for
//! any kill. Readers ([`super::read_tombstone`], [`super::tombstones`]) look in both places.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;

use desk_desktop::{SessionDir, StateDir, destroy};

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::workspace::{self, WorkspaceState};

use super::facts::{open_read_only, session_facts};
use super::files::{DESTROY_TIMEOUT, KillDir, Tombstone};
use super::keep::keep_logs;
use super::lock::kill_lock;

/// Whether this process can write `state`'s kill directory (or create it): `faccessat(2)` with
/// `AT_EACCESS`, which answers for the process's effective uid and capabilities (a root
/// broker's watchdog runs under a uid of its own with `CAP_DAC_OVERRIDE`: plain `access(2)`
/// would answer for its real uid without capabilities) and for a read-only mount alike.
pub(crate) fn writable(state: &StateDir) -> bool {
    let probe = if state.kills().is_dir() {
        state.kills()
    } else {
        state.path().to_path_buf()
    };
    nix::unistd::faccessat(
        nix::fcntl::AT_FDCWD,
        &probe,
        nix::unistd::AccessFlags::W_OK,
        nix::fcntl::AtFlags::AT_EACCESS,
    )
    .is_ok()
}

/// Hands every kill the watchdog recorded in its own directory over to the state directory
/// once it can be written (see the module documentation). Returns the sessions handed over;
/// one that fails is logged and tried again on the next call.
pub(crate) fn hand_over(state: &StateDir) -> Vec<SessionId> {
    let mut handed = Vec::new();
    if !writable(state) {
        return handed;
    }
    for tombstone in tombstones_in(&KillDir::watchdog(state)) {
        let id = tombstone.session_id.clone();
        if state.kill_record(id.as_str()).exists() {
            continue;
        }
        match hand_over_one(state, &tombstone) {
            Ok(()) => handed.push(id),
            Err(error) => {
                tracing::error!(session_id = %id, %error, "cannot hand a watchdog's kill over");
            }
        }
    }
    handed
}

fn hand_over_one(state: &StateDir, tombstone: &Tombstone) -> Result<(), BrokerError> {
    let id = &tombstone.session_id;
    let kills = KillDir::state(state);
    let Some(_lock) = kill_lock(&kills, id, false)? else {
        return Ok(());
    };
    if !write_tombstone(&kills, tombstone)? {
        return Ok(());
    }
    let facts = session_facts(&open_read_only(&state.database())?, id)?
        .ok_or_else(|| BrokerError::NotFound("session".to_string()))?;
    let session_dir = SessionDir::at(&facts.session_dir);
    let remains = destroy::remains(&session_dir);
    workspace::record(state, id, WorkspaceState::RemovalPending, &remains)?;
    keep_logs(state, id, &session_dir);
    if destroy::destroy(&remains, DESTROY_TIMEOUT).proven() {
        workspace::record(state, id, WorkspaceState::Destroyed, &remains)?;
    }
    tracing::warn!(session_id = %id, "a watchdog's kill recorded while the state directory was unwritable was handed over");
    Ok(())
}

/// The tombstone of `id`, if it was killed: in the state directory, else in the watchdog's
/// (a kill recorded while the state directory was unwritable, `kill/place.rs`).
pub fn read_tombstone(state: &StateDir, id: &SessionId) -> Option<Tombstone> {
    read_tombstone_in(&KillDir::state(state), id)
        .or_else(|| read_tombstone_in(&KillDir::watchdog(state), id))
}

pub(super) fn read_tombstone_in(kills: &KillDir, id: &SessionId) -> Option<Tombstone> {
    let bytes = std::fs::read(kills.record(id)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Creates the tombstone exclusively in `kills`; `Ok(false)` when it already exists.
pub(super) fn write_tombstone(kills: &KillDir, tombstone: &Tombstone) -> Result<bool, BrokerError> {
    kills.create()?;
    let path = kills.record(&tombstone.session_id);
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
    std::fs::File::open(kills.path())
        .and_then(|directory| directory.sync_all())
        .map_err(BrokerError::io("fsync", kills.path()))?;
    Ok(true)
}

/// Every tombstone of `state`: its own, then the watchdog's not handed over yet.
pub(crate) fn tombstones(state: &StateDir) -> Vec<Tombstone> {
    let mut all = tombstones_in(&KillDir::state(state));
    for tombstone in tombstones_in(&KillDir::watchdog(state)) {
        if !all
            .iter()
            .any(|known| known.session_id == tombstone.session_id)
        {
            all.push(tombstone);
        }
    }
    all
}

pub(super) fn tombstones_in(kills: &KillDir) -> Vec<Tombstone> {
    std::fs::read_dir(kills.path())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| {
                    let name = entry.file_name().into_string().ok()?;
                    let id = SessionId::parse(name.strip_suffix(".json")?).ok()?;
                    read_tombstone_in(kills, &id)
                })
                .collect()
        })
        .unwrap_or_default()
}
