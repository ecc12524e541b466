//! The crate's single error type.
//!
//! Scoring never returns an error for a bad candidate (that is a zero score with a reason);
//! `CadError` covers failures of trusted inputs and outputs: corpus files, gold DXFs, rendering.

use std::path::PathBuf;

/// Errors from the CAD crate's I/O and rendering.
#[derive(Debug, thiserror::Error)]
pub enum CadError {
    /// A filesystem operation failed.
    #[error("failed to {op} {path}")]
    Io {
        /// The operation, e.g. "write" or "create directory".
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The `dxf` crate failed to read or write a drawing.
    #[error("failed to {op} dxf {path}: {message}")]
    Dxf {
        /// The operation, "read" or "write".
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The `dxf` crate's error text.
        message: String,
    },
    /// A JSON document could not be encoded or decoded.
    #[error("failed to {op} json {path}")]
    Json {
        /// The operation, "encode" or "decode".
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// The SVG could not be parsed or rasterized.
    #[error("failed to render drawing: {0}")]
    Render(String),
    /// The sandboxed headless FreeCAD judge could not run or answered nothing usable.
    #[error("3D judge failed: {0}")]
    Judge(String),
    /// A task id is not of the form `task-NNN`.
    #[error("invalid task id {0:?}")]
    InvalidTaskId(String),
    /// A corpus version name that is not one of [`crate::CorpusVersion::ALL`].
    #[error("unknown corpus version {0:?} (known: v1, v2)")]
    UnknownCorpusVersion(String),
}
