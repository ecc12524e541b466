//! The broker's read-only operator views, on top of `watch` and `metrics` (which know nothing
//! of the broker): the status long-poll and the metrics scrape.

use std::collections::BTreeMap;
use std::sync::Arc;

use desk_contract::api::StatusResponse;

use crate::broker::Broker;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::metrics::Gauges;
use crate::watch::{StatusWait, View, answers};

impl Broker {
    async fn view(&self, session_id: &SessionId) -> Result<View, BrokerError> {
        // Reads the row directly, not through `run`, so that a waiter's own reads bump nothing
        // and cannot wake the other waiters.
        let inner = Arc::clone(&self.inner);
        let session_id = session_id.clone();
        tokio::task::spawn_blocking(move || {
            let session = inner.load(&session_id)?;
            let generation = match session.state() {
                desk_contract::api::SessionState::Released => 0,
                _ => {
                    inner
                        .controls
                        .status(&session_id, &session.dir())?
                        .generation
                }
            };
            Ok(View {
                state: session.state(),
                next_action_index: session.next_action_index(),
                generation,
            })
        })
        .await
        .map_err(|error| BrokerError::Internal(format!("status read panicked: {error}")))?
    }

    /// `get_status` with a long-poll: answers when the session's state or next action index
    /// differs from `wait` (or from the current values for what `wait` leaves out), or when
    /// `wait.wait` has passed, with the status at that moment.
    pub async fn status_wait(
        &self,
        session_id: &SessionId,
        wait: StatusWait,
    ) -> Result<StatusResponse, BrokerError> {
        if wait.wait.is_zero() {
            return self.status(session_id).await;
        }
        // Subscribe first: a bump after this line wakes the wait below even if it lands before
        // the first read.
        let mut changes = self.inner.observability.changes.subscribe();
        let _waiting = self.inner.observability.metrics.waiting();
        let current = self.view(session_id).await?;
        let baseline = View {
            state: wait.state.unwrap_or(current.state),
            next_action_index: wait.next_action_index.unwrap_or(current.next_action_index),
            generation: wait.generation.unwrap_or(current.generation),
        };
        let deadline = tokio::time::Instant::now() + wait.wait;
        let mut latest = current;
        while !answers(baseline, latest) {
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {
                    changes.borrow_and_update();
                    latest = self.view(session_id).await?;
                }
                // The deadline passed, or the broker is shutting down: answer as is.
                Ok(Err(_)) | Err(_) => break,
            }
        }
        self.status(session_id).await
    }
}

impl Broker {
    /// `GET /v1/metrics`: the Prometheus text of request metrics and session gauges.
    pub async fn metrics_text(&self) -> Result<String, BrokerError> {
        let inner = std::sync::Arc::clone(&self.inner);
        let gauges = tokio::task::spawn_blocking(move || {
            let sessions = inner.store.unreleased_sessions()?;
            let mut by_state = BTreeMap::new();
            for session in &sessions {
                *by_state.entry(session.state().as_str()).or_insert(0) += 1;
            }
            Ok::<_, BrokerError>(Gauges {
                by_state,
                active: sessions.len() as u64,
                max_sessions: inner.config.max_sessions,
            })
        })
        .await
        .map_err(|error| BrokerError::Internal(format!("metrics gauges panicked: {error}")))??;
        Ok(self.inner.observability.metrics.render(&gauges))
    }
}

impl Broker {
    /// Records one finished HTTP request in the metrics: `op` is the route table's operation
    /// name (a fixed label, never request data), `code` the answer's error code when any.
    pub fn record_request(&self, op: &'static str, status: u16, code: Option<&str>, seconds: f64) {
        self.inner
            .observability
            .metrics
            .record(op, status, code, seconds);
    }
}
