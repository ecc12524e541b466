//! The status long-poll: `GET /v1/sessions/{id}?wait_ms=N&state=S&next_action_index=K` answers
//! as soon as the session's state or next action index differs from the client's view, or after
//! `N` ms with the (unchanged) status.
//!
//! An action in flight (`running`) is not an answer: the waiter keeps waiting for the action's
//! end, so a client sees settled states (`ready` with the new index, `done`, `error`, …) unless
//! it passed `state=running` itself or the deadline comes first.
//!
//! Waking: [`Changes`] is a `tokio::sync::watch` counter the broker bumps after every operation
//! (see `Broker::run`). A waiter subscribes before its first read, so a change that lands between
//! the read and the wait still wakes it; on every wake it re-reads its session's row and returns
//! only if it differs. There is no polling timer; the only timer is the `wait_ms` deadline.
//!
//! Parameters are parsed strictly from the raw query string: unknown or repeated names,
//! malformed numbers, unknown states and `wait_ms` above [`MAX_WAIT_MS`] are `invalid_request`
//! (never clamped), and nothing is read or waited on.

use std::time::Duration;

use desk_contract::api::SessionState;
use tokio::sync::watch;

use crate::error::BrokerError;

/// The longest accepted `wait_ms`.
pub(crate) const MAX_WAIT_MS: u64 = 5_000;

/// A counter bumped after every broker operation.
#[derive(Debug)]
pub(crate) struct Changes {
    sender: watch::Sender<u64>,
}

impl Changes {
    pub(crate) fn new() -> Changes {
        Changes {
            sender: watch::Sender::new(0),
        }
    }

    /// Wakes every waiter.
    pub(crate) fn bump(&self) {
        self.sender
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.sender.subscribe()
    }
}

/// The long-poll parameters of a status request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusWait {
    /// How long to wait at most; zero answers at once.
    pub(crate) wait: Duration,
    /// The state the client last saw; the current state when absent.
    pub(crate) state: Option<SessionState>,
    /// The next action index the client last saw; the current one when absent.
    pub(crate) next_action_index: Option<u64>,
    /// The control generation the client last saw; the current one when absent.
    pub(crate) generation: Option<u64>,
}

fn invalid(message: String) -> BrokerError {
    BrokerError::InvalidRequest(message)
}

fn parse_decimal(name: &str, value: &str) -> Result<u64, BrokerError> {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(invalid(format!(
            "query parameter {name} must be a non-negative decimal integer, got {value:?}"
        )));
    }
    value
        .parse::<u64>()
        .map_err(|_| invalid(format!("query parameter {name} is out of range: {value:?}")))
}

impl StatusWait {
    /// Parses the raw query string of a status request (`None` or empty: no waiting).
    pub fn parse(query: Option<&str>) -> Result<StatusWait, BrokerError> {
        let mut parsed = StatusWait::default();
        let (mut seen_wait, mut seen_state, mut seen_index) = (false, false, false);
        let mut seen_generation = false;
        let Some(query) = query.filter(|query| !query.is_empty()) else {
            return Ok(parsed);
        };
        for pair in query.split('&') {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| invalid(format!("query parameter {pair:?} has no value")))?;
            let seen = match name {
                "wait_ms" => &mut seen_wait,
                "state" => &mut seen_state,
                "next_action_index" => &mut seen_index,
                "generation" => &mut seen_generation,
                _ => {
                    return Err(invalid(format!(
                        "unknown query parameter {name:?}; expected wait_ms, state, \
                         next_action_index or generation"
                    )));
                }
            };
            if std::mem::replace(seen, true) {
                return Err(invalid(format!("query parameter {name} is repeated")));
            }
            match name {
                "wait_ms" => {
                    let wait_ms = parse_decimal(name, value)?;
                    if wait_ms > MAX_WAIT_MS {
                        return Err(invalid(format!(
                            "wait_ms must be at most {MAX_WAIT_MS}, got {wait_ms}"
                        )));
                    }
                    parsed.wait = Duration::from_millis(wait_ms);
                }
                "state" => {
                    parsed.state = Some(SessionState::parse(value).ok_or_else(|| {
                        invalid(format!("query parameter state: unknown state {value:?}"))
                    })?);
                }
                "generation" => parsed.generation = Some(parse_decimal(name, value)?),
                _ => parsed.next_action_index = Some(parse_decimal(name, value)?),
            }
        }
        if !seen_wait && (seen_state || seen_index || seen_generation) {
            return Err(invalid(
                "state, next_action_index and generation need wait_ms (they describe what to \
                 wait past)"
                    .to_string(),
            ));
        }
        Ok(parsed)
    }
}

/// Whether `latest` is worth answering a waiter whose view is `baseline`: it differs, and it is
/// not the transient `running` of an action in flight (unless the waiter itself saw `running`),
/// whose end bumps the counter again.
pub(crate) fn answers(baseline: View, latest: View) -> bool {
    latest != baseline
        && (latest.state != SessionState::Running || baseline.state == SessionState::Running)
}

/// What a waiter compares: the state, the next action index and the control generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) state: SessionState,
    pub(crate) next_action_index: u64,
    pub(crate) generation: u64,
}

#[cfg(test)]
mod tests;
