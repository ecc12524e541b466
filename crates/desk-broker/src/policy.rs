//! The workspace policy in force (`desk-policy`): verified once when the broker opens, checked
//! at every lease, and recorded per session.
//!
//! With `serve --policy SIGNED --policy-pub PUB` the broker verifies that file; without, it
//! signs the built-in default policy (the profiles it serves, no network, no clipboard) at
//! every start with its own policy key, `<state_dir>/policy/policy.key` (0600, created at first
//! start beside `policy.pub`), and writes the result to `default.signed.json` for operators to
//! inspect. Either way the policy key must not be the evidence key: the broker refuses to start.
//!
//! Invariants: a lease is granted only under a policy whose signature verified, whose payload
//! passed every lint rule, whose validity window holds the lease's time, which states nothing
//! this broker cannot enforce (a network allowlist: the sandbox is loopback-only), and which
//! allows the profile; otherwise nothing is leased (`policy_invalid`, `profile_not_allowed`).
//! The digest a session was leased under is stored before its lease answer is sent.

use std::path::{Path, PathBuf};

use desk_evidence::{SigningKey, VerifyingKey};
use desk_policy::{Network, VerifiedPolicy};
use rusqlite::{OptionalExtension as _, params};

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::store::Store;

/// The broker's policy signing key inside [`policy_dir`].
pub const POLICY_KEY_FILE: &str = "policy.key";
/// Its public key: what `deskbroker policy verify --pub` takes for the default policy.
pub const POLICY_PUBLIC_KEY_FILE: &str = "policy.pub";
/// The signed built-in default policy, rewritten at every start without `--policy`.
pub const DEFAULT_POLICY_FILE: &str = "default.signed.json";

/// `<state_dir>/policy`.
pub fn policy_dir(state_dir: &Path) -> PathBuf {
    desk_desktop::StateDir::new(state_dir).policy()
}

/// The policy the broker opened with: verified, or why not (every lease is then refused).
pub(crate) struct PolicyInForce {
    verified: Result<VerifiedPolicy, String>,
}

fn key_error(operation: &'static str) -> impl FnOnce(desk_evidence::EvidenceError) -> BrokerError {
    move |source| BrokerError::Evidence {
        operation,
        source: Box::new(source),
    }
}

fn policy_error(error: desk_policy::PolicyError) -> BrokerError {
    BrokerError::PolicyInvalid(error.to_string())
}

impl PolicyInForce {
    /// The verified policy's clipboard mode; `None` when it was refused.
    pub(crate) fn clipboard_mode(&self) -> Option<desk_policy::ClipboardMode> {
        self.verified
            .as_ref()
            .ok()
            .map(|policy| policy.policy().clipboard_mode())
    }

    /// What release does with frames: the verified policy's `retention.frames`; deleted at
    /// release when the policy was refused (no session is leased then anyway).
    pub(crate) fn frame_retention(&self) -> desk_policy::FrameRetention {
        self.verified
            .as_ref()
            .map_or(desk_policy::FrameRetention::DeleteAtRelease, |policy| {
                policy.policy().frame_retention()
            })
    }

    /// The verified policy's writable directories, relative to the workspace (its lint admits
    /// only the attempt directory or directories below it; the desktop's factory binds them);
    /// `None` when it was refused (every lease is then refused).
    pub(crate) fn writable(&self) -> Option<Vec<std::path::PathBuf>> {
        let policy = self.verified.as_ref().ok()?;
        let dirs = policy.policy().writable_directories();
        (!dirs.is_empty()).then(|| dirs.iter().map(std::path::PathBuf::from).collect())
    }

