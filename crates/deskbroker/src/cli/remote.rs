//! `serve --worker tcp://HOST:PORT` and its TLS files: sessions on a remote worker
//! (`deskbroker-remote-worker --listen` or `desk-win-worker --listen`) instead of local desktops.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

/// The remote worker `serve` puts sessions on.
#[derive(Debug, Clone, Args)]
pub(crate) struct RemoteWorkerArgs {
    /// Put every session on the remote worker listening at tcp://HOST:PORT (mutual TLS; one
    /// session at a time; its app is the one the worker launched) instead of launching a local
    /// desktop. Needs --worker-ca, --worker-cert and --worker-key. See docs/worker-protocol.md,
    /// "Transport".
    #[arg(long, value_name = "tcp://HOST:PORT", requires_all = ["worker_ca", "worker_cert", "worker_key"])]
    pub(crate) worker: Option<String>,
    /// PEM CA the worker's certificate must chain to (it must name HOST); no system roots.
    #[arg(long, requires = "worker", value_name = "PEM")]
    pub(crate) worker_ca: Option<PathBuf>,
    /// PEM client certificate the broker presents to the worker.
    #[arg(long, requires = "worker", value_name = "PEM")]
    pub(crate) worker_cert: Option<PathBuf>,
    /// PEM private key of --worker-cert.
    #[arg(long, requires = "worker", value_name = "PEM")]
    pub(crate) worker_key: Option<PathBuf>,
}

impl RemoteWorkerArgs {
    /// The remote worker, its files read now; `None` without --worker.
    pub(crate) fn remote_worker(&self) -> Result<Option<desk_desktop::RemoteWorker>> {
        let (Some(endpoint), Some(ca), Some(cert), Some(key)) = (
            &self.worker,
            &self.worker_ca,
            &self.worker_cert,
            &self.worker_key,
        ) else {
            return Ok(None);
        };
        desk_desktop::RemoteWorker::new(endpoint, ca, cert, key)
            .map(Some)
            .with_context(|| format!("--worker {endpoint}"))
    }
}
