//! [`Broker::run`]: the one way broker operations reach the blocking pool. With a session id
//! an operation first waits for the session's turn in `admission` (fair sessions), then runs
//! holding it; a panic marks the session `error`; every run wakes the status long-polls.

use std::sync::Arc;

use desk_contract::ErrorCode;

use crate::broker::{Broker, Inner};
use crate::error::BrokerError;
use crate::ids::SessionId;

impl Broker {
    /// Runs `operation` on the blocking pool.
    ///
    /// With a `session_id`, `operation` is one that takes that session's lock: it first waits
    /// for the session's turn without holding a thread (or is refused with `session_busy` when
    /// the session's queue is full, having done nothing), keeps the turn until it has run, and
    /// a panic inside it marks the session `error`.
    pub(crate) async fn run<R: Send + 'static>(
        &self,
        session_id: Option<SessionId>,
        operation: impl FnOnce(&Inner) -> Result<R, BrokerError> + Send + 'static,
    ) -> Result<R, BrokerError> {
        let turn = match &session_id {
            Some(id) => Some(
                self.inner
                    .admission
                    .enter(id, self.inner.config.session_queue)
                    .await?,
            ),
            None => None,
        };
        self.run_in_turn(session_id, turn, operation).await
    }

    /// [`Broker::run`] for the lease reaper: waits for the session's turn however many requests
    /// queue for it, and is never refused with `session_busy`.
    pub(crate) async fn run_unbounded<R: Send + 'static>(
        &self,
        session_id: SessionId,
        operation: impl FnOnce(&Inner) -> Result<R, BrokerError> + Send + 'static,
    ) -> Result<R, BrokerError> {
        let turn = self.inner.admission.enter(&session_id, usize::MAX).await?;
        self.run_in_turn(Some(session_id), Some(turn), operation)
            .await
    }

    /// Runs `operation` on the blocking pool, holding `turn` (the session's turn, see
    /// [`Broker::run`]) until it has run. A panic marks `session_id`'s
    /// session `error`.
    pub(crate) async fn run_in_turn<R: Send + 'static>(
        &self,
        session_id: Option<SessionId>,
        turn: Option<crate::admission::Turn>,
        operation: impl FnOnce(&Inner) -> Result<R, BrokerError> + Send + 'static,
    ) -> Result<R, BrokerError> {
        let inner = Arc::clone(&self.inner);
        let operation_session = session_id.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            // Held by the operation itself, so a request whose client went away cannot let the
            // session's next operation start before this one ends.
            let _turn = turn;
            let result = operation(&inner);
            if let (Some(session_id), Err(error)) = (&operation_session, &result) {
                inner.fail_if_desktop_died(session_id, error);
            }
            result
        })
        .await;
        // Wakes status long-polls; they re-read their session and decide.
        self.inner.observability.changes.bump();
        match outcome {
            Ok(result) => result,
            Err(join_error) => {
                tracing::error!(error = %join_error, session_id = session_id.as_ref().map(SessionId::as_str), "broker operation panicked");
                if let Some(session_id) = session_id {
                    let inner = Arc::clone(&self.inner);
                    let _ = tokio::task::spawn_blocking(move || {
                        inner.mark_error(&session_id, ErrorCode::Internal, "internal error")
                    })
                    .await;
                }
                Err(BrokerError::Internal(
                    "a broker operation panicked".to_string(),
                ))
            }
        }
    }
}