    /// The screenshot gate of the verified policy (off without `screenshot_gate`, or when the
    /// policy was refused: every lease is then refused). Settings the lint passed but desk-gate
    /// refuses (they compile the same patterns, so never) stop the broker from opening.
    pub(crate) fn shot_gates(&self) -> Result<crate::shot_gate::ShotGates, BrokerError> {
        let Ok(verified) = self.verified.as_ref() else {
            return Ok(crate::shot_gate::ShotGates::off());
        };
        match verified.policy().screenshot_gate() {
            None => Ok(crate::shot_gate::ShotGates::off()),
            Some(settings) => {
                let gate =
                    |error: desk_gate::GateError| BrokerError::PolicyInvalid(error.to_string());
                let mut policy =
                    desk_gate::GatePolicy::new(settings, verified.sha256()).map_err(gate)?;
                if let Some(classifier) = verified.policy().screenshot_gate_classifier() {
                    policy = policy.with_classifier(classifier).map_err(gate)?;
                }
                crate::shot_gate::ShotGates::new(policy)
            }
        }
    }

    /// The verified policy's approvals (`None` without the section, or when the policy was
    /// refused: then nothing is leased anyway).
    pub(crate) fn approvals(&self) -> Result<Option<desk_policy::Approvals>, BrokerError> {
        let Ok(verified) = self.verified.as_ref() else {
            return Ok(None);
        };
        verified.policy().approvals().map_err(policy_error)
    }

    /// The verified policy's limits; `None` when it was refused (every lease is then refused).
    pub(crate) fn limits(&self) -> Option<desk_policy::Limits> {
        self.verified
            .as_ref()
            .ok()
            .map(|policy| policy.policy().limits())
    }
}

/// Loads the policy in force. Blocking; called by `Broker::open` after the evidence key.
pub(crate) fn load(config: &BrokerConfig) -> Result<PolicyInForce, BrokerError> {
    let evidence_public = VerifyingKey::read(&crate::evidence::public_key_path(&config.state_dir))
        .map_err(key_error("read the evidence public key"))?;
    let (signed, public_key) = match &config.policy {
        Some(configured) => (configured.signed.clone(), configured.public_key),
        None => match sign_default(config) {
            Ok(signed) => signed,
            // A broker without profiles has no default policy to sign: it opens, and every
            // lease is refused with the reason, like under any refused policy.
            Err(BrokerError::PolicyInvalid(reason)) => {
                tracing::error!(%reason, "no default workspace policy: every lease will be refused");
                return Ok(PolicyInForce {
                    verified: Err(reason),
                });
            }
            Err(error) => return Err(error),
        },
    };
    desk_policy::check_distinct(&public_key, &evidence_public).map_err(policy_error)?;
    let verified = desk_policy::verify_signature(&signed, &public_key).map_err(|error| {
        tracing::error!(%error, "the workspace policy is refused: every lease will be refused");
        error.to_string()
    });
    if let Ok(policy) = &verified {
        tracing::info!(
            policy_sha256 = policy.sha256(),
            policy_version = policy.policy().policy_version(),
            signer = policy.signer_fingerprint(),
            "workspace policy loaded"
        );
    }
    Ok(PolicyInForce { verified })
}

/// The signed policy the watchdog enforces, read and verified by the watchdog itself: the
/// operator's (`configured`, what `serve --policy --policy-pub` names) or, without one, the
/// broker's signed default (`<state_dir>/policy/default.signed.json` with `policy.pub`). The
/// policy key must not be the evidence key.
pub(crate) fn watchdog_policy(
    state_dir: &Path,
    configured: Option<&crate::config::PolicyConfig>,
) -> Result<VerifiedPolicy, BrokerError> {
    let (signed, public_key) = match configured {
        Some(configured) => (configured.signed.clone(), configured.public_key),
        None => {
            let directory = policy_dir(state_dir);
            let signed_path = directory.join(DEFAULT_POLICY_FILE);
            let signed = desk_policy::read_file(&signed_path, desk_policy::MAX_SIGNED_BYTES)
                .map_err(policy_error)?;
            let public = VerifyingKey::read(&directory.join(POLICY_PUBLIC_KEY_FILE))
                .map_err(key_error("read the policy public key"))?;
            (signed, public)
        }
    };
    let evidence_public = VerifyingKey::read(&crate::evidence::public_key_path(state_dir))
        .map_err(key_error("read the evidence public key"))?;
    desk_policy::check_distinct(&public_key, &evidence_public).map_err(policy_error)?;
    desk_policy::verify_signature(&signed, &public_key).map_err(policy_error)
}

