//! `deskbroker watchdog` (the process `serve` starts beside itself), `deskbroker kill` (the
//! operator's kill switch on the broker host) and the limit flags of `serve`.
//!
//! `kill` acts on the state directory directly, with or without a running broker: it takes the
//! same path as the watchdog (`desk_broker::kill::kill_session`). A running broker refuses the
//! session's token at once (its tombstone) and marks it `killed` on its reconciler's next tick;
//! a stopped one does so when it starts.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use desk_broker::SessionLimits;
use desk_broker::kill::{KillOutcome, KillSource, kill_session};
use desk_broker::watchdog::{WatchdogConfig, WatchdogIdentity, run_watchdog};
use desk_desktop::StateDir;

use crate::paths::default_state_dir;

/// The limits the watchdog enforces; all unlimited by default.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct LimitArgs {
    /// Kill a session this many minutes after its handoff (decimals allowed, e.g. 0.5).
    #[arg(long, value_parser = parse_minutes)]
    pub(crate) max_task_minutes: Option<f64>,
    /// Kill a session once this many of its actions were refused before input.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_refused_actions: Option<u64>,
    /// Kill a session idle (no action in flight, none ended) this many seconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) idle_limit_secs: Option<u64>,
}

fn parse_minutes(text: &str) -> Result<f64, String> {
    let minutes: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of minutes"))?;
    if !minutes.is_finite() || minutes <= 0.0 || minutes > 1.0e6 {
        return Err(format!(
            "{text:?} must be a number of minutes above 0 and at most 1000000"
        ));
    }
    Ok(minutes)
}

impl LimitArgs {
    pub(crate) fn limits(&self) -> SessionLimits {
        SessionLimits {
            max_task: self
                .max_task_minutes
                .map(|minutes| Duration::from_secs_f64(minutes * 60.0)),
            max_refused_actions: self.max_refused_actions,
            idle_limit: self.idle_limit_secs.map(Duration::from_secs),
        }
    }
}

/// `limits` as `watchdog` arguments.
fn limit_args(limits: &SessionLimits) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(max_task) = limits.max_task {
        let minutes = max_task.as_secs_f64() / 60.0;
        args.extend(["--max-task-minutes".to_string(), minutes.to_string()]);
    }
    if let Some(count) = limits.max_refused_actions {
        args.extend(["--max-refused-actions".to_string(), count.to_string()]);
    }
    if let Some(idle) = limits.idle_limit {
        args.extend(["--idle-limit-secs".to_string(), idle.as_secs().to_string()]);
    }
    args
}

#[derive(Debug, Args)]
pub(crate) struct WatchdogArgs {
    /// The broker's state directory.
    #[arg(long, env = "DESKBROKER_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    /// Seconds past its lease expiry after which a session no broker released is killed.
    #[arg(long, default_value_t = 30)]
    pub(crate) lease_grace_secs: u64,
    /// Exit once this broker process is gone and no session is live.
    #[arg(long)]
    pub(crate) broker_pid: Option<u32>,
    /// The signed workspace policy whose limits the watchdog verifies and enforces (the
    /// flags above can only tighten them); needs --policy-pub. Without it: the broker's
    /// signed default, <state_dir>/policy/default.signed.json with policy.pub.
    #[arg(long, requires = "policy_pub", value_name = "SIGNED")]
    pub(crate) policy: Option<PathBuf>,
    /// The public key --policy must verify with; never the evidence key.
    #[arg(long, requires = "policy", value_name = "PUB")]
    pub(crate) policy_pub: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct KillArgs {
    /// The session to kill.
    pub(crate) session_id: String,
    /// Why (signed into the terminal receipt).
    #[arg(long)]
    pub(crate) reason: String,
    /// The broker's state directory.
    #[arg(long, env = "DESKBROKER_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ReadbackArgs {
    /// The broker's state directory.
    #[arg(long, env = "DESKBROKER_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// The watchdog's public key the answer must verify with (default:
    /// `<state_dir>.watchdog/watchdog.pub`; never the broker's evidence key).
    #[arg(long)]
    pub(crate) public_key: Option<PathBuf>,
}

/// `deskbroker readback`: prints the watchdog's verified answer as JSON.
pub(crate) fn readback(args: ReadbackArgs) -> Result<()> {
    let state_dir = args.state_dir.unwrap_or_else(default_state_dir);
    let key_path = args
        .public_key
        .unwrap_or_else(|| desk_broker::watchdog::key::public_key_path(&state_dir));
    let key = desk_evidence::VerifyingKey::read(&key_path)
        .with_context(|| format!("failed to read the public key {}", key_path.display()))?;
    let nonce = desk_broker::watchdog::readback::fresh_nonce()?;
    let answer = desk_broker::watchdog::readback::query(&state_dir, &nonce, &key)?;
    outln!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(())
}

/// `deskbroker watchdog`: as root, first drops to a uid of its own ([`own_identity`]).
pub(crate) fn watchdog(args: WatchdogArgs) -> Result<()> {
    desk_broker::restrict_umask();
    let state_dir = args.state_dir.unwrap_or_else(default_state_dir);
    let identity = own_identity(&state_dir)?;
    let config = WatchdogConfig {
        state_dir,
        limits: args.limits.limits(),
        policy: crate::local::read_policy(args.policy.as_deref(), args.policy_pub.as_deref())?,
        lease_grace: Duration::from_secs(args.lease_grace_secs),
        broker_pid: args.broker_pid,
        interval: Duration::from_millis(200),
        identity,
    };
    run_watchdog(&config).context("watchdog failed")
}

/// What the watchdog keeps of root's capabilities once on its own uid (measured with
/// `tests/it/watchdog_uid.rs` and the kill tests): `CAP_KILL` to SIGKILL the sessions'
/// processes (other uids); `CAP_SYS_PTRACE` for the census's ptrace-mode reads of their
/// `/proc/<pid>/exe`, `ns/pid` and `root`; `CAP_DAC_OVERRIDE` to read the broker's state
/// directory (root's, 0700: the store, `refused_actions`, the session directories) and to
/// write what a kill writes there (tombstones and kill locks, the workspace record, the kept
/// input logs, the cgroup's `cgroup.kill`) and remove the session's workspace and directory,
/// which belong to root and the session's uids.
const WATCHDOG_KEPT: rustix::thread::CapabilitySet = rustix::thread::CapabilitySet::KILL
    .union(rustix::thread::CapabilitySet::SYS_PTRACE)
    .union(rustix::thread::CapabilitySet::DAC_OVERRIDE);

/// Under a root broker, moves the watchdog to a uid/gid of its own before anything else
/// (single-threaded): claims it (`desk_desktop::sandbox::identity::watchdog`: a reserved id no
/// host account holds), makes `<state_dir>.watchdog/` (0700) and everything in it that uid's
/// (the key 0600), then drops to it with no supplementary group, [`WATCHDOG_KEPT`] alone and
/// `NoNewPrivs` (`drop_ids.rs`, the worker's drop). Not root: the broker's uid, `shared`.
fn own_identity(state_dir: &std::path::Path) -> Result<WatchdogIdentity> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(WatchdogIdentity::Shared);
    }
    crate::own_uid::move_to_own_uid(
        "watchdog",
        &desk_broker::watchdog::key::watchdog_dir(state_dir),
        desk_broker::watchdog::key::WATCHDOG_KEY_FILE,
        desk_desktop::sandbox::identity::watchdog::claim_watchdog,
        WATCHDOG_KEPT,
    )?;
    Ok(WatchdogIdentity::Own)
}

