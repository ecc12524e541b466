//! Broker configuration: settings only. Desktops come from a
//! [`desk_desktop::BackendFactory`] given to [`crate::Broker::open`].

use std::path::PathBuf;
use std::time::Duration;

use desk_contract::desktop::{LimitsMode, SandboxMode};
use desk_contract::{DisplaySize, SettlePolicy};
use desk_desktop::{ProfileSet, StateDir};
use desk_evidence::VerifyingKey;

use crate::artifact::ArtifactValidators;
use crate::fault::FaultHook;

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
    /// The memory, in MiB, the live sessions' estimates may add up to: a lease whose profile's
    /// estimate (its `[limits] memory_mib`, else 2 GiB) would take the sum over this is refused
    /// with `lease_conflict` and `Retry-After` (`health.rs`). `None`: no budget.
    pub memory_budget_mib: Option<u64>,
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
    /// Whether the factory's desktops get their resource limits; `Off` (`--unsafe-no-limits`)
    /// stamps every receipt and evidence record `"limits": "off"`.
    pub limits_mode: LimitsMode,
    /// The signed workspace policy every lease is checked against; `None`: the built-in
    /// default policy, signed at start with `<state_dir>/policy/policy.key` (see `policy.rs`).
    pub policy: Option<PolicyConfig>,
    /// What the watchdog enforces on every session (`watchdog.rs`).
    pub limits: SessionLimits,
    /// The program run as the reading child of workspace files (`artifact/read.rs`: it answers
    /// `__read-workspace-file` with [`crate::workspace_read_child`]); `deskbroker` sets itself.
    /// `None` (embeddings and tests over the fake backend): the checks run in the broker's own
    /// process, with its privileges.
    pub workspace_reader: Option<PathBuf>,
    /// What a saved attempt file must pass before a checkpoint accepts it, by format
    /// (`artifact.rs`). Default: the broker's structural checks
    /// ([`ArtifactValidators::structural`]); the `deskbroker` binary adds the scorer's DXF
    /// reader (desk-cad), which desk-broker does not link.
    pub validators: ArtifactValidators,
    /// Whether an observer runs for this broker (`deskbroker serve` starts one: its
    /// `observer.rs`): the high-risk hit-test (`approval.rs`) then judges input from the
    /// observer's signed view of the app (`observer/client.rs`) and refuses it when there is
    /// none. Default off: the worker's snapshot decides.
    pub observer: bool,
}

/// Limits the watchdog process enforces on every session besides its lease expiry; `None` is
/// unlimited. A session that reaches one is killed (`kill.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SessionLimits {
    /// Task time, counted from the handoff (the reset's first frame).
    pub max_task: Option<Duration>,
    /// Most actions refused before input (validation, forbidden chords) per session; the
    /// session is killed when its count reaches this.
    pub max_refused_actions: Option<u64>,
    /// Longest time since the handoff or the last action's end with no action in flight.
    pub idle_limit: Option<Duration>,
}

impl SessionLimits {
    /// These limits, each tightened to the signed workspace policy's where that is stricter:
    /// an operator's flags can only make a policy stricter, never looser.
    pub fn tightened_by(self, policy: &desk_policy::Limits) -> SessionLimits {
        fn min<T: Ord>(flag: Option<T>, policy: T) -> Option<T> {
            Some(match flag {
                Some(flag) => flag.min(policy),
                None => policy,
            })
        }
        SessionLimits {
            max_task: min(self.max_task, policy.max_task()),
            max_refused_actions: min(
                self.max_refused_actions,
                u64::from(policy.max_refused_actions),
            ),
            idle_limit: min(self.idle_limit, policy.idle()),
        }
    }
}

impl BrokerConfig {
    /// The layout of [`BrokerConfig::state_dir`].
    pub fn layout(&self) -> StateDir {
        StateDir::new(&self.state_dir)
    }

    /// Defaults: 1920x1080, 30 minute leases, reaper every 5 s, 8 sessions, no memory budget,
    /// 32 requests waiting
    /// per session, default profile `librecad`, default settle policy, fault hook from
    /// `DESKBROKER_FAULT`, no observer.
    pub fn new(state_dir: impl Into<PathBuf>, profiles: ProfileSet) -> BrokerConfig {
        BrokerConfig {
            state_dir: state_dir.into(),
            display: DisplaySize::FULL_HD,
            lease_ttl: Duration::from_secs(30 * 60),
            lease_grace: Duration::from_secs(30),
            reaper_interval: Duration::from_secs(5),
            max_sessions: 8,
            memory_budget_mib: None,
            session_queue: DEFAULT_SESSION_QUEUE,
            profiles,
            default_profile: "librecad".to_string(),
            settle: SettlePolicy::default(),
            fault: FaultHook::from_env(),
            auth: AuthConfig::default(),
            evidence: EvidenceConfig::default(),
            sandbox: SandboxMode::On,
            limits_mode: LimitsMode::Enforced,
            policy: None,
            limits: SessionLimits::default(),
            workspace_reader: None,
            validators: ArtifactValidators::structural(),
            observer: false,
        }
    }
}

/// Who may call the broker. Part of [`crate::BrokerConfig`].
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// Unix-socket peers with one of these uids are admitted. Default: the broker's own euid.
    pub allowed_uids: Vec<u32>,
    /// Verifies orchestration credentials presented over TCP; `None` admits TCP clients to the
    /// lease and metrics routes only with a verified client certificate.
    pub orchestrator_key: Option<VerifyingKey>,
    /// Verifies reviewer credentials (scope `review`) on the review routes, over any
    /// transport; `None`: nobody can review (`docs/screenshot-gate.md`).
    pub reviewer_key: Option<VerifyingKey>,
}

impl Default for AuthConfig {
    fn default() -> AuthConfig {
        AuthConfig {
            allowed_uids: vec![nix::unistd::geteuid().as_raw()],
            orchestrator_key: None,
            reviewer_key: None,
        }
    }
}

/// Which key signs the evidence. Part of [`BrokerConfig`].
#[derive(Debug, Clone, Default)]
pub struct EvidenceConfig {
    /// The Ed25519 signing key (PKCS#8 PEM, or a base64 32-byte seed). `None`: use
    /// `<state_dir>/evidence/signing.key`, created with mode 0600 on first start.
    pub signing_key: Option<PathBuf>,
}

/// A signed workspace policy and the key it must verify with (`serve --policy --policy-pub`).
/// Part of [`BrokerConfig`]: the bytes as read; the broker verifies them at start and checks
/// the validity window at every lease.
#[derive(Debug, Clone)]
pub struct PolicyConfig {
    /// The signed policy file's bytes (`deskbroker policy sign` writes it).
    pub signed: Vec<u8>,
    /// The policy key's public half; must not be the evidence key.
    pub public_key: VerifyingKey,
}
