//! The watchdog's own host identity under a root broker (`deskbroker watchdog`), claimed with
//! the sessions' rule (`super`): a uid/gid pair from the reserved range [`WATCHDOG_IDS`] (below
//! the default sandbox base, [`crate::sandbox::DEFAULT_SANDBOX_UID`]), skipped when a host
//! account or group holds it or a live process runs as it, claimed by creating
//! `watchdog-<id>` in the claims directory (`/run/deskbroker-uids`, root's, 0700) naming the
//! watchdog's directory (`<state_dir>.watchdog`).
//!
//! A claim is held while the directory it names exists and is owned by its id (or still by
//! the claimer, root: being prepared); the directory's owner is what records the id, so a watchdog started
//! again for the same state directory gets the same id back (refused if a host account took it
//! since). One id per watchdog directory: two brokers' watchdogs never share a uid, so neither
//! reads the other's key.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::{
    CLAIMS_DIR, Ids, host_account_holds, io_error, process_runs_as, slot_refusal, write_claim,
};
use crate::error::BackendError;

/// The ids a watchdog may run as (uid = gid), below the sessions' default range.
pub const WATCHDOG_IDS: std::ops::Range<u32> = 61_100..61_164;

fn claim_path(claims: &Path, service: &str, id: u32) -> PathBuf {
    claims.join(format!("{service}-{id}"))
}

/// The directory a claim names, when the claim is held (see the module documentation).
pub(super) fn held(claims: &Path, service: &str, id: u32) -> Option<PathBuf> {
    let text = std::fs::read_to_string(claim_path(claims, service, id)).ok()?;
    let dir = PathBuf::from(text.lines().next()?);
    let owner = std::fs::symlink_metadata(&dir).ok()?.uid();
    (owner == id || owner == nix::unistd::geteuid().as_raw()).then_some(dir)
}

/// The watchdog's ids for its directory `dir` (which exists): see the module documentation.
/// Refused with [`BackendError::SandboxUnavailable`] when no id of [`WATCHDOG_IDS`] is usable.
pub fn claim_watchdog(dir: &Path) -> Result<Ids, BackendError> {
    claim_service_in(
        "watchdog",
        Path::new(CLAIMS_DIR),
        dir,
        WATCHDOG_IDS,
        &host_account_holds,
        &process_runs_as,
    )
}

/// Claims an id of `range` for the host service `service` (`watchdog`, `observer`) owning
/// `dir`, with the rule of the module documentation; claims are `<service>-<id>` files.
pub(super) fn claim_service_in(
    service: &str,
    claims: &Path,
    dir: &Path,
    range: std::ops::Range<u32>,
    account: &dyn Fn(u32) -> bool,
    running: &dyn Fn(u32) -> bool,
) -> Result<Ids, BackendError> {
    let dir = std::fs::canonicalize(dir).map_err(io_error("the service directory", dir))?;
    let owner = std::fs::symlink_metadata(&dir)
        .map_err(io_error("the service directory", &dir))?
        .uid();
    if range.contains(&owner) && held(claims, service, owner).as_deref() == Some(dir.as_path()) {
        // Its own already; a host account made since is refused all the same.
        if account(owner) {
            return Err(BackendError::SandboxUnavailable(format!(
                "a host account or group holds the {service}'s id {owner}"
            )));
        }
        return Ok(Ids {
            uid: owner,
            gid: owner,
        });
    }
    std::fs::create_dir_all(claims).map_err(io_error("the uid claims", claims))?;
    std::fs::set_permissions(claims, std::fs::Permissions::from_mode(0o700))
        .map_err(io_error("the uid claims", claims))?;
    let mut last_refusal = String::new();
    for id in range.clone() {
        let path = claim_path(claims, service, id);
        if path.exists() {
            if held(claims, service, id).is_some() {
                continue;
            }
            // Its directory is gone or belongs to another id now: stale.
            let _ = std::fs::remove_file(&path);
        }
        if let Some(refusal) = slot_refusal(&[id], account, running) {
            tracing::warn!(id, service, %refusal, "service uid skipped");
            last_refusal = refusal;
            continue;
        }
        if !write_claim(&path, &format!("{}\n", dir.display()))? {
            continue;
        }
        return Ok(Ids { uid: id, gid: id });
    }
    Err(BackendError::SandboxUnavailable(format!(
        "no {service} uid is free in {}..{}{}",
        range.start,
        range.end,
        if last_refusal.is_empty() {
            String::new()
        } else {
            format!(" (the last refused because {last_refusal})")
        }
    )))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::lchown;

    use super::*;

    #[test]
    fn a_watchdog_keeps_its_id_and_never_shares_or_takes_a_held_one() {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let claims = root.path().join("claims");
        let first = root.path().join("a.watchdog");
        let second = root.path().join("b.watchdog");
        for dir in [&first, &second] {
            std::fs::create_dir(dir).unwrap_or_else(|error| panic!("{error}"));
        }
        let nobody = |_: u32| false;
        // A host account holds 500: skipped.
        let account = |id: u32| id == 500;
        let one = claim_service_in("watchdog", &claims, &first, 500..504, &account, &nobody)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(one, Ids { uid: 501, gid: 501 });
        // Held (its directory is still root's, being prepared): the next watchdog skips it,
        // and a process running as 502 skips that one.
        let running = |id: u32| id == 502;
        let two = claim_service_in("watchdog", &claims, &second, 500..504, &account, &running)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(two.uid, 503);
        if nix::unistd::geteuid().is_root() {
            // Owned by its id: the same watchdog gets it back even with a process running as
            // it (its older self), and is refused once a host account holds it.
            lchown(&first, Some(501), Some(501)).unwrap_or_else(|error| panic!("{error}"));
            let busy = |id: u32| id == 501;
            let again = claim_service_in("watchdog", &claims, &first, 500..504, &account, &busy)
                .unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(again, one);
            let later = |id: u32| id == 501;
            let refused = claim_service_in("watchdog", &claims, &first, 500..504, &later, &nobody);
            assert!(
                matches!(&refused, Err(BackendError::SandboxUnavailable(m)) if m.contains("501")),
                "{refused:?}"
            );
        }
        // Every id taken or refused: refused, nothing claimed.
        let third = root.path().join("c.watchdog");
        std::fs::create_dir(&third).unwrap_or_else(|error| panic!("{error}"));
        let refused = claim_service_in("watchdog", &claims, &third, 500..504, &account, &running);
        assert!(
            matches!(&refused, Err(BackendError::SandboxUnavailable(_))),
            "{refused:?}"
        );
        // A directory gone: its claim is stale and taken again.
        std::fs::remove_dir(&second).unwrap_or_else(|error| panic!("{error}"));
        let taken = claim_service_in("watchdog", &claims, &third, 500..504, &account, &running)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(taken.uid, 503);
    }
}
