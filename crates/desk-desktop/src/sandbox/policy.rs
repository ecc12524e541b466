//! The sandbox's shared vocabulary: the policy ([`SandboxPolicy`]), the record of a running
//! sandbox ([`Sandbox`]), the roles a process inside takes ([`Role`]) and the fixed paths inside
//! ([`SAFE_PATH`], [`INSIDE_RUN_DIR`]). `sandbox.rs` starts and enters sandboxes with them; the
//! workspace, the probe and the census read them without naming the starter.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::identity::Ids;

/// The first host uid (and gid) of the range a root broker gives its sessions (two per
/// session, see `identity.rs`): not the broker's, owns nothing on the host.
pub const DEFAULT_SANDBOX_UID: u32 = 61_234;

/// Where the worker socket and the X authority file live inside the sandbox (short, so the
/// socket path never depends on the state directory's length). With split identities only
/// the desktop uid can enter it (0700).
pub const INSIDE_RUN_DIR: &str = "/run/desk";

/// Whether and how a session's processes are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxPolicy {
    /// Processes run unsandboxed as the broker's user (`serve --unsafe-no-sandbox`).
    Off,
    /// One bubblewrap sandbox per session. A root broker's sessions take their uids from the
    /// range starting at `uid` (see `identity.rs`); otherwise every process runs as `uid`/`gid`
    /// (the broker's own).
    On {
        /// The first uid of the range (root broker), or the uid of every desktop process.
        uid: u32,
        /// Its gid.
        gid: u32,
    },
}

impl SandboxPolicy {
    /// The policy for `mode`: [`SandboxPolicy::default_for_this_process`] when on.
    pub fn for_mode(mode: desk_contract::desktop::SandboxMode) -> SandboxPolicy {
        match mode {
            desk_contract::desktop::SandboxMode::On => SandboxPolicy::default_for_this_process(),
            desk_contract::desktop::SandboxMode::Off => SandboxPolicy::Off,
        }
    }

    /// On: the dedicated uid for a root broker, the broker's own uid otherwise.
    pub fn default_for_this_process() -> SandboxPolicy {
        if nix::unistd::geteuid().is_root() {
            SandboxPolicy::On {
                uid: DEFAULT_SANDBOX_UID,
                gid: DEFAULT_SANDBOX_UID,
            }
        } else {
            SandboxPolicy::On {
                uid: nix::unistd::getuid().as_raw(),
                gid: nix::unistd::getgid().as_raw(),
            }
        }
    }
}

/// A running sandbox, as recorded in `desktop.json` so a restarted broker can enter it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// Host pid of the sandbox's first process (pid 1 inside), whose namespaces others enter.
    pub holder_pid: u32,
    /// Host uid of the desktop's processes (every process inside when `app` is `None`).
    pub uid: u32,
    /// Their host gid.
    pub gid: u32,
    /// The app's own host identity (a root broker: the sandbox has no user namespace and each
    /// process is dropped to its role's ids); `None`: one identity for all, in a user namespace.
    #[serde(default)]
    pub app: Option<Ids>,
    /// Whether processes drop from root to `uid` before entering (the broker is root).
    pub drop_root: bool,
    /// The workspace on the host, bound read-only at the same path inside.
    pub workspace: PathBuf,
    /// The host-backed paths inside that are writable: the policy's writable directories, the
    /// run directory and the operator's extra writable paths (see `workspace.rs`).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// The holder (the worker program, `deskbroker-worker`), at the same path inside; it also
    /// fills the app's home (`seed-home`). `None` in a record from before it was kept.
    #[serde(default)]
    pub holder: Option<PathBuf>,
}

/// The `PATH` every desktop process gets.
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Whose identity a process inside a sandbox takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Xvfb, the window manager, the buses.
    Desktop,
    /// The worker: the desktop's ids too; with split identities it starts as root and drops
    /// to them itself keeping `CAP_SYS_PTRACE` and `CAP_DAC_READ_SEARCH` alone
    /// (`deskbroker-worker --as UID:GID`), so its idle-aware settle can read the app's `/proc`
    /// across uids. The grant points one way:
    /// the app still cannot reach the worker.
    Worker,
    /// The app, and what writes its files (the home seeding).
    App,
}
