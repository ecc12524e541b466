//! Wiring a broker on this machine: desk-desktop's `LocalFactory` (each session gets a private
//! Xvfb, openbox, the app and a `deskbroker-worker`, sandboxed) or its `FakeFactory` for
//! `serve --backend fake`, `serve` as a daemon, and an in-process broker for `demo` and `bench`.
//!
//! Just over 400 lines: the broker's wiring (auth, policy, factory) for `serve`, `demo` and `bench`
//! is kept in one place.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use desk_broker::{AuthConfig, Broker, BrokerConfig};
use desk_client::Client;
use desk_contract::DisplaySize;
use desk_desktop::{FakeFactory, LocalFactory, ProfileSet, SandboxPolicy};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::cli::{Backend, BrokerArgs, ServeArgs};
use crate::paths::{default_socket, default_state_dir};

mod policy;

pub(crate) use policy::read_policy;

/// The worker program's file name, next to the running `deskbroker`.
pub(crate) const WORKER_PROGRAM: &str = "deskbroker-worker";

/// The worker program is not where the broker looks for it.
#[derive(Debug)]
pub(crate) struct WorkerMissing {
    /// Where it was looked for.
    pub(crate) path: PathBuf,
}

impl std::fmt::Display for WorkerMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the desktop worker program {} is missing: build it beside deskbroker \
             (`cargo build --release -p deskbroker` builds both)",
            self.path.display()
        )
    }
}

impl std::error::Error for WorkerMissing {}

/// `deskbroker-worker`, next to the running executable: the desktop worker and the sandbox's
/// pid 1, the only program of ours a sandbox sees.
pub(crate) fn worker_program() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("failed to locate the deskbroker executable")?;
    let path = exe.with_file_name(WORKER_PROGRAM);
    if !path.is_file() {
        return Err(WorkerMissing { path }.into());
    }
    Ok(path)
}

fn worker_command() -> Result<Vec<String>> {
    Ok(vec![worker_program()?.display().to_string()])
}

/// What each session's desktop is: `serve --backend`, or the remote worker of `serve --worker`.
pub(crate) enum Desktops {
    /// Local or fake desktops.
    Backend(Backend),
    /// Every session on this remote worker.
    Remote(desk_desktop::RemoteWorker),
}

/// What a caller of [`build_broker_with`] decides apart from the flags: `serve` and
/// [`LocalBroker`] choose each differently.
struct BrokerPlan {
    auth: AuthConfig,
    desktops: Desktops,
    sandboxed: bool,
    policy: Option<desk_broker::PolicyConfig>,
    session_limits: desk_broker::SessionLimits,
    /// The most sessions and the memory budget in MiB, when not the defaults.
    capacity: Option<(usize, Option<u64>)>,
    /// Whether an observer is started beside the broker.
    observer: bool,
}

