//! Command-line definitions: every subcommand, its flags and its help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub(crate) mod budget;
pub(crate) mod remote;

/// deskbroker: a control plane that gives computer-use agents real desktops.
///
/// It leases a private Xvfb desktop per session, resets it to a pinned state with the target app
/// maximized, executes validated actions exactly once per request id, waits for bounded visual
/// stability, records input logs, and checkpoints the saved artifact.
///
/// Start here:
///   deskbroker demo                  # everything at once: broker, LibreCAD, a drawing, checks
///   deskbroker serve                 # run the broker on a Unix socket
///   deskbroker serve --backend fake  # the same API over fake desktops, for harness tests
///   deskbroker session lease --task-id t1 --attempt-id a1
///   deskbroker perf                  # latency against peer tools on the same display
#[derive(Debug, Parser)]
#[command(name = "deskbroker", version, about, long_about, verbatim_doc_comment)]
pub(crate) struct Cli {
    /// Log filter, e.g. `info` or `deskbroker=debug` (else RUST_LOG). Logs go to stderr, in
    /// colour only on a terminal (and without NO_COLOR).
    /// [default: warn for `bench`, whose progress and summary are its output; info otherwise]
    #[arg(long, global = true, env = "DESKBROKER_LOG")]
    pub(crate) log: Option<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the broker daemon: JSON over HTTP on a Unix socket (mode 0600).
    Serve(Box<ServeArgs>),
    /// Call broker operations from a shell; prints JSON responses.
    #[command(subcommand)]
    Session(SessionCommand),
    /// The main job: start a broker, draw a figure in LibreCAD through broker actions,
    /// checkpoint, retrieve and check the DXF, and write a run folder.
    Demo(DemoArgs),
    /// The CAD benchmark: run agents on LibreCAD tasks and score the saved drawings.
    #[command(subcommand)]
    Bench(crate::bench::BenchCommand),
    /// Measure capture+encode and click→settled-screenshot latency against peer tools.
    Perf(PerfArgs),
    /// TLS setup: a local CA, server and client identities, orchestration credentials.
    #[command(subcommand)]
    Certs(crate::certs::CertsCommand),
    /// Signed evidence: export a session's bundle, verify one.
    #[command(subcommand)]
    Evidence(crate::evidence::EvidenceCommand),
    /// Load benchmark: many concurrent sessions through the real API.
    Load(crate::load::LoadArgs),
    /// Workspace policy: lint, sign and verify the signed policy `serve --policy` enforces.
    #[command(subcommand)]
    Policy(crate::policy_cmd::PolicyCommand),
    /// The watchdog: kills sessions at their limits, without the broker (`serve` starts it).
    Watchdog(crate::watchdog::WatchdogArgs),
    /// The kill switch: destroy a session's workspace now, revoke its lease, write its signed
    /// terminal receipt. Acts on the state directory; works with the broker up or down.
    Kill(crate::watchdog::KillArgs),
    /// Ask the watchdog itself (not the broker) what it watches and enforces: sends a fresh
    /// nonce on `<state_dir>/watchdog.sock` and prints the answer only when it is signed with
    /// the evidence key and echoes the nonce. Works while the broker is stopped or hung.
    Readback(crate::watchdog::ReadbackArgs),
}

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

