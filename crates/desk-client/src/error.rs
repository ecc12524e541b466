//! The client's one error enum: what a call to the broker can fail with.

use std::path::PathBuf;
use std::time::Duration;

use desk_contract::ErrorBody;
use hyper::StatusCode;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The broker answered with an error body; its `code` determines the HTTP status.
    #[error("broker refused the request: {0}")]
    Api(ErrorBody),
    /// The socket could not be connected.
    #[error("failed to connect to the broker at {path}")]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The Unix socket is not trusted with a credential: its directory can be written by
    /// another user, or the process listening on it runs as another user. Nothing was sent.
    #[error("refused to use the broker socket {path}: {reason}")]
    UntrustedSocket {
        /// The socket path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The TCP connection to a remote broker failed.
    #[error("failed to connect to the broker at {address}")]
    ConnectRemote {
        /// `host:port`.
        address: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The TLS handshake with a remote broker failed (e.g. a certificate of another CA).
    #[error("TLS handshake with the broker at {address} failed")]
    Tls {
        /// `host:port`.
        address: String,
        /// The TLS error.
        #[source]
        source: std::io::Error,
    },
    /// The remote configuration (URL, CA, identity) is unusable.
    #[error("bad remote broker configuration: {0}")]
    Config(String),
    /// The connection failed or was lost during the exchange.
    #[error("broker connection failed")]
    Transport(#[source] hyper::Error),
    /// The broker did not answer within the client's timeout.
    #[error("broker did not answer {operation} within {timeout:?}")]
    Timeout {
        /// The operation.
        operation: &'static str,
        /// The timeout in force.
        timeout: Duration,
    },
    /// The answer could not be decoded.
    #[error("failed to decode the broker's answer to {operation} ({status}): {message}")]
    Decode {
        /// The operation.
        operation: &'static str,
        /// The HTTP status.
        status: StatusCode,
        /// What went wrong.
        message: String,
    },
    /// The request could not be built (e.g. a session id that is not a valid path segment).
    #[error("failed to build the {operation} request: {message}")]
    Request {
        /// The operation.
        operation: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl ClientError {
    /// The broker's error body, when the broker answered with one.
    pub fn api_body(&self) -> Option<&ErrorBody> {
        match self {
            ClientError::Api(body) => Some(body),
            _ => None,
        }
    }
}
