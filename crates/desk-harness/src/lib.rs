//! The benchmark harness: runs agents on CAD tasks through the broker, enforces budgets and the
//! batching rule exactly, and scores only the final artifact with the trusted scorer
//! (`desk-cad`).
//!
//! The seam to models is the [`Agent`] trait: one turn in, one `computer_action` batch out.
//! Model adapters (crate `desk-models`) and the model-free agents (`oracle`, `replay`) implement
//! it.
#![forbid(unsafe_code)]

pub mod agent;

pub use agent::{
    Agent, AgentError, AgentInfo, BatchDelivery, BoxFuture, DeliveryStatus, Observation,
    ObservedImage, TaskBrief, TokenUsage, Turn, TurnOutcome,
};
