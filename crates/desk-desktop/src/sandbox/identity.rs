//! Who runs in a session's sandbox: two host identities of the session's own, one for the
//! desktop's processes (Xvfb, the window manager, the buses, the worker) and one for the app,
//! so the app cannot open the worker's socket, read its X cookie, its `/proc` or memory, nor
//! ptrace or signal the worker, Xvfb or the window manager (the kernel's uid checks refuse it).
//!
//! Only a root broker can give them (a sandbox without a user namespace: root enters the
//! namespaces and drops to the role's uid). A broker that is not root keeps one identity, its
//! own uid inside the sandbox's user namespace: [`Identities::split`] is then `false`.
//!
//! Allocation: slot `n` of [`SLOTS`] gives the desktop `base + 2n` and the app `base + 2n + 1`
//! (uid and gid alike). A slot is taken by creating its claim file in [`CLAIMS_DIR`] (naming
//! the workspace and the session directory; stale once that session's workspace link no longer
//! leads to that workspace); a slot is skipped when a host account or group already holds one of its ids
//! (`getpwuid`/`getgrgid`, through NSS), when a live process runs as one of them, or when
//! another live workspace claims it. The session's ids are recorded in
//! `<session>/identity.json` and its claim is released with its workspace.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::BackendError;
use crate::layout::SessionDir;
pub mod observer;
pub mod watchdog;

/// How many sessions may run at once on a host (two ids each).
const SLOTS: u32 = 2048;

/// Where the claims of the slots live (root's, 0700).
const CLAIMS_DIR: &str = "/run/deskbroker-uids";

/// One host identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ids {
    /// Host uid.
    pub uid: u32,
    /// Host gid.
    pub gid: u32,
}

/// A session's identities, as recorded in `<session>/identity.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identities {
    /// Xvfb, the window manager, the buses, the worker.
    pub desktop: Ids,
    /// The app (and the home seeding, which writes the app's files).
    pub app: Ids,
    /// The slot claimed, when allocated (`None`: the broker's own uid, not root).
    pub slot: Option<u32>,
}

impl Identities {
    /// One identity for everything (a broker that is not root).
    pub fn single(uid: u32, gid: u32) -> Identities {
        let ids = Ids { uid, gid };
        Identities {
            desktop: ids,
            app: ids,
            slot: None,
        }
    }

    /// Whether the app runs under an identity of its own.
    pub fn split(&self) -> bool {
        self.desktop != self.app
    }

    /// The ids of slot `slot` above `base`, or `None` when they overflow.
    fn of_slot(base: u32, slot: u32) -> Option<Identities> {
        let desktop = base.checked_add(slot.checked_mul(2)?)?;
        let app = desktop.checked_add(1)?;
        Some(Identities {
            desktop: Ids {
                uid: desktop,
                gid: desktop,
            },
            app: Ids { uid: app, gid: app },
            slot: Some(slot),
        })
    }

    /// The ids, each once.
    fn ids(&self) -> [u32; 2] {
        [self.desktop.uid, self.app.uid]
    }
}

/// Why ids cannot be used, or `None` when they can: `account` says whether a host account or
/// group holds an id, `running` whether a live process runs as one.
fn slot_refusal(
    ids: &[u32],
    account: &dyn Fn(u32) -> bool,
    running: &dyn Fn(u32) -> bool,
) -> Option<String> {
    for &id in ids {
        if account(id) {
            return Some(format!("a host account or group holds id {id}"));
        }
        if running(id) {
            return Some(format!("a process runs as uid {id}"));
        }
    }
    None
}

/// Whether a host account (`getpwuid`) or group (`getgrgid`) has id `id`; a lookup that fails
/// counts as held.
fn host_account_holds(id: u32) -> bool {
    use nix::unistd::{Gid, Group, Uid, User};
    !matches!(User::from_uid(Uid::from_raw(id)), Ok(None))
        || !matches!(Group::from_gid(Gid::from_raw(id)), Ok(None))
}

/// Whether a live process runs as `uid` (the owner of its `/proc/<pid>` directory).
fn process_runs_as(uid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|entry| {
        entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
            && entry.metadata().is_ok_and(|meta| meta.uid() == uid)
    })
}

fn io_error(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> BackendError {
    let what = format!("{what} {}", path.display());
    move |source| BackendError::Spawn { what, source }
}

/// The identities recorded for the session, if any.
pub fn load(session_dir: &SessionDir) -> Option<Identities> {
    let text = std::fs::read_to_string(session_dir.identity_file()).ok()?;
    serde_json::from_str(&text).ok()
}

/// The claim file of `slot`.
fn claim_path(claims: &Path, slot: u32) -> PathBuf {
    claims.join(slot.to_string())
}

/// The workspace a claim names.
fn claimed_workspace(path: &Path) -> Option<PathBuf> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.lines().next().map(PathBuf::from))
}