fn build_broker_with(args: &BrokerArgs, plan: BrokerPlan) -> Result<Broker> {
    let BrokerPlan {
        auth,
        desktops,
        sandboxed,
        policy,
        session_limits,
        capacity,
        observer,
    } = plan;
    let state_dir = args.state_dir.clone().unwrap_or_else(default_state_dir);
    let mut profiles = ProfileSet::builtin()?;
    if let Some(dir) = &args.profiles {
        profiles.load_dir(dir)?;
    }
    let mut config = BrokerConfig::new(&state_dir, profiles);
    config.display = DisplaySize {
        width: args.display.0,
        height: args.display.1,
    };
    config.lease_ttl = Duration::from_secs(args.lease_ttl_secs);
    config.settle.validate_ms = args.settle_validate_ms;
    config.settle.validate_every = args.settle_validate_every;
    config.lease_grace = Duration::from_secs(args.lease_grace_secs);
    config.default_profile = args.default_profile.clone();
    config.profiles.get(&config.default_profile)?;
    config.auth = auth;
    config.policy = policy;
    // Workspace files are read by this program run as the session's app uid, never in here.
    config.workspace_reader =
        Some(std::env::current_exe().context("failed to locate the deskbroker executable")?);
    config.validators = crate::validators::broker_validators();
    config.limits = session_limits;
    config.observer = observer;
    if let Some((max_sessions, memory_budget_mib)) = capacity {
        config.max_sessions = max_sessions;
        config.memory_budget_mib = memory_budget_mib;
    }
    let remote = matches!(desktops, Desktops::Remote(_));
    config.sandbox = match desktops {
        Desktops::Backend(Backend::Local) if sandboxed => desk_contract::desktop::SandboxMode::On,
        // The fake backend has no desktop to contain, and a remote worker's desktop is
        // contained (or not) on its own host: their results say so too.
        Desktops::Backend(_) | Desktops::Remote(_) => desk_contract::desktop::SandboxMode::Off,
    };
    // Only the operator turns limits off (a fake desktop, stamped `"sandbox": "off"`, runs no
    // process to limit).
    let limits_mode = if args.unsafe_no_limits || remote {
        desk_contract::desktop::LimitsMode::Off
    } else {
        desk_contract::desktop::LimitsMode::Enforced
    };
    config.limits_mode = limits_mode;
    let opened = match desktops {
        Desktops::Remote(worker) => Broker::open(config, desk_desktop::RemoteFactory::new(worker)),
        Desktops::Backend(Backend::Local) => Broker::open(
            config,
            LocalFactory::new(
                worker_command()?,
                if sandboxed {
                    SandboxPolicy::default_for_this_process()
                } else {
                    SandboxPolicy::Off
                },
                args.private_paths.clone(),
            )
            .with_limits(limits_mode, args.cgroup_root.clone()),
        ),
        Desktops::Backend(Backend::Fake) => Broker::open(config, FakeFactory),
    };
    opened.with_context(|| format!("failed to open broker state in {}", state_dir.display()))
}

/// The auth settings and TLS configuration `serve` flags ask for. TCP without TLS is refused.
fn serve_auth(args: &ServeArgs) -> Result<(AuthConfig, Option<Arc<desk_server::TlsServerConfig>>)> {
    let mut auth = AuthConfig::default();
    if !args.allow_uids.is_empty() {
        auth.allowed_uids = args.allow_uids.clone();
    }
    if let Some(path) = &args.orchestrator_pub {
        let key = desk_evidence::VerifyingKey::read(path)
            .with_context(|| format!("failed to read the orchestrator key {}", path.display()))?;
        auth.orchestrator_key = Some(key);
    }
    if let Some(path) = &args.reviewer_pub {
        let key = desk_evidence::VerifyingKey::read(path)
            .with_context(|| format!("failed to read the reviewer key {}", path.display()))?;
        auth.reviewer_key = Some(key);
    }
    let tls = match (&args.listen, &args.tls_cert, &args.tls_key) {
        (None, None, None) => {
            anyhow::ensure!(
                args.client_ca.is_none() && args.orchestrator_pub.is_none(),
                "--client-ca and --orchestrator-pub apply to TCP listening: add --listen"
            );
            None
        }
        (Some(_), Some(cert), Some(key)) => {
            let files = desk_server::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.client_ca.clone(),
            };
            Some(desk_server::server_config(&files).context("failed to set up TLS")?)
        }
        (Some(_), _, _) => anyhow::bail!(
            "TCP listening requires TLS: pass --tls-cert and --tls-key (see `deskbroker certs init`)"
        ),
        (None, _, _) => anyhow::bail!("--tls-cert and --tls-key need --listen HOST:PORT"),
    };
    Ok((auth, tls))
}

/// The signed policy `serve --policy --policy-pub` names (files that cannot be read stop
/// `serve`; a policy that does not verify refuses every lease with `policy_invalid`).
fn serve_policy(args: &ServeArgs) -> Result<Option<desk_broker::PolicyConfig>> {
    read_policy(args.policy.as_deref(), args.policy_pub.as_deref())
}