/// `deskbroker kill`: prints the outcome as JSON.
pub(crate) fn kill(args: KillArgs) -> Result<()> {
    desk_broker::restrict_umask();
    let state_dir = args.state_dir.unwrap_or_else(default_state_dir);
    let key = desk_broker::kill::Signer::evidence(&state_dir, None)?;
    // Not a session id at all: no such session, as for any unknown id.
    let session_id = desk_broker::SessionId::parse(&args.session_id)
        .map_err(|_| desk_broker::BrokerError::NotFound("session".to_string()))?;
    let outcome = kill_session(
        &StateDir::new(&state_dir),
        &key,
        &session_id,
        &args.reason,
        &KillSource::Operator,
    )?;
    let answer = match outcome {
        KillOutcome::Killed(receipt) => serde_json::json!({
            "session_id": args.session_id,
            "state": "killed",
            "killed_now": true,
            "receipt": receipt_json(&receipt),
        }),
        KillOutcome::AlreadyKilled(tombstone) => serde_json::json!({
            "session_id": args.session_id,
            "state": "killed",
            "killed_now": false,
            "reason": tombstone.reason,
            "record_id": tombstone.record_id,
        }),
    };
    outln!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(())
}

fn receipt_json(receipt: &desk_evidence::record::SessionKilled) -> serde_json::Value {
    serde_json::to_value(receipt).unwrap_or(serde_json::Value::Null)
}

/// Starts `deskbroker watchdog` for `state_dir` with the operator's limit `flags` and policy
/// files (the watchdog verifies the policy and takes its limits from it itself) in its own
/// process group, so it outlives this
/// broker (a SIGKILL, a SIGSTOP, a terminal's ^C); its output goes to
/// `<state_dir>/watchdog.log`. A watchdog already running there is replaced.
pub(crate) fn spawn_watchdog(
    config: &desk_broker::BrokerConfig,
    flags: &SessionLimits,
    policy_files: Option<(&std::path::Path, &std::path::Path)>,
) -> Result<()> {
    let state_dir = &config.state_dir;
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe().context("failed to locate the deskbroker executable")?;
    let log_path = StateDir::new(state_dir).watchdog_log();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("failed to open {}", log_path.display()))?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("watchdog")
        .arg("--state-dir")
        .arg(state_dir)
        .args(limit_args(flags))
        .args([
            "--lease-grace-secs",
            &config.lease_grace.as_secs().to_string(),
        ])
        .args(["--broker-pid", &std::process::id().to_string()]);
    if let Some((signed, public)) = policy_files {
        command
            .arg("--policy")
            .arg(signed)
            .arg("--policy-pub")
            .arg(public);
    }
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0);
    let mut child = command.spawn().context("failed to start the watchdog")?;
    tracing::info!(pid = child.id(), "watchdog started");
    // Reaped when it exits, so it never lingers as a zombie of this broker.
    std::thread::spawn(move || child.wait());
    Ok(())
}