/// The workspaces the held claims in [`CLAIMS_DIR`] name (see `workspace_sweep.rs`: a
/// workspace no held claim names belongs to no session).
pub(super) fn claimed_workspaces() -> std::collections::BTreeSet<PathBuf> {
    std::fs::read_dir(CLAIMS_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| claim_held(&entry.path()))
        .filter_map(|entry| claimed_workspace(&entry.path()))
        .collect()
}

/// Whether the claim at `path` is still held: its session's workspace (a link under a root
/// broker) still leads to the workspace it names. A claim being written (empty) is held.
fn claim_held(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let mut lines = text.lines();
    let (Some(workspace), Some(session)) = (lines.next(), lines.next()) else {
        return text.is_empty();
    };
    let link = SessionDir::at(Path::new(session)).workspace();
    std::fs::canonicalize(link).is_ok_and(|target| target == Path::new(workspace))
}

/// The session's identities for `workspace` above `base`: its recorded ones while their claim
/// still names this workspace, else the first usable slot, claimed and recorded. Refused with
/// [`BackendError::SandboxUnavailable`] when no slot is usable.
pub fn claim(
    session_dir: &SessionDir,
    workspace: &Path,
    base: u32,
) -> Result<Identities, BackendError> {
    claim_in(
        Path::new(CLAIMS_DIR),
        session_dir,
        workspace,
        base,
        &host_account_holds,
        &process_runs_as,
    )
}

fn claim_in(
    claims: &Path,
    session_dir: &SessionDir,
    workspace: &Path,
    base: u32,
    account: &dyn Fn(u32) -> bool,
    running: &dyn Fn(u32) -> bool,
) -> Result<Identities, BackendError> {
    if let Some(recorded) = load(session_dir)
        && let Some(slot) = recorded.slot
        && claimed_workspace(&claim_path(claims, slot)).as_deref() == Some(workspace)
    {
        // Still ours; a host account made since is refused all the same.
        if let Some(id) = recorded.ids().into_iter().find(|id| account(*id)) {
            return Err(BackendError::SandboxUnavailable(format!(
                "a host account or group holds the session's id {id}"
            )));
        }
        return Ok(recorded);
    }
    std::fs::create_dir_all(claims).map_err(io_error("the uid claims", claims))?;
    std::fs::set_permissions(claims, std::fs::Permissions::from_mode(0o700))
        .map_err(io_error("the uid claims", claims))?;
    let mut skipped = 0u32;
    let mut last_refusal = String::new();
    for slot in 0..SLOTS {
        let Some(identities) = Identities::of_slot(base, slot) else {
            break;
        };
        let path = claim_path(claims, slot);
        if path.exists() {
            if claim_held(&path) {
                continue;
            }
            // Its session's workspace is gone (a desktop reaped without its release, a session
            // directory removed): stale.
            let _ = std::fs::remove_file(&path);
        }
        if let Some(refusal) = slot_refusal(&identities.ids(), account, running) {
            skipped += 1;
            tracing::warn!(slot, %refusal, "session uid slot skipped");
            last_refusal = refusal;
            continue;
        }
        let named = format!(
            "{}\n{}\n",
            workspace.display(),
            session_dir.path().display()
        );
        if !write_claim(&path, &named)? {
            // Taken meanwhile by another broker.
            continue;
        }
        record(session_dir, &identities)?;
        return Ok(identities);
    }
    Err(BackendError::SandboxUnavailable(format!(
        "no session uid is free above {base} ({SLOTS} slots, {skipped} refused{})",
        if last_refusal.is_empty() {
            String::new()
        } else {
            format!(", the last because {last_refusal}")
        }
    )))
}

/// Creates the claim file `path` (0600, never over an existing one) holding `text`; `false`
/// when another claimant created it first.
fn write_claim(path: &Path, text: &str) -> Result<bool, BackendError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(error) => return Err(io_error("the uid claim", path)(error)),
    };
    file.write_all(text.as_bytes())
        .map_err(io_error("the uid claim", path))?;
    Ok(true)
}

/// Writes `<session>/identity.json`.
fn record(session_dir: &SessionDir, identities: &Identities) -> Result<(), BackendError> {
    let path = session_dir.identity_file();
    let text = serde_json::to_string_pretty(identities).map_err(|error| {
        BackendError::DesktopFailed(format!("failed to encode {}: {error}", path.display()))
    })?;
    std::fs::write(&path, text).map_err(io_error("the identity record", &path))
}

