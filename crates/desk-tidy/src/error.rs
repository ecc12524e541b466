//! [`TidyError`], the crate's one error type.

use std::path::PathBuf;

/// What can go wrong while reading the workspace.
#[derive(Debug, thiserror::Error)]
pub enum TidyError {
    /// A file or directory could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The path that could not be read.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}
