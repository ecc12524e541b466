//! The harness's error type: local failures (files, corpus) that stop a run. Broker and agent
//! failures during a rollout are not errors here; they become the rollout's status.

use std::path::PathBuf;

/// Why the harness could not continue.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A local file operation failed.
    #[error("failed to {op} {path}")]
    Io {
        /// The operation, e.g. `write`.
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// JSON could not be encoded or decoded.
    #[error("failed to {op} json {path}")]
    Json {
        /// `encode` or `decode`.
        op: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The corpus or a gold drawing could not be read.
    #[error("failed to load the corpus")]
    Corpus(#[from] desk_cad::CadError),
    /// An agent could not be built for a task.
    #[error("failed to build an agent for {task_id}")]
    Agent {
        /// The task.
        task_id: String,
        /// Why.
        #[source]
        source: crate::agent::AgentError,
    },
}

/// Writes `bytes` to `path`, creating parent directories.
pub(crate) fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), HarnessError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| HarnessError::Io {
            op: "create directory",
            path: parent.to_owned(),
            source,
        })?;
    }
    std::fs::write(path, bytes).map_err(|source| HarnessError::Io {
        op: "write",
        path: path.to_owned(),
        source,
    })
}

/// Writes `value` as pretty JSON with a trailing newline.
pub(crate) fn write_json<T: serde::Serialize>(
    path: &std::path::Path,
    value: &T,
) -> Result<(), HarnessError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| HarnessError::Json {
        op: "encode",
        path: path.to_owned(),
        source,
    })?;
    bytes.push(b'\n');
    write_file(path, &bytes)
}

/// Reads and decodes a JSON file.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> Result<T, HarnessError> {
    let bytes = std::fs::read(path).map_err(|source| HarnessError::Io {
        op: "read",
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| HarnessError::Json {
        op: "decode",
        path: path.to_owned(),
        source,
    })
}
