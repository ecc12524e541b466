//! The identity of a connection's peer, established by the listener (`serve.rs`, `tls.rs`,
//! `health.rs`) and judged by the auth layer (`auth.rs`).

use axum::extract::connect_info::Connected;

/// The identity of a connection's peer, established by the listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// A Unix-socket peer; `uid` is `None` when SO_PEERCRED failed.
    Unix {
        /// The peer process's uid.
        uid: Option<u32>,
    },
    /// A TLS peer after a completed handshake.
    Tls {
        /// Lowercase hex SHA-256 of the verified client certificate (DER), if one was presented.
        client_cert_sha256: Option<String>,
    },
}

impl Peer {
    /// A Unix-socket peer running as this process's effective uid (for in-process tests).
    pub fn current_user() -> Peer {
        Peer::Unix {
            uid: Some(nix::unistd::geteuid().as_raw()),
        }
    }
}

impl Connected<axum::serve::IncomingStream<'_, tokio::net::UnixListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::UnixListener>) -> Peer {
        let uid = stream
            .io()
            .peer_cred()
            .ok()
            .map(|credentials| credentials.uid());
        Peer::Unix { uid }
    }
}
