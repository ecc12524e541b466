//! The replay agent: re-runs a recorded rollout's turns, in order, from its `rollout.json`.
//!
//! Each recorded answer (batch, malformed call or no tool call) is given back unchanged, so the
//! harness applies the same checks again; observations are not consulted. When the recording is
//! exhausted the agent answers without a tool call.

use std::collections::VecDeque;
use std::path::Path;

use crate::agent::{
    Agent, AgentError, AgentInfo, BoxFuture, ModelSaid, Observation, TaskBrief, TokenUsage, Turn,
    TurnOutcome,
};
use crate::error::{HarnessError, read_json};
use crate::record::{RolloutRecord, TurnRecord};

/// Replays a recorded rollout.
pub struct ReplayAgent {
    source: AgentInfo,
    task_id: String,
    turns: VecDeque<TurnRecord>,
}

impl ReplayAgent {
    /// A replay of `record`'s trace.
    pub fn new(record: &RolloutRecord) -> Self {
        Self {
            source: record.agent.clone(),
            task_id: record.task_id.clone(),
            turns: record.trace.iter().map(|t| t.outcome.clone()).collect(),
        }
    }

    /// Reads a `rollout.json` file.
    pub fn from_file(path: &Path) -> Result<Self, HarnessError> {
        let record: RolloutRecord = read_json(path)?;
        Ok(Self::new(&record))
    }

    /// The task the recording was made on.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }
}

impl Agent for ReplayAgent {
    fn info(&self) -> AgentInfo {
        AgentInfo {
            agent: "replay".to_owned(),
            model: Some(match &self.source.model {
                Some(model) => format!("{} ({model})", self.source.agent),
                None => self.source.agent.clone(),
            }),
        }
    }

    fn start<'a>(&'a mut self, brief: &'a TaskBrief) -> BoxFuture<'a, Result<(), AgentError>> {
        let result = if brief.task_id == self.task_id {
            Ok(())
        } else {
            Err(AgentError {
                agent: "replay".to_owned(),
                message: format!(
                    "the recording is of {} but the task is {}",
                    self.task_id, brief.task_id
                ),
            })
        };
        Box::pin(async move { result })
    }

    fn turn<'a>(
        &'a mut self,
        _observation: &'a Observation,
    ) -> BoxFuture<'a, Result<Turn, AgentError>> {
        let outcome = match self.turns.pop_front() {
            Some(TurnRecord::Actions { call_id, actions }) => {
                TurnOutcome::Actions { call_id, actions }
            }
            Some(TurnRecord::Malformed { call_id, error }) => {
                TurnOutcome::Malformed { call_id, error }
            }
            Some(TurnRecord::NoToolCall { text }) => TurnOutcome::NoToolCall { text },
            None => TurnOutcome::NoToolCall {
                text: "the recording is exhausted".to_owned(),
            },
        };
        Box::pin(async move {
            Ok(Turn {
                outcome,
                usage: TokenUsage::default(),
                acknowledged_safety_checks: Vec::new(),
                said: ModelSaid::default(),
            })
        })
    }
}
