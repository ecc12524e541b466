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
    /// `--jobs` is not a number of rollouts this run can play at once.
    #[error("invalid --jobs {value:?}: {reason}")]
    InvalidJobs {
        /// As given.
        value: String,
        /// Why.
        reason: String,
    },
    /// `--shard` is not `I/N` with `1 <= I <= N`.
    #[error("invalid --shard {spec:?}: {reason}")]
    InvalidShard {
        /// As given.
        spec: String,
        /// Why.
        reason: String,
    },
    /// Runs that cannot be merged into one result.
    #[error("cannot merge the runs")]
    Merge(#[from] MergeConflict),
    /// A rollout task ended without a result (it panicked or was cancelled).
    #[error("the rollout of {task_id} did not finish: {message}")]
    RolloutTask {
        /// The task.
        task_id: String,
        /// The join error.
        message: String,
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

/// Why runs cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeConflict {
    /// Nothing to merge.
    #[error("no run directories given")]
    NoRuns,
    /// Two runs under different versions of the contract, corpus or scorer.
    #[error("{what} differs: {first} in {first_dir}, {second} in {second_dir}")]
    Version {
        /// `contract_version`, `corpus_version` or `scorer_version`.
        what: &'static str,
        /// The first run's value.
        first: String,
        /// Its directory.
        first_dir: String,
        /// The conflicting value.
        second: String,
        /// Its directory.
        second_dir: String,
    },
    /// Rollouts by different agent configurations.
    #[error("agent differs: {first} in {first_dir}, {second} in {second_dir}")]
    Agent {
        /// The first rollout's agent and model.
        first: String,
        /// Its directory.
        first_dir: String,
        /// The conflicting agent and model.
        second: String,
        /// Its directory.
        second_dir: String,
    },
    /// One run required a verified sandbox for every rollout, another did not.
    #[error("sandbox requirement differs between {first_dir} and {second_dir}")]
    Sandbox {
        /// The first run.
        first_dir: String,
        /// The conflicting run.
        second_dir: String,
    },
    /// The same task in two runs.
    #[error("task {task_id} is in both {first_dir} and {second_dir}")]
    DuplicateTask {
        /// The task.
        task_id: String,
        /// Where it was first.
        first_dir: String,
        /// Where it was again.
        second_dir: String,
    },
    /// A row of a summary whose rollout record is missing or for another task.
    #[error("{dir}: the record of {task_id} ({record}) does not match its summary row")]
    RecordMismatch {
        /// The run.
        dir: String,
        /// The task.
        task_id: String,
        /// The record path.
        record: String,
    },
    /// The out directory already holds results.
    #[error("{0} already holds results; merge into a new directory")]
    OutNotEmpty(String),
}
