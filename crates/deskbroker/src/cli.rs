//! Command-line definitions: every subcommand, its flags and its help text.
//! The broker's and `serve`'s flags, which other subcommands name, are in `cli/serve.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub(crate) mod budget;
pub(crate) mod remote;
mod serve;

pub(crate) use serve::{Backend, BrokerArgs, ServeArgs};

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
    /// The observer: signs what it saw of a session (its app's accessibility elements, the
    /// last frame's sha256) for the broker, under a uid of its own (`serve` starts it).
    Observer(crate::observer::ObserverArgs),
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
