//! `deskbroker observer` (containment G001; the process `serve` starts beside itself, like the
//! watchdog): signs what it saw of a session, on `<state_dir>/observer.sock`, for the broker's
//! uid alone. The loop is `desk_broker::observer::serve`; this file gives it its own identity
//! and starts it. See `docs/observer.md`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use desk_broker::observer::key::{OBSERVER_KEY_FILE, observer_dir};
use desk_broker::observer::serve::{ObserverConfig, run_observer};
use desk_desktop::StateDir;

use crate::paths::default_state_dir;

#[derive(Debug, Args)]
pub(crate) struct ObserverArgs {
    /// The broker's state directory.
    #[arg(long, env = "DESKBROKER_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// Exit once this broker process is gone.
    #[arg(long)]
    pub(crate) broker_pid: Option<u32>,
}

/// What the observer keeps of root's capabilities once on its own uid: `CAP_DAC_OVERRIDE`
/// alone, to read the broker's state directory (root's, 0700: the session directories, their
/// frames and process records) and to reach the session's bus sockets below its workspace
/// (the desktop uid's directories). The buses admit every uid that reaches their sockets
/// (`desk_desktop::sandbox::host`, split identities). No `CAP_KILL`, no `CAP_SYS_PTRACE`: it
/// reads `/proc/<pid>/status` (world-readable) only.
const OBSERVER_KEPT: rustix::thread::CapabilitySet = rustix::thread::CapabilitySet::DAC_OVERRIDE;

/// `deskbroker observer`: as root, first drops to a uid of its own; answers the uid that
/// started it (the broker's).
pub(crate) fn observer(args: ObserverArgs) -> Result<()> {
    desk_broker::restrict_umask();
    let state_dir = args.state_dir.unwrap_or_else(default_state_dir);
    let broker_uid = nix::unistd::getuid().as_raw();
    let identity = own_identity(&state_dir)?;
    run_observer(ObserverConfig {
        state_dir,
        broker_uid,
        identity,
        broker_pid: args.broker_pid,
    })
    .context("observer failed")
}

/// Under a root broker, moves the observer to a uid/gid of its own before anything else
/// (single-threaded), as the watchdog does (`watchdog.rs`): claims it
/// (`desk_desktop::sandbox::identity::observer`), makes `<state_dir>.observer/` (0700) and
/// everything in it that uid's (the key 0600), then drops to it with no supplementary group,
/// [`OBSERVER_KEPT`] alone and `NoNewPrivs`. Not root: the broker's uid, `shared`.
fn own_identity(state_dir: &std::path::Path) -> Result<&'static str> {
    if !nix::unistd::geteuid().is_root() {
        return Ok("shared");
    }
    crate::own_uid::move_to_own_uid(
        "observer",
        &observer_dir(state_dir),
        OBSERVER_KEY_FILE,
        desk_desktop::sandbox::identity::observer::claim_observer,
        OBSERVER_KEPT,
    )?;
    Ok("own")
}

/// Starts `deskbroker observer` for the broker's state directory in its own process group;
/// its output goes to `<state_dir>/observer.log`. It exits when this broker does. The broker
/// was built with `BrokerConfig::observer` on, so its high-risk hit-test needs this observer's
/// signed view.
pub(crate) fn spawn_observer(config: &desk_broker::BrokerConfig) -> Result<()> {
    use std::os::unix::process::CommandExt as _;
    let state_dir = &config.state_dir;
    let exe = std::env::current_exe().context("failed to locate the deskbroker executable")?;
    let log_path = StateDir::new(state_dir).path().join("observer.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("failed to open {}", log_path.display()))?;
    let mut child = std::process::Command::new(exe)
        .arg("observer")
        .arg("--state-dir")
        .arg(state_dir)
        .args(["--broker-pid", &std::process::id().to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("failed to start the observer")?;
    tracing::info!(pid = child.id(), "observer started");
    std::thread::spawn(move || child.wait());
    Ok(())
}