/// `deskbroker serve`: runs until SIGINT or SIGTERM.
pub(crate) async fn serve(args: ServeArgs) -> Result<()> {
    // Private state: everything the broker, SQLite and the log writers create is 0600/0700.
    desk_broker::restrict_umask();
    match desk_server::raise_open_file_limit() {
        Ok(limit) => tracing::info!(open_file_limit = limit, "open-file limit raised"),
        Err(error) => tracing::warn!(error = %error, "failed to raise the open-file limit"),
    }
    let limits = desk_server::ConnectionLimits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        ..desk_server::ConnectionLimits::default()
    };
    let socket = args.socket.clone().unwrap_or_else(default_socket);
    let (auth, tls) = serve_auth(&args)?;
    let policy = serve_policy(&args)?;
    let broker_args = args.broker.clone();
    let session_limits = args.limits.limits();
    let backend = args.backend;
    let remote = args.remote.remote_worker()?;
    anyhow::ensure!(
        remote.is_none() || backend == Backend::Local,
        "--worker puts sessions on a remote worker: it does not go with --backend fake"
    );
    let sandboxed = !args.unsafe_no_sandbox;
    let memory_budget_mib = match args.memory_budget_mib {
        Some(budget) => budget.resolve()?,
        None => None,
    };
    let capacity = (
        usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
        memory_budget_mib,
    );
    tracing::info!(
        max_sessions = args.max_sessions,
        memory_budget_mib,
        "lease capacity"
    );
    if broker_args.unsafe_no_limits {
        tracing::warn!(
            "--unsafe-no-limits: desktops run without memory, process and CPU limits; every \
             reset, receipt and evidence record says \"limits\": \"off\""
        );
    }
    if !sandboxed {
        tracing::warn!(
            "--unsafe-no-sandbox: desktops run as this user with the host's network and files; \
             every status, reset, receipt and evidence record says \"sandbox\": \"off\""
        );
    } else if let Some(worker) = &remote {
        tracing::info!(worker = %worker.endpoint(), "sessions go to the remote worker (mutual TLS); this broker sandboxes and limits nothing of it");
    } else if backend == Backend::Local {
        // Said at start, so an operator learns it before the first client does.
        let policy = SandboxPolicy::default_for_this_process();
        if let Err(error) =
            tokio::task::spawn_blocking(move || desk_desktop::sandbox::probe::check(policy)).await?
        {
            tracing::error!(error = %error, "leases will be refused with sandbox_unavailable");
        }
        if !broker_args.unsafe_no_limits {
            let root = broker_args.cgroup_root.clone();
            if let Err(error) = tokio::task::spawn_blocking(move || {
                desk_desktop::sandbox::cgroup::check_available(&root)
            })
            .await?
            {
                tracing::error!(error = %error, "leases will be refused with sandbox_unavailable");
            }
        }
    }
    let desktops = match remote {
        Some(worker) => Desktops::Remote(worker),
        None => Desktops::Backend(backend),
    };
    let broker = tokio::task::spawn_blocking(move || {
        build_broker_with(
            &broker_args,
            BrokerPlan {
                auth,
                desktops,
                sandboxed,
                policy,
                session_limits,
                capacity: Some(capacity),
                // `serve` starts the observer (`spawn_observer` below).
                observer: true,
            },
        )
    })
    .await??;
    let policy_files = args.policy.as_deref().zip(args.policy_pub.as_deref());
    crate::watchdog::spawn_watchdog(broker.config(), &args.limits.limits(), policy_files)?;
    crate::observer::spawn_observer(broker.config())?;
    let reaper = broker.spawn_reaper();
    tracing::info!(socket = %socket.display(), backend = ?backend, "deskbroker serving");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shutdown_signal = async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        let _ = stop.send(true);
    };
    let signal_task = tokio::spawn(shutdown_signal);
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let tcp = match (args.listen, tls) {
        (Some(addr), Some(tls)) => Some(tokio::spawn(desk_server::serve_tls_with(
            addr,
            tls,
            broker.clone(),
            limits,
            until_stopped(stopped.clone()),
        ))),
        _ => None,
    };
    let health = args.health_listen.map(|addr| {
        let served =
            desk_server::serve_health(addr, broker.clone(), until_stopped(stopped.clone()));
        tokio::spawn(async move {
            // Said at once: a probe that cannot connect keeps the pod out of service.
            let result = served.await;
            if let Err(error) = &result {
                tracing::error!(error = %error, "the health listener failed");
            }
            result
        })
    });
    let served =
        desk_server::serve_unix_with(&socket, broker.clone(), limits, until_stopped(stopped)).await;
    let served_health = match health {
        Some(task) => task.await.context("health server task failed")?,
        None => Ok(()),
    };
    let served_tcp = match tcp {
        Some(task) => task.await.context("TLS server task failed")?,
        None => Ok(()),
    };
    signal_task.abort();
    reaper.abort();
    // A stop (SIGTERM/SIGINT) is a restart or an upgrade: desktops keep running and the next
    // `serve` on the same state directory reattaches to them. Releasing a session (or its lease
    // expiring) is what stops a desktop.
    broker.detach_backends().await;
    served.context("broker server failed")?;
    served_health.context("health server failed")?;
    served_tcp.context("TLS server failed")
}

