//! The on-disk layout of a broker's state directory and of each session in it. This is the one
//! home of every path below `<state_dir>`: the broker, the launcher, the evidence writer and the
//! load tool ask these two types and never join a file name themselves.
//!
//! ```text
//! <state_dir>/                    StateDir (0700)
//!   broker.sqlite3                the session store and action journal
//!   sessions/<id>/                SessionDir (0700), removed at release
//!     processes.json desktop.json what the launcher started (reattach, reap)
//!     <role>.log                  each desktop process's output (xvfb, window-manager, app, ...)
//!     workspace                   the sandbox's workspace (a link to an out-of-tree directory
//!                                 under a root broker): host/, home/, attempt/, run/
//!                                 (see `sandbox::workspace`)
//!     events.json                 the raw input log
//!     frame_events.json           the frame-aligned input log
//!     frame_events.pending        input of frameless actions, until the next frame
//!     frames/<sequence>.png       action frames (a replay re-reads them)
//!     checkpoint/<name>           the last checkpointed artifact
//!     refused_actions             how many of the session's actions were refused (watchdog)
//!   evidence/                     signing.key, evidence.pub
//!   policy/                       policy.key, policy.pub, default.signed.json (no --policy)
//!     <id>/                       the signed journal (survives release), frames and artifact
//!                                 (deleted at release: attempt data)
//!   kills/<id>.json               a killed session's tombstone: its lease stays revoked
//!   spool/terminal.ndjson         signed terminal receipts, replayed into the evidence
//!   workspaces/<id>.json          a workspace's durable state (launching ... destroyed)
//!   watchdog.lock, watchdog.log   held by the running watchdog process (its pid inside); its log
//! ```

use std::path::{Path, PathBuf};

/// A broker's state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir(PathBuf);

impl StateDir {
    /// The state directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> StateDir {
        StateDir(root.into())
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The SQLite store.
    pub fn database(&self) -> PathBuf {
        self.0.join("broker.sqlite3")
    }

    /// The parent of every session directory.
    pub fn sessions(&self) -> PathBuf {
        self.0.join("sessions")
    }

    /// The directory of session `id`.
    pub fn session(&self, id: &str) -> SessionDir {
        SessionDir(self.sessions().join(id))
    }

    /// The evidence key pair and every session's evidence.
    pub fn evidence(&self) -> PathBuf {
        self.0.join("evidence")
    }

    /// The broker's own workspace policy key pair and the signed default policy (0700).
    pub fn policy(&self) -> PathBuf {
        self.0.join("policy")
    }

    /// The evidence of session `id` (kept after release).
    pub fn session_evidence(&self, id: &str) -> PathBuf {
        self.evidence().join(id)
    }

    /// The tombstones of killed sessions.
    pub fn kills(&self) -> PathBuf {
        self.0.join("kills")
    }

    /// The tombstone of session `id`, written before its workspace is destroyed.
    pub fn kill_record(&self, id: &str) -> PathBuf {
        self.kills().join(format!("{id}.json"))
    }

    /// The lock a kill of session `id` holds from before its tombstone until its receipt is
    /// spooled; free with a tombstone and no receipt means the killer died or failed.
    pub fn kill_lock(&self, id: &str) -> PathBuf {
        self.kills().join(format!("{id}.lock"))
    }

    /// The fence of session `id`: held shared by the broker while it writes an action's
    /// records, taken exclusively by a kill for at most a bounded wait (`desk-broker`'s
    /// `kill/lock.rs`).
    pub fn kill_fence(&self, id: &str) -> PathBuf {
        self.kills().join(format!("{id}.fence"))
    }

    /// The append-only spool of signed terminal receipts.
    pub fn spool(&self) -> PathBuf {
        self.0.join("spool").join("terminal.ndjson")
    }

    /// The durable workspace states.
    pub fn workspaces(&self) -> PathBuf {
        self.0.join("workspaces")
    }

    /// The durable state of session `id`'s workspace.
    pub fn workspace_state(&self, id: &str) -> PathBuf {
        self.workspaces().join(format!("{id}.json"))
    }

    /// The watchdog process's log.
    pub fn watchdog_log(&self) -> PathBuf {
        self.0.join("watchdog.log")
    }

    /// The lock the running watchdog holds.
    pub fn watchdog_lock(&self) -> PathBuf {
        self.0.join("watchdog.lock")
    }
}

/// One session's directory, `<state_dir>/sessions/<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionDir(PathBuf);