/// Signs the built-in default policy with the broker's policy key (created at first start).
fn sign_default(config: &BrokerConfig) -> Result<(Vec<u8>, VerifyingKey), BrokerError> {
    let directory = policy_dir(&config.state_dir);
    crate::private::ensure_private_dir(&directory, crate::private::DirUse::State)?;
    let key_path = directory.join(POLICY_KEY_FILE);
    let key = if key_path.exists() {
        SigningKey::read(&key_path).map_err(key_error("read the policy key"))?
    } else {
        let key = SigningKey::generate().map_err(key_error("create the policy key"))?;
        key.write(&key_path)
            .map_err(key_error("create the policy key"))?;
        tracing::info!(path = %key_path.display(), "created the workspace policy key");
        key
    };
    let public = key.verifying_key();
    let public_path = directory.join(POLICY_PUBLIC_KEY_FILE);
    if !public_path.exists() {
        public
            .write(&public_path)
            .map_err(key_error("write the policy public key"))?;
    }
    let policy = desk_policy::default_policy(&config.profiles.names()).map_err(policy_error)?;
    let signed = desk_policy::sign(&policy, &key)
        .and_then(|envelope| {
            envelope
                .canonical_bytes()
                .map_err(|error| desk_policy::PolicyError::Encode(error.to_string()))
        })
        .map_err(policy_error)?;
    write_private(&directory.join(DEFAULT_POLICY_FILE), &signed)?;
    Ok((signed, public))
}

/// Replaces `path` with `bytes` (0600) through a temporary file and a rename.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), BrokerError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let staging = path.with_extension("tmp");
    let _ = std::fs::remove_file(&staging);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staging)
        .map_err(BrokerError::io("write the default policy", &staging))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(BrokerError::io("write the default policy", &staging))?;
    std::fs::rename(&staging, path).map_err(BrokerError::io("write the default policy", path))
}

impl PolicyInForce {
    /// The policy a lease of `profile` at `now_unix` is granted under, or the refusal.
    pub(crate) fn for_lease(
        &self,
        profile: &str,
        now_unix: i64,
    ) -> Result<&VerifiedPolicy, BrokerError> {
        let verified = self
            .verified
            .as_ref()
            .map_err(|reason| BrokerError::PolicyInvalid(reason.clone()))?;
        verified.check_validity(now_unix).map_err(policy_error)?;
        if let Network::Allowlist(_) = verified.policy().network() {
            return Err(BrokerError::PolicyInvalid(
                "network allowlist not enforceable by this sandbox: its network is loopback \
                 only; use network mode none"
                    .to_string(),
            ));
        }
        if !verified.policy().allows_profile(profile) {
            return Err(BrokerError::ProfileNotAllowed(format!(
                "the workspace policy does not allow profile {profile:?}; it allows {:?}",
                verified.policy().allowed_profiles()
            )));
        }
        Ok(verified)
    }
}

impl Store {
    /// Records the policy `session_id` is leased under (before its session row).
    pub(crate) fn record_session_policy(
        &self,
        session_id: &SessionId,
        policy_sha256: &str,
    ) -> Result<(), BrokerError> {
        self.lock()
            .execute(
                "INSERT OR REPLACE INTO session_policies (session_id, policy_sha256) \
                 VALUES (?1, ?2)",
                params![session_id, policy_sha256],
            )
            .map_err(BrokerError::store("record the session's policy"))?;
        Ok(())
    }

    /// The policy `session_id` was leased under; `None` for sessions of older brokers.
    pub(crate) fn session_policy(
        &self,
        session_id: &SessionId,
    ) -> Result<Option<String>, BrokerError> {
        self.lock()
            .query_row(
                "SELECT policy_sha256 FROM session_policies WHERE session_id = ?1",
                [session_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(BrokerError::store("read the session's policy"))
    }
}

/// Seconds since the Unix epoch, for the validity window.
pub(crate) fn now_unix() -> i64 {
    i64::try_from(crate::util::now_ms() / 1000).unwrap_or(i64::MAX)
}
