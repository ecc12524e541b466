//! The benchmark harness: runs agents on CAD tasks through the broker, enforces budgets and the
//! batching rule exactly, and scores only the final artifact with the trusted scorer
//! (`desk-cad`).
//!
//! The seam to models is the [`Agent`] trait: one turn in, one `computer_action` batch out.
//! Model adapters (crate `desk-models`) and the model-free agents ([`OracleAgent`],
//! [`ReplayAgent`]) implement it. [`run_rollout`] plays one task; [`run_suite`] plays many and
//! writes `summary.json` and `report.html`. Gold drawings reach only the scorer and the oracle,
//! never the broker or the desktop.
#![forbid(unsafe_code)]

pub mod agent;
pub mod batch;
mod error;
pub mod merge;
pub mod oracle;
pub mod plan;
mod play;
pub mod progress;
pub mod record;
pub mod replay;
pub mod report;
pub mod rollout;
pub mod suite;
mod summary;
pub mod versions;

pub use agent::{
    Agent, AgentError, AgentInfo, BatchDelivery, BoxFuture, DeliveryStatus, ModelSaid, Observation,
    ObservedImage, TaskBrief, TokenUsage, Turn, TurnOutcome,
};
pub use batch::{BatchRejection, check_batch};
pub use error::{HarnessError, MergeConflict};
pub use merge::merge_runs;
pub use oracle::{OracleAgent, oracle_batches};
pub use plan::{BrokerStamp, DesktopMemory, RunInfo, RunPlan, Shard};
pub use play::request_id;
pub use record::{RolloutRecord, RolloutStatus, TraceItem, TraceTurn, TurnRecord};
pub use replay::ReplayAgent;
pub use rollout::{MAX_ACTIONS, RolloutOptions, run_rollout};
pub use suite::{
    AgentFactory, SuiteConfig, Summary, format_table, oracle_factory, run_suite, run_suite_with,
};
pub use versions::SoftwareVersions;