/// A broker running inside this process on its own Unix socket.
pub(crate) struct LocalBroker {
    socket: PathBuf,
    broker: Broker,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), desk_broker::BrokerError>>,
    reaper: JoinHandle<()>,
}

impl LocalBroker {
    pub(crate) async fn start(args: &BrokerArgs, socket: PathBuf) -> Result<LocalBroker> {
        LocalBroker::start_with(args, socket, true).await
    }

    /// [`LocalBroker::start`], sandboxing its desktops or (`perf`'s comparison) not.
    pub(crate) async fn start_with(
        args: &BrokerArgs,
        socket: PathBuf,
        sandboxed: bool,
    ) -> Result<LocalBroker> {
        LocalBroker::start_with_policy(args, socket, sandboxed, None).await
    }

    /// [`LocalBroker::start_with`] enforcing a signed policy (`bench run --policy`) instead of
    /// the built-in default.
    pub(crate) async fn start_with_policy(
        args: &BrokerArgs,
        socket: PathBuf,
        sandboxed: bool,
        policy: Option<desk_broker::PolicyConfig>,
    ) -> Result<LocalBroker> {
        LocalBroker::start_inner(args, socket, sandboxed, policy, None).await
    }

    /// [`LocalBroker::start`] admitting at most `max_sessions` unreleased sessions whose
    /// memory estimates add up to at most `memory_budget_mib` (`load --desktops`).
    pub(crate) async fn start_with_capacity(
        args: &BrokerArgs,
        socket: PathBuf,
        (max_sessions, memory_budget_mib): (usize, Option<u64>),
    ) -> Result<LocalBroker> {
        let capacity = Some((max_sessions, memory_budget_mib));
        LocalBroker::start_inner(args, socket, true, None, capacity).await
    }

    async fn start_inner(
        args: &BrokerArgs,
        socket: PathBuf,
        sandboxed: bool,
        policy: Option<desk_broker::PolicyConfig>,
        capacity: Option<(usize, Option<u64>)>,
    ) -> Result<LocalBroker> {
        let broker_args = args.clone();
        let broker = tokio::task::spawn_blocking(move || {
            build_broker_with(
                &broker_args,
                BrokerPlan {
                    auth: AuthConfig::default(),
                    desktops: Desktops::Backend(Backend::Local),
                    sandboxed,
                    policy,
                    session_limits: desk_broker::SessionLimits::default(),
                    capacity,
                    observer: false,
                },
            )
        })
        .await??;
        if let Some(parent) = socket.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let server_broker = broker.clone();
        let server_socket = socket.clone();
        let task = tokio::spawn(async move {
            desk_server::serve_unix(&server_socket, server_broker, async {
                let _ = stopped.await;
            })
            .await
        });
        wait_for_socket(&socket).await?;
        let reaper = broker.spawn_reaper();
        Ok(LocalBroker {
            socket,
            broker,
            stop: Some(stop),
            task,
            reaper,
        })
    }

    pub(crate) fn client(&self) -> Client {
        Client::new(self.socket.clone())
    }

    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
        self.reaper.abort();
        self.broker.shutdown_backends().await;
    }
}

/// Resolves at the first SIGINT (Ctrl+C) or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let terminated = async {
        match terminate.as_mut() {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated => {}
    }
}

async fn wait_for_socket(socket: &Path) -> Result<()> {
    for _ in 0..500 {
        if socket.exists() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    anyhow::bail!("broker socket {} did not appear", socket.display())
}
