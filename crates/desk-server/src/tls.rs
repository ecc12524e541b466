//! TLS for TCP listening: the rustls server configuration (ring provider, optional mutual TLS)
//! and a listener that completes handshakes off the accept loop.
//!
//! Invariants: TCP is only ever served through [`TlsListener`], so a plaintext client never
//! reaches the router; with a client CA, a handshake without a certificate of that CA fails and
//! the connection is dropped before any HTTP is read. Each accepted connection carries a
//! [`Peer::Tls`] with the SHA-256 of the verified client certificate, if any.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::CertificateDer;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::peer::Peer;
use desk_broker::BrokerError;
use desk_broker::sha256_hex;

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most handshakes in flight at once; further connections wait in the kernel backlog.
const MAX_HANDSHAKES: usize = 64;

/// Files of a TLS server identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain of the server.
    pub cert: PathBuf,
    /// PEM private key of the server.
    pub key: PathBuf,
    /// PEM CA certificate(s) client certificates must chain to; `None` disables mutual TLS.
    pub client_ca: Option<PathBuf>,
}

/// Installs rustls' ring crypto provider for this process; harmless when one is installed.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn bad_file(operation: &'static str, path: &Path, reason: impl std::fmt::Display) -> BrokerError {
    BrokerError::Io {
        operation,
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason.to_string()),
    }
}

/// The PEM reading the worker transport uses too (`desk_worker_io::tls`), one home for it.
fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, BrokerError> {
    desk_worker_io::tls::read_certs(path)
        .map_err(|error| bad_file("read certificates from", path, error))
}

/// Builds the server configuration from `files` (HTTP/1.1 only, as the router serves).
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, BrokerError> {
    install_crypto_provider();
    let chain = read_certs(&files.cert)?;
    let key = desk_worker_io::tls::read_key(&files.key)
        .map_err(|error| bad_file("read the private key", &files.key, error))?;
    let builder = rustls::ServerConfig::builder();
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca_path) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(ca_path)? {
                roots
                    .add(cert)
                    .map_err(|error| bad_file("load the client CA", ca_path, error))?;
            }
            let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
                .build()
                .map_err(|error| bad_file("load the client CA", ca_path, error))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|error| bad_file("load the server identity", &files.cert, error))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener that yields only connections whose TLS handshake completed.
pub(crate) struct TlsListener {
    incoming: mpsc::Receiver<(TlsStream<TcpStream>, Peer)>,
    local: SocketAddr,
    acceptor_task: JoinHandle<()>,
}

impl TlsListener {
    pub(crate) fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> TlsListener {
        let local = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (sender, incoming) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = TlsAcceptor::from(config);
        let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        let acceptor_task = tokio::spawn(async move {
            loop {
                let Ok(permit) = Arc::clone(&handshakes).acquire_owned().await else {
                    return;
                };
                let (stream, remote) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(error = %error, "failed to accept a TCP connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    let handshake =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    drop(permit);
                    let stream = match handshake {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(error)) => {
                            tracing::info!(%remote, error = %error, "TLS handshake refused");
                            return;
                        }
                        Err(_) => {
                            tracing::info!(%remote, "TLS handshake timed out");
                            return;
                        }
                    };
                    let client_cert_sha256 = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|chain| chain.first())
                        .map(|cert| sha256_hex(cert.as_ref()));
                    let peer = Peer::Tls { client_cert_sha256 };
                    let _ = sender.send((stream, peer)).await;
                });
            }
        });
        TlsListener {
            incoming,
            local,
            acceptor_task,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor_task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(accepted) => accepted,
            // The acceptor task only ends when the runtime shuts down.
            None => std::future::pending().await,
        }
    }

    /// axum asks for the listener's own address in the `Addr` type, which is a peer identity
    /// here; the TCP address is [`TlsListener::tcp_addr`].
    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer::Tls {
            client_cert_sha256: None,
        })
    }
}

impl TlsListener {
    /// The bound TCP address.
    pub(crate) fn tcp_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Connected<axum::serve::IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Peer {
        stream.remote_addr().clone()
    }
}