/// Releases the session's claim when it still names `workspace`.
pub fn release(session_dir: &SessionDir, workspace: &Path) {
    release_in(Path::new(CLAIMS_DIR), session_dir, workspace);
}

fn release_in(claims: &Path, session_dir: &SessionDir, workspace: &Path) {
    if let Some(slot) = load(session_dir).and_then(|identities| identities.slot) {
        let path = claim_path(claims, slot);
        if claimed_workspace(&path).as_deref() == Some(workspace) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session directory `name` whose workspace link leads to `workspace` (made).
    fn linked(root: &Path, name: &str, workspace: &Path) -> SessionDir {
        let session = SessionDir::at(root.join(name));
        std::fs::create_dir_all(session.path()).unwrap_or_else(|error| panic!("{error}"));
        std::fs::create_dir_all(workspace).unwrap_or_else(|error| panic!("{error}"));
        let _ = std::fs::remove_file(session.workspace());
        std::os::unix::fs::symlink(workspace, session.workspace())
            .unwrap_or_else(|error| panic!("{error}"));
        session
    }

    fn setup() -> (tempfile::TempDir, PathBuf, SessionDir, PathBuf) {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let claims = root.path().join("claims");
        let workspace = root.path().join("ws");
        let session = linked(root.path(), "session", &workspace);
        (root, claims, session, workspace)
    }

    #[test]
    fn slots_skip_held_ids_and_are_unique_and_reused_by_their_session() {
        let (root, claims, first, ws1) = setup();
        let nobody = |_: u32| false;
        // A host account holds 1001: slot 0 (1000, 1001) is skipped.
        let account = |id: u32| id == 1001;
        let one = claim_in(&claims, &first, &ws1, 1000, &account, &nobody)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(one.slot, Some(1));
        assert_eq!((one.desktop.uid, one.app.uid), (1002, 1003));
        assert!(one.split());
        assert_eq!(load(&first), Some(one));
        // The same session and workspace: the same ids.
        let again = claim_in(&claims, &first, &ws1, 1000, &account, &nobody)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(again, one);
        // Another session: the next free slot; a process running as 1004 skips slot 2.
        let ws2 = root.path().join("ws2");
        let second = linked(root.path(), "second", &ws2);
        let running = |id: u32| id == 1004;
        let two = claim_in(&claims, &second, &ws2, 1000, &account, &running)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(two.slot, Some(3));
        // An account made after the claim: refused at the next start.
        let later = |id: u32| id == 1003;
        let refused = claim_in(&claims, &first, &ws1, 1000, &later, &nobody);
        assert!(
            matches!(&refused, Err(BackendError::SandboxUnavailable(m)) if m.contains("1003")),
            "{refused:?}"
        );
        // Released: the slot is free again for someone else.
        release_in(&claims, &first, &ws1);
        let third = linked(root.path(), "third", &ws1);
        let taken = claim_in(&claims, &third, &ws1, 1000, &account, &nobody)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(taken.slot, Some(1));
        // A claim whose session no longer leads to its workspace is stale.
        std::fs::remove_dir_all(second.path()).unwrap_or_else(|error| panic!("{error}"));
        let ws4 = root.path().join("ws4");
        let fourth = linked(root.path(), "fourth", &ws4);
        let stale = claim_in(&claims, &fourth, &ws4, 1000, &account, &nobody)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(stale.slot, Some(2));
    }

    #[test]
    fn every_slot_held_is_refused() {
        let (_root, claims, session, ws) = setup();
        let all = |_: u32| true;
        let none = |_: u32| false;
        let refused = claim_in(&claims, &session, &ws, 1000, &all, &none);
        assert!(
            matches!(&refused, Err(BackendError::SandboxUnavailable(m)) if m.contains("host account")),
            "{refused:?}"
        );
        assert!(load(&session).is_none());
        // Ids past u32::MAX are never handed out.
        let overflow = claim_in(&claims, &session, &ws, u32::MAX - 2, &none, &none)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(overflow.app.uid, u32::MAX - 1);
        let other = _root.path().join("other-ws");
        let none_left = linked(_root.path(), "other", &other);
        assert!(claim_in(&claims, &none_left, &other, u32::MAX - 2, &none, &none).is_err());
    }

    #[test]
    fn a_real_host_account_is_held() {
        // root (0) is an account on every host; an id far above any is not.
        assert!(host_account_holds(0));
        assert!(process_runs_as(nix::unistd::geteuid().as_raw()));
    }
}
