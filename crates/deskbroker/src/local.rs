//! Wiring a broker on this machine: the LocalDesktop factory (each session gets a private Xvfb,
//! openbox, the app and a `deskbroker worker`), `serve` as a daemon, and an in-process broker
//! for `demo` and `bench`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use desk_broker::{BackendFactory, BackendRequest, Broker, BrokerConfig};
use desk_client::Client;
use desk_contract::DisplaySize;
use desk_desktop::{BackendError, DesktopBackend, LocalDesktop, LocalDesktopConfig, ProfileSet};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::cli::{BrokerArgs, ServeArgs};
use crate::paths::{default_socket, default_state_dir};

fn worker_command() -> Result<Vec<String>> {
    let exe = std::env::current_exe().context("failed to locate the deskbroker executable")?;
    Ok(vec![exe.display().to_string(), "worker".to_string()])
}

/// Creates a [`LocalDesktop`] per session and reaps what a crashed broker left behind.
struct LocalFactory {
    worker: Vec<String>,
}

impl BackendFactory for LocalFactory {
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> {
        let config = LocalDesktopConfig::new(
            request.display,
            self.worker.clone(),
            request.session_dir.clone(),
        );
        Ok(Box::new(LocalDesktop::start(config)?))
    }

    fn reap_orphans(&self, session_dir: &Path) -> usize {
        desk_desktop::launcher::reap_recorded(session_dir)
    }
}

fn build_broker(args: &BrokerArgs) -> Result<Broker> {
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
    config.default_profile = args.default_profile.clone();
    config.profiles.get(&config.default_profile)?;
    let factory = LocalFactory {
        worker: worker_command()?,
    };
    Broker::open(config, factory)
        .with_context(|| format!("failed to open broker state in {}", state_dir.display()))
}

/// `deskbroker serve`: runs until SIGINT or SIGTERM.
pub(crate) async fn serve(args: ServeArgs) -> Result<()> {
    let socket = args.socket.clone().unwrap_or_else(default_socket);
    let broker_args = args.broker.clone();
    let broker = tokio::task::spawn_blocking(move || build_broker(&broker_args)).await??;
    let reaper = broker.spawn_reaper();
    tracing::info!(socket = %socket.display(), "deskbroker serving");
    let shutdown = async {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match terminate.as_mut() { Some(signal) => { signal.recv().await; } None => std::future::pending().await } } => {}
        }
        tracing::info!("shutting down");
    };
    let served = desk_broker::serve_unix(&socket, broker.clone(), shutdown).await;
    reaper.abort();
    broker.shutdown_backends().await;
    served.context("broker server failed")
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
        let broker_args = args.clone();
        let broker = tokio::task::spawn_blocking(move || build_broker(&broker_args)).await??;
        if let Some(parent) = socket.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let server_broker = broker.clone();
        let server_socket = socket.clone();
        let task = tokio::spawn(async move {
            desk_broker::serve_unix(&server_socket, server_broker, async {
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

async fn wait_for_socket(socket: &Path) -> Result<()> {
    for _ in 0..500 {
        if socket.exists() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    anyhow::bail!("broker socket {} did not appear", socket.display())
}
