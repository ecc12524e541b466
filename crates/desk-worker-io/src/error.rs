//! The crate's one error type.

use std::path::PathBuf;

/// What failed in the worker transport.
#[derive(Debug, thiserror::Error)]
pub enum WorkerIoError {
    /// The command line or an endpoint was malformed.
    #[error("{0}")]
    Usage(String),
    /// A certificate, key or CA file could not be read or holds nothing usable.
    #[error("{path}: {reason}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The TLS configuration could not be built from the files (key not matching, bad CA).
    #[error("TLS configuration: {0}")]
    Config(String),
    /// The stream or the listener failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
