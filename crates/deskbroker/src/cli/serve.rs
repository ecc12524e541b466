//! The flags of the broker (`BrokerArgs`, shared by `serve`, `bench`, `load`, `demo` and `perf`)
//! and of `serve`, apart from the subcommand list (`cli.rs`) so that the subcommands name them
//! without naming the list that names them.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{budget, remote};

#[derive(Debug, Clone, Args)]
pub(crate) struct BrokerArgs {
    /// Directory for the SQLite store and session data.
    /// [default: $XDG_STATE_HOME/deskbroker, or ~/.local/state/deskbroker]
    #[arg(long, env = "DESKBROKER_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// Extra app profiles (*.toml) that add to or replace the built-in `librecad` and `generic`.
    #[arg(long, env = "DESKBROKER_PROFILES")]
    pub(crate) profiles: Option<PathBuf>,
    /// Display size of each session's desktop, WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080", value_parser = parse_size)]
    pub(crate) display: (u32, u32),
    /// Lease lifetime in seconds; expired sessions are released by a reaper.
    #[arg(long, default_value_t = 1800)]
    pub(crate) lease_ttl_secs: u64,
    /// Seconds past its lease expiry after which a sandboxed desktop stops by itself when no
    /// broker released it (the broker died and did not come back).
    #[arg(long, default_value_t = 30)]
    pub(crate) lease_grace_secs: u64,
    /// Profile used when a lease names none.
    #[arg(long, default_value = "librecad")]
    pub(crate) default_profile: String,
    /// A host path no desktop may see (repeatable), beside the state directory, /root and
    /// /home: a handoff whose sandbox shows it is refused with `workspace_unverified`.
    /// `bench run` adds its gold directory.
    #[arg(long = "private-path", value_name = "PATH")]
    pub(crate) private_paths: Vec<PathBuf>,
    /// Settle validation mode (`docs/settle.md`): after each stable settle, look at the screen
    /// again this many ms later and report in the receipt's `settle.validation` whether it
    /// still changed. Slows every action by this much; for measuring the settle rule, not for
    /// training. 0: off.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=5_000))]
    pub(crate) settle_validate_ms: u32,
    /// With --settle-validate-ms: validate one action in N, the session's actions 0, N, 2N, …
    /// (every task's first action among them), so a long run validates a deterministic sample.
    /// 1: every action.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) settle_validate_every: u32,
    /// Run sandboxed desktops WITHOUT their memory, process and CPU limits (the session's own
    /// cgroup v1 groups). Without it a broker that cannot make those groups refuses every lease
    /// with `sandbox_unavailable`: a broker not run as root (it has one identity in a user
    /// namespace and cannot create v1 cgroups), or a cgroup v2-only host. Every reset's
    /// workspace facts, receipt and evidence record then say `"limits": "off"`.
    #[arg(long)]
    pub(crate) unsafe_no_limits: bool,
    /// Where the cgroup v1 hierarchies are mounted. A test seam: pointed where no group can be
    /// made, leases are refused (without --unsafe-no-limits).
    #[arg(long, hide = true, default_value = "/sys/fs/cgroup")]
    pub(crate) cgroup_root: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Unix socket to listen on.
    /// [default: $XDG_RUNTIME_DIR/deskbroker.sock, or /tmp/deskbroker-$UID/deskbroker.sock]
    #[arg(long, env = "DESKBROKER_SOCKET")]
    pub(crate) socket: Option<PathBuf>,
    /// Uid admitted on the Unix socket (checked with SO_PEERCRED); repeatable.
    /// [default: the broker's own uid]
    #[arg(long = "allow-uid")]
    pub(crate) allow_uids: Vec<u32>,
    /// Also listen on TCP at HOST:PORT, TLS only (needs --tls-cert and --tls-key).
    #[arg(long)]
    pub(crate) listen: Option<std::net::SocketAddr>,
    /// PEM certificate chain of the TLS server (e.g. server.pem from `certs init`).
    #[arg(long)]
    pub(crate) tls_cert: Option<PathBuf>,
    /// PEM private key of the TLS server.
    #[arg(long)]
    pub(crate) tls_key: Option<PathBuf>,
    /// Require client certificates signed by this CA (mutual TLS), e.g. ca.pem.
    #[arg(long)]
    pub(crate) client_ca: Option<PathBuf>,
    /// Accept orchestration credentials signed by this key (orchestrator.pub) on TCP.
    #[arg(long)]
    pub(crate) orchestrator_pub: Option<PathBuf>,
    /// Accept reviewer credentials (`certs token --scope review`) signed by this key on the
    /// screenshot gate's review routes, from every peer; without it nobody can review.
    #[arg(long)]
    pub(crate) reviewer_pub: Option<PathBuf>,
    /// Most connections open at once on each listener (the Unix socket and TLS each have their
    /// own); a new connection over the cap closes the longest-idle one.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections: u32,
    /// What each session's desktop is. `local`: a private Xvfb, openbox and the profile's app.
    /// `fake`: no processes and no X; the whole HTTP API (leases, validation, exactly-once,
    /// both input logs, checkpoint before retrieval) over deterministic synthetic screenshots
    /// of a maximized app, where ctrl+s saves a fixture DXF to the attempt file. For harness
    /// integration tests in any language; see README "A fake broker for harness tests".
    #[arg(long, value_enum, default_value_t = Backend::Local)]
    pub(crate) backend: Backend,
    /// Run desktops WITHOUT their sandbox: as this user, with the host's network, files and
    /// state directory in reach of the app. Only for kernels that refuse namespaces (leasing
    /// then fails with `sandbox_unavailable`) and only with trusted agents; every reset and
    /// status says `"sandbox": "off"`.
    #[arg(long)]
    pub(crate) unsafe_no_sandbox: bool,
    /// The signed workspace policy every lease is checked against (`deskbroker policy sign`);
    /// needs --policy-pub. Without it: a built-in default signed with
    /// <state_dir>/policy/policy.key. A policy that fails refuses every lease (policy_invalid).
    #[arg(long, requires = "policy_pub", value_name = "SIGNED")]
    pub(crate) policy: Option<PathBuf>,
    /// The public key --policy must verify with; never the evidence key.
    #[arg(long, requires = "policy", value_name = "PUB")]
    pub(crate) policy_pub: Option<PathBuf>,
    /// Most sessions leased and not yet released at once; a lease beyond is refused with
    /// `lease_conflict` and a Retry-After header.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) max_sessions: u32,
    /// Memory, in MiB, the live sessions' estimates may add up to. Each session counts its
    /// profile's memory limit (`[limits] memory_mib`: librecad 1024, freecad and generic the
    /// default 2048); a lease that would go over is refused with `lease_conflict` and a
    /// Retry-After header. `auto`: the memory limit of this process's cgroup (a container's
    /// limit) less 512 MiB for the broker itself, or no budget when the cgroup has no limit.
    /// [default: no budget]
    #[arg(long, value_name = "MIB|auto", value_parser = budget::parse)]
    pub(crate) memory_budget_mib: Option<budget::MemoryBudget>,
    /// Also serve `GET /livez` and `GET /readyz` over plain HTTP on HOST:PORT for probes (no
    /// credentials; counts only). `/readyz` is 503 while no lease could be admitted: draining,
    /// sessions at --max-sessions, the memory budget spent, or no sandbox.
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) health_listen: Option<std::net::SocketAddr>,
    /// Limits the watchdog process enforces on every session.
    #[command(flatten)]
    pub(crate) limits: crate::watchdog::LimitArgs,
    /// A remote worker instead of local desktops.
    #[command(flatten)]
    pub(crate) remote: remote::RemoteWorkerArgs,
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
}

/// The kind of desktop `serve` gives each session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Backend {
    /// Xvfb + openbox + the app, driven by a `deskbroker-worker`.
    Local,
    /// `FakeDesktop`: synthetic frames, no processes; ctrl+s saves a fixture DXF.
    Fake,
}

fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (width, height) = text
        .split_once('x')
        .ok_or_else(|| format!("expected WIDTHxHEIGHT, got {text:?}"))?;
    let width: u32 = width
        .parse()
        .map_err(|_| format!("bad width in {text:?}"))?;
    let height: u32 = height
        .parse()
        .map_err(|_| format!("bad height in {text:?}"))?;
    if !(64..=8192).contains(&width) || !(64..=8192).contains(&height) {
        return Err(format!(
            "display {text} is outside 64..=8192 pixels per side"
        ));
    }
    Ok((width, height))
}
