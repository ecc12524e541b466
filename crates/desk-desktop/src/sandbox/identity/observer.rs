//! The observer's own host identity under a root broker (`deskbroker observer`, containment
//! G001), claimed with the watchdog's rule (`watchdog.rs`, [`super::watchdog`]): a uid/gid pair
//! from its own reserved range [`OBSERVER_IDS`] (beside the watchdog's, below the sessions'),
//! claimed by creating `observer-<id>` in the claims directory naming the observer's directory
//! (`<state_dir>.observer`), held while that directory exists and is owned by the id. So the
//! observer never shares a uid with a watchdog, a session or another broker's observer.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::{CLAIMS_DIR, Ids, host_account_holds, process_runs_as};
use crate::error::BackendError;

/// The ids an observer may run as (uid = gid), after the watchdog's.
pub const OBSERVER_IDS: std::ops::Range<u32> = 61_164..61_228;

/// The observer's ids for its directory `dir` (which exists). Refused with
/// [`BackendError::SandboxUnavailable`] when no id of [`OBSERVER_IDS`] is usable.
pub fn claim_observer(dir: &Path) -> Result<Ids, BackendError> {
    super::watchdog::claim_service_in(
        "observer",
        Path::new(CLAIMS_DIR),
        dir,
        OBSERVER_IDS,
        &host_account_holds,
        &process_runs_as,
    )
}

/// The observer of the broker whose session holds the identity slot `slot`, if it runs under an
/// id of its own: the slot's claim names the session's directory (its second line,
/// `<state_dir>/sessions/<id>`), and that state directory's `<state_dir>.observer` is owned by
/// the observer's claimed id. The sandbox gives that id an account (`host.rs`), which is what
/// the session's buses need to admit it (dbus-daemon refuses a uid it cannot resolve to a user,
/// even under `<allow user="*"/>`). `None` when there is no such observer (yet): its
/// observations of the session are then `insufficient_data`.
pub(crate) fn observer_for_slot(slot: u32) -> Option<Ids> {
    observer_for_slot_in(Path::new(CLAIMS_DIR), slot)
}

fn observer_for_slot_in(claims: &Path, slot: u32) -> Option<Ids> {
    let text = std::fs::read_to_string(super::claim_path(claims, slot)).ok()?;
    let session_dir = PathBuf::from(text.lines().nth(1)?);
    let state_dir = session_dir.parent()?.parent()?;
    let mut name = state_dir.file_name()?.to_os_string();
    name.push(".observer");
    let dir = std::fs::canonicalize(state_dir.with_file_name(name)).ok()?;
    let owner = std::fs::symlink_metadata(&dir).ok()?.uid();
    (OBSERVER_IDS.contains(&owner)
        && super::watchdog::held(claims, "observer", owner).as_deref() == Some(dir.as_path()))
    .then_some(Ids {
        uid: owner,
        gid: owner,
    })
}

// Apart from the watchdog's ids and below the sessions'.
const _: () = assert!(OBSERVER_IDS.start >= super::watchdog::WATCHDOG_IDS.end);
const _: () = assert!(OBSERVER_IDS.end <= crate::sandbox::DEFAULT_SANDBOX_UID);
