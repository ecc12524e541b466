//! Broker configuration and the [`BackendFactory`] through which the binary injects desktops.

use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_contract::desktop::SandboxMode;
use desk_contract::{DisplaySize, SettlePolicy};
use desk_desktop::{BackendError, DesktopBackend, ProfileSet};

use crate::auth::AuthConfig;
use crate::evidence::EvidenceConfig;
use crate::fault::FaultHook;

/// What a factory needs to create one session's desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendRequest {
    /// The session the desktop belongs to.
    pub session_id: String,
    /// `<state_dir>/sessions/<id>`; exists when the factory is called.
    pub session_dir: PathBuf,
    /// The display size to create.
    pub display: DisplaySize,
    /// The app profile's read-only paths, shown inside the desktop's sandbox.
    pub read_only: Vec<PathBuf>,
}

/// Creates one desktop per session, on the session's first reset, and adopts surviving desktops
/// when a broker restarts. Called on a blocking thread, so it may launch processes and wait for
/// them.
pub trait BackendFactory: Send + Sync + 'static {
    /// Creates the desktop for `request`.
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError>;

    /// Adopts the desktop a previous broker run left running for `request`'s session, so the
    /// session continues across a broker restart (crash or upgrade). Called by
    /// [`crate::Broker::open`] for every unreleased session that had no action in flight.
    ///
    /// `Ok(None)`: no desktop was ever created for the session. `Err`: one existed but cannot be
    /// adopted (a process died, the worker does not answer, the display differs); the broker then
    /// reaps it with [`BackendFactory::reap_orphans`] and the session fails with
    /// `desktop_failed`. Must not kill anything itself. The default adopts nothing.
    fn reattach(
        &self,
        _request: &BackendRequest,
    ) -> Result<Option<Box<dyn DesktopBackend>>, BackendError> {
        Ok(None)
    }

    /// Whether this factory can create a desktop on this machine at all, asked before a new
    /// lease is granted (a sandboxing factory checks that the kernel allows its sandbox:
    /// [`BackendError::SandboxUnavailable`] otherwise). Called on a blocking thread. The
    /// default can always create.
    fn check_available(&self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Kills whatever a previous broker run left running for the session whose directory is
    /// `session_dir` (its desktop was not reattached). Returns how many processes were found.
    /// Called at startup for every unreleased session that is not reattached and for every
    /// session directory the store does not know as unreleased, and on release when the
    /// session has no live desktop. The default finds nothing.
    fn reap_orphans(&self, _session_dir: &Path) -> usize {
        0
    }
}

impl<F> BackendFactory for F
where
    F: Fn(&BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> + Send + Sync + 'static,
{
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> {
        self(request)
    }
}

/// The default of [`BrokerConfig::session_queue`].
pub const DEFAULT_SESSION_QUEUE: usize = 32;

/// Broker settings. Build with [`BrokerConfig::new`] and adjust the public fields.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Holds `broker.sqlite3` and `sessions/<id>/`.
    pub state_dir: PathBuf,
    /// Display size passed to the factory; actions are validated against the backend's size.
    pub display: DisplaySize,
    /// Lease time to live; renewed by reset, screenshot, action and checkpoint.
    pub lease_ttl: Duration,
    /// How long past its lease expiry a sandboxed desktop stops by itself when no broker
    /// released it (the broker that renews the lease is gone): the sandbox's first process
    /// enforces expiry plus this grace, outside the broker.
    pub lease_grace: Duration,
    /// How often the reaper releases expired leases.
    pub reaper_interval: Duration,
    /// Most sessions not yet released at once.
    pub max_sessions: usize,
    /// Most requests that may wait for one session while another of its requests runs; the
    /// next one is refused with `session_busy` (see `admission.rs`).
    pub session_queue: usize,
    /// Profiles offered to leases.
    pub profiles: ProfileSet,
    /// Profile used when a lease names none.
    pub default_profile: String,
    /// Settle timing passed to every `execute`.
    pub settle: SettlePolicy,
    /// Test-only crash injection; [`FaultHook::from_env`] by default.
    pub fault: FaultHook,
    /// Who may call the broker.
    pub auth: AuthConfig,
    /// Signed evidence settings.
    pub evidence: EvidenceConfig,
    /// Whether the factory's desktops run sandboxed; `Off` stamps every receipt and evidence
    /// record `"sandbox": "off"` (`serve --unsafe-no-sandbox`, the fake backend).
    pub sandbox: SandboxMode,
}

impl BrokerConfig {
    /// Defaults: 1920x1080, 30 minute leases, reaper every 5 s, 8 sessions, 32 requests waiting
    /// per session, default profile `librecad`, default settle policy, fault hook from
    /// `DESKBROKER_FAULT`.
    pub fn new(state_dir: impl Into<PathBuf>, profiles: ProfileSet) -> BrokerConfig {
        BrokerConfig {
            state_dir: state_dir.into(),
            display: DisplaySize::FULL_HD,
            lease_ttl: Duration::from_secs(30 * 60),
            lease_grace: Duration::from_secs(30),
            reaper_interval: Duration::from_secs(5),
            max_sessions: 8,
            session_queue: DEFAULT_SESSION_QUEUE,
            profiles,
            default_profile: "librecad".to_string(),
            settle: SettlePolicy::default(),
            fault: FaultHook::from_env(),
            auth: AuthConfig::default(),
            evidence: EvidenceConfig::default(),
            sandbox: SandboxMode::On,
        }
    }
}
