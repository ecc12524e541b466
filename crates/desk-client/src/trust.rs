//! Trusting a Unix socket before a credential goes through it.
//!
//! Invariants: a request (and so a lease token) is written to a Unix socket only after (1) the
//! socket's directory was found owned by this process's effective uid or root and not writable
//! by group or others, so nobody else can have swapped the socket, and (2) the listening
//! process's uid, read from the connection with `SO_PEERCRED`, is this process's effective uid
//! or root. Either failing is [`ClientError::UntrustedSocket`] and nothing is sent.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use tokio::net::UnixStream;

use crate::ClientError;

fn untrusted(socket: &Path, reason: String) -> ClientError {
    ClientError::UntrustedSocket {
        path: socket.to_path_buf(),
        reason,
    }
}

fn trusted_uid(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Checks the socket's directory, connects, and checks the listener's uid.
pub(crate) async fn connect_trusted(socket: &Path) -> Result<UnixStream, ClientError> {
    let socket_dir = match socket.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    // A missing directory is a connection failure like a missing socket.
    if let Ok(metadata) = std::fs::metadata(socket_dir) {
        if !trusted_uid(metadata.uid()) {
            return Err(untrusted(
                socket,
                format!(
                    "its directory {} is owned by uid {}, neither this user nor root",
                    socket_dir.display(),
                    metadata.uid()
                ),
            ));
        }
        let mode = metadata.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(untrusted(
                socket,
                format!(
                    "its directory {} can be written by group or others (mode {mode:04o}), so \
                     another user could have replaced the socket",
                    socket_dir.display()
                ),
            ));
        }
    }
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|source| ClientError::Connect {
            path: socket.to_path_buf(),
            source,
        })?;
    let listener_uid = stream
        .peer_cred()
        .map_err(|error| untrusted(socket, format!("cannot read the listener's uid: {error}")))?
        .uid();
    if !trusted_uid(listener_uid) {
        return Err(untrusted(
            socket,
            format!("it is served by uid {listener_uid}, neither this user nor root"),
        ));
    }
    Ok(stream)
}