#[derive(Debug, Args)]
pub(crate) struct ClientArgs {
    /// The broker's Unix socket (same default as `serve`).
    #[arg(long, env = "DESKBROKER_SOCKET", global = true)]
    pub(crate) socket: Option<PathBuf>,
    /// A remote broker, `https://HOST:PORT`, instead of the Unix socket (needs --ca).
    #[arg(long, env = "DESKBROKER_URL", global = true)]
    pub(crate) url: Option<String>,
    /// CA certificate the remote broker's certificate must chain to.
    #[arg(long, env = "DESKBROKER_CA", global = true)]
    pub(crate) ca: Option<PathBuf>,
    /// Client certificate for mutual TLS (with --key).
    #[arg(long, env = "DESKBROKER_CERT", global = true)]
    pub(crate) cert: Option<PathBuf>,
    /// Client private key for mutual TLS (with --cert).
    #[arg(long, env = "DESKBROKER_KEY", global = true)]
    pub(crate) key: Option<PathBuf>,
    /// Orchestration credential (`certs token`) for leasing without a client certificate.
    #[arg(
        long,
        env = "DESKBROKER_CREDENTIAL",
        global = true,
        hide_env_values = true
    )]
    pub(crate) credential: Option<String>,
    /// The session's lease token (`lease_token` of the lease answer).
    #[arg(
        long,
        env = "DESKBROKER_LEASE_TOKEN",
        global = true,
        hide_env_values = true
    )]
    pub(crate) lease_token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionCommand {
    /// Lease a desktop for (task, attempt); replaying the same pair returns the same lease.
    Lease {
        #[command(flatten)]
        client: ClientArgs,
        #[arg(long)]
        task_id: String,
        #[arg(long)]
        attempt_id: String,
        /// App profile (default: the broker's default).
        #[arg(long)]
        profile: Option<String>,
    },
    /// Reset: start the app maximized and hand off the first screenshot.
    Reset {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
        /// Idempotency key.
        #[arg(long)]
        request_id: String,
        /// Write the screenshot PNG here instead of printing base64.
        #[arg(long)]
        png: Option<PathBuf>,
    },
    /// Take a screenshot.
    Screenshot {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
        /// Write the PNG here instead of printing base64.
        #[arg(long)]
        png: Option<PathBuf>,
    },
    /// Execute one action, e.g. --action '{"type":"click","x":10,"y":20,"intent":"focus"}'.
    Act {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
        #[arg(long)]
        request_id: String,
        #[arg(long)]
        expected_action_index: u64,
        /// The action as JSON.
        #[arg(long)]
        action: String,
        /// Write the resulting PNG here instead of printing base64.
        #[arg(long)]
        png: Option<PathBuf>,
    },
    /// Save the attempt file (already saved, or the profile's save gesture).
    Checkpoint {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
    },
    /// Retrieve the checkpointed artifact.
    Artifact {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
        /// Write the file here.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print events.json (NDJSON).
    Events {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
    },
    /// Print frame_events.json (NDJSON).
    FrameEvents {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
    },
    /// Print the session's status.
    Status {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
    },
    /// Release the session: stop the desktop and delete attempt data. Idempotent.
    Release {
        #[command(flatten)]
        client: ClientArgs,
        session_id: String,
    },
    /// Drain the broker (a preStop hook): it leases no new session until it restarts; then wait
    /// until no session is live, at most --wait-secs. Prints the capacity; exits 1 when
    /// sessions are still live at the deadline.
    Drain {
        #[command(flatten)]
        client: ClientArgs,
        /// Longest wait for the live sessions to be released; 0: do not wait.
        #[arg(long, default_value_t = 25)]
        wait_secs: u64,
    },
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Run folder for screenshots, logs and the DXF. [default: ./runs/demo-<unix time>]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct PerfArgs {
    /// Samples per measurement.
    #[arg(long, default_value_t = 30)]
    pub(crate) samples: usize,
    /// Folder with the peer scripts (xdotool_scrot_peer.sh, pyautogui_peer.py, …).
    #[arg(long, default_value = "../shared/peers")]
    pub(crate) peers: PathBuf,
    /// Python with pyautogui/mss/pillow for the Python peers (see peers/setup.sh).
    #[arg(long)]
    pub(crate) peer_python: Option<PathBuf>,
    /// Skip the peers; measure deskbroker only.
    #[arg(long)]
    pub(crate) no_peers: bool,
    /// Also measure LibreCAD resets to a verified handoff (this many).
    #[arg(long, default_value_t = 3)]
    pub(crate) resets: usize,
    /// Also measure FreeCAD resets to a verified handoff (this many; 0 skips them).
    #[arg(long, default_value_t = 2)]
    pub(crate) freecad_resets: usize,
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
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
