//! Serving the API on a Unix socket, or over TLS on TCP.
//!
//! Both listeners run the bounded accept loop of `conn.rs` (deadlines, a connection cap each)
//! and attach the connection's [`Peer`] (the Unix peer's uid from SO_PEERCRED, or
//! the TLS client certificate's digest) as `ConnectInfo`, which `auth.rs` checks on every
//! request.
//!
//! Sockets you can trust: the socket's directory is created 0700 when missing, and an existing
//! one that another uid owns or that group or others can write is refused (whoever can write
//! there can swap the socket and receive clients' lease tokens). The socket file is created
//! with mode 0600 right after bind. A stale socket file nobody listens on is removed; a
//! live one is an error. The socket file is removed on exit. Serving does not start the lease
//! reaper: call [`desk_broker::Broker::spawn_reaper`] once beside it.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use crate::conn::{ConnectionLimits, serve_bounded};
use crate::peer::Peer;
use crate::routes::router;
use crate::tls::TlsListener;
use desk_broker::Broker;
use desk_broker::BrokerError;
use desk_broker::{DirUse, ensure_private_dir};

fn remove_stale_socket(path: &Path) -> Result<(), BrokerError> {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !metadata.file_type().is_socket() {
        return Err(BrokerError::Io {
            operation: "bind the socket",
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a file that is not a socket is in the way",
            ),
        });
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(BrokerError::Io {
            operation: "bind the socket",
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                "another broker is listening on this socket",
            ),
        });
    }
    std::fs::remove_file(path).map_err(BrokerError::io("remove the stale socket", path))
}

/// Serves `broker` on the Unix socket at `path` until `shutdown` resolves, then finishes
/// in-flight requests and returns.
pub async fn serve_unix(
    path: &Path,
    broker: Broker,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BrokerError> {
    serve_unix_with(path, broker, ConnectionLimits::default(), shutdown).await
}

/// [`serve_unix`] with explicit connection limits.
pub async fn serve_unix_with(
    path: &Path,
    broker: Broker,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BrokerError> {
    let socket_dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    ensure_private_dir(socket_dir, DirUse::Socket)?;
    remove_stale_socket(path)?;
    let listener =
        tokio::net::UnixListener::bind(path).map_err(BrokerError::io("bind the socket", path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(BrokerError::io("chmod the socket", path))?;
    tracing::info!(socket = %path.display(), "broker listening");
    serve_bounded(listener, router(broker), limits, unix_peer, shutdown).await;
    let _ = std::fs::remove_file(path);
    Ok(())
}

fn unix_peer(stream: &tokio::net::UnixStream, _: &tokio::net::unix::SocketAddr) -> Peer {
    let uid = stream.peer_cred().ok().map(|credentials| credentials.uid());
    Peer::Unix { uid }
}

fn tls_peer<I>(_: &I, peer: &Peer) -> Peer {
    peer.clone()
}

/// Serves `broker` over TLS on the TCP address `addr` until `shutdown` resolves. There is no
/// plaintext TCP mode: `tls` is required.
pub async fn serve_tls(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    broker: Broker,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BrokerError> {
    serve_tls_with(addr, tls, broker, ConnectionLimits::default(), shutdown).await
}

/// [`serve_tls`] with explicit connection limits (a pool of its own, apart from the socket's).
pub async fn serve_tls_with(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    broker: Broker,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BrokerError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(BrokerError::io("bind the TCP address", addr.to_string()))?;
    let listener = TlsListener::new(listener, tls);
    tracing::info!(address = %listener.tcp_addr(), "broker listening (TLS)");
    serve_bounded(listener, router(broker), limits, tls_peer, shutdown).await;
    Ok(())
}
