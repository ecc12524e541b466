//! Serving the API on a Unix socket.
//!
//! The socket file is created with mode 0600 right after bind (put it in a 0700 directory to
//! close the window between bind and chmod). A stale socket file nobody listens on is removed; a
//! live one is an error. The socket file is removed on exit. Serving does not start the lease
//! reaper: call [`crate::Broker::spawn_reaper`] once beside it.

use std::future::Future;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use crate::broker::Broker;
use crate::error::BrokerError;
use crate::routes::router;

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
    remove_stale_socket(path)?;
    let listener =
        tokio::net::UnixListener::bind(path).map_err(BrokerError::io("bind the socket", path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(BrokerError::io("chmod the socket", path))?;
    tracing::info!(socket = %path.display(), "broker listening");
    let served = axum::serve(listener, router(broker))
        .with_graceful_shutdown(shutdown)
        .await;
    let _ = std::fs::remove_file(path);
    served.map_err(BrokerError::io("serve", path))
}