impl SessionDir {
    /// The session directory at `path` (as recorded in the store).
    pub fn at(path: impl Into<PathBuf>) -> SessionDir {
        SessionDir(path.into())
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The state directory this session belongs to (`<state_dir>/sessions/<id>`).
    pub fn state_dir(&self) -> Option<&Path> {
        self.0.parent().and_then(Path::parent)
    }

    /// The processes the launcher started, with their start times.
    pub fn processes_file(&self) -> PathBuf {
        self.0.join("processes.json")
    }

    /// What the census of the session's sandbox allows beyond the desktop's own processes
    /// (`census::CensusRules`, written at reset).
    pub fn census_file(&self) -> PathBuf {
        self.0.join("census.json")
    }

    /// The remote worker a session's desktop is on (`remote`: its endpoint and instance id),
    /// for a restarted broker to reconnect to the same one.
    pub fn remote_worker_file(&self) -> PathBuf {
        self.0.join("remote-worker.json")
    }

    /// The desktop's display and sandbox record.
    pub fn desktop_file(&self) -> PathBuf {
        self.0.join("desktop.json")
    }

    /// The output of the desktop process `role` (`xvfb`, `window-manager`, `app`, `worker`,
    /// `sandbox`).
    pub fn log_file(&self, role: &str) -> PathBuf {
        self.0.join(format!("{role}.log"))
    }

    /// The workspace: a directory, or under a root broker a link to one the sandbox uid can
    /// reach.
    pub fn workspace(&self) -> PathBuf {
        self.0.join("workspace")
    }

    /// The raw input log.
    pub fn events_file(&self) -> PathBuf {
        self.0.join(desk_contract::events::EVENTS_FILE)
    }

    /// The frame-aligned input log.
    pub fn frame_events_file(&self) -> PathBuf {
        self.0.join(desk_contract::events::FRAME_EVENTS_FILE)
    }

    /// Input rows of actions that produced no frame, waiting for the next frame's
    /// `frame_events.json` row.
    pub fn pending_frame_events_file(&self) -> PathBuf {
        self.0.join("frame_events.pending")
    }

    /// The frame of screenshot `sequence` handed out by an action.
    pub fn frame_file(&self, sequence: u64) -> PathBuf {
        self.0.join("frames").join(format!("{sequence:08}.png"))
    }

    /// How many of the session's actions were refused before input (a decimal count).
    pub fn refused_actions_file(&self) -> PathBuf {
        self.0.join("refused_actions")
    }

    /// The control session's durable state (owner, mode, generation, target revision,
    /// stopped), so that a restarted broker never resurrects a stopped generation.
    pub fn control_file(&self) -> PathBuf {
        self.0.join("control.json")
    }

    /// The session's control groups and limits (`sandbox::cgroup`), removed at destroy.
    pub fn cgroup_file(&self) -> PathBuf {
        self.0.join("cgroup.json")
    }

    /// The session's host identities (`sandbox::identity`: the desktop's and the app's uid).
    pub fn identity_file(&self) -> PathBuf {
        self.0.join("identity.json")
    }

    /// The last checkpointed artifact named `name`.
    pub fn checkpoint_file(&self, name: &str) -> PathBuf {
        self.0.join("checkpoint").join(name)
    }
}

impl AsRef<Path> for SessionDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<PathBuf> for SessionDir {
    fn from(path: PathBuf) -> SessionDir {
        SessionDir(path)
    }
}

impl From<&Path> for SessionDir {
    fn from(path: &Path) -> SessionDir {
        SessionDir(path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_is_below_its_directory() {
        let state = StateDir::new("/state");
        let session = state.session("s_1");
        assert_eq!(session.path(), Path::new("/state/sessions/s_1"));
        assert_eq!(state.database(), Path::new("/state/broker.sqlite3"));
        assert_eq!(
            state.session_evidence("s_1"),
            Path::new("/state/evidence/s_1")
        );
        for path in [
            session.processes_file(),
            session.desktop_file(),
            session.log_file("xvfb"),
            session.workspace(),
            session.events_file(),
            session.frame_events_file(),
            session.pending_frame_events_file(),
            session.frame_file(7),
            session.checkpoint_file("attempt.dxf"),
            session.refused_actions_file(),
            session.identity_file(),
        ] {
            assert!(path.starts_with(session.path()), "{}", path.display());
        }
        assert_eq!(
            session.frame_file(7),
            Path::new("/state/sessions/s_1/frames/00000007.png")
        );
    }
}
