//! The one [`Agent`] implementation shared by every model API. Each API (`responses`, `chat`,
//! `anthropic`) supplies only what differs: resetting its conversation, adding an observation,
//! building the request body, reading the response and counting tokens. Session checks, the
//! HTTP call (with its no-effect retries) and error mapping live here once.

use desk_harness::{
    Agent, AgentError, AgentInfo, BoxFuture, ModelSaid, Observation, TaskBrief, TokenUsage, Turn,
    TurnOutcome,
};
use serde_json::Value;

use crate::config::ModelConfig;
use crate::config::ModelError;
use crate::http::ModelHttp;
use crate::session::{self, Session};

/// What one model API adds to the shared turn loop.
pub(crate) trait Protocol: Send {
    /// The adapter's configuration.
    fn config(&self) -> &ModelConfig;
    /// The HTTP client for this API.
    fn http(&self) -> &ModelHttp;
    /// Whether `start` has run.
    fn has_session(&self) -> bool;
    /// Installs a fresh session and clears the conversation.
    fn begin(&mut self, session: Session);
    /// Adds the tool result(s) and the new screenshot to the conversation.
    fn observe(&mut self, observation: &Observation) -> Result<(), ModelError>;
    /// The request body for the next model call.
    fn body(&self) -> Value;
    /// Reads the model's answer and records it in the conversation.
    fn read(&mut self, response: &Value) -> Result<TurnOutcome, ModelError>;
    /// Token usage reported in `response`.
    fn tokens(&self, response: &Value) -> TokenUsage;
    /// The visible text and the reasoning in `response`, for the report.
    fn said(&self, response: &Value) -> ModelSaid;
    /// Whether the last `read` answered the model itself (a zoom) and the model must be asked
    /// again within the same turn; resets the flag.
    fn answered_locally(&mut self) -> bool {
        false
    }
    /// Safety checks the model's last answer raised, which the next request acknowledges.
    fn safety_checks(&self) -> Vec<Value> {
        Vec::new()
    }
}

/// An [`Agent`] speaking one model API.
pub(crate) struct ProtocolAgent<P>(pub(crate) P);

impl<P: Protocol> ProtocolAgent<P> {
    fn name(&self) -> &'static str {
        self.0.config().provider.agent_name()
    }
}

fn to_agent(name: &str) -> impl Fn(ModelError) -> AgentError + '_ {
    move |error| session::agent_error(name, error)
}

impl<P: Protocol> Agent for ProtocolAgent<P> {
    fn info(&self) -> AgentInfo {
        AgentInfo {
            agent: self.name().to_string(),
            model: Some(self.0.config().model.clone()),
        }
    }

    fn start<'a>(&'a mut self, brief: &'a TaskBrief) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let name = self.name();
            let session = Session::start(brief, self.0.config()).map_err(to_agent(name))?;
            self.0.begin(session);
            Ok(())
        })
    }

    fn turn<'a>(
        &'a mut self,
        observation: &'a Observation,
    ) -> BoxFuture<'a, Result<Turn, AgentError>> {
        Box::pin(async move {
            let name = self.name();
            if !self.0.has_session() {
                return Err(session::not_started(name));
            }
            self.0.observe(observation).map_err(to_agent(name))?;
            let mut usage = TokenUsage::default();
            let mut said = ModelSaid::default();
            loop {
                let body = self.0.body();
                let response = self.0.http().post(&body).await.map_err(to_agent(name))?;
                let outcome = self.0.read(&response).map_err(to_agent(name))?;
                let tokens = self.0.tokens(&response);
                usage.input_tokens += tokens.input_tokens;
                usage.output_tokens += tokens.output_tokens;
                usage.reasoning_tokens += tokens.reasoning_tokens;
                said.extend(self.0.said(&response));
                // A zoom was answered without input; the adapter bounds how often per turn.
                if self.0.answered_locally() {
                    continue;
                }
                return Ok(Turn {
                    outcome,
                    usage,
                    acknowledged_safety_checks: self.0.safety_checks(),
                    said,
                });
            }
        })
    }
}
