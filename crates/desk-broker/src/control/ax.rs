//! The session's current accessibility observation, as the broker checks semantic steps
//! against it before any input: its id, the control scope it was taken under, and each node's
//! window class (`bound`, `popup`, `other`, `none`). Never the tree itself.
//!
//! Rules: a new snapshot replaces the observation (the worker's current one is the same); an
//! observation taken under an earlier generation or target revision (a claim, Stop, restart or
//! reset since) is stale; so is any id that is not the current one. Kept in memory only: after
//! a broker restart every earlier id is stale, which fails closed.

use desk_contract::ErrorCode;
use desk_contract::a11y::AxWindow;

use super::scope::{Scope, refusal};
use crate::error::BrokerError;

/// What the broker keeps of the current observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observation {
    pub(crate) id: String,
    pub(crate) scope: Scope,
    /// Each node's window, index for index.
    pub(crate) windows: Vec<AxWindow>,
}

impl Observation {
    /// Refuses a semantic step on `node` of observation `id` while the control scope is
    /// `scope`: `ax_observation_stale` unless `id` is this observation and it was taken under
    /// `scope`; `invalid_params` for a node it does not have; `ax_foreign_window` for a node
    /// outside the bound window and the admitted popups.
    pub(crate) fn admit(&self, id: &str, node: u32, scope: Scope) -> Result<(), BrokerError> {
        if id != self.id {
            return Err(refusal(
                ErrorCode::AxObservationStale,
                format!(
                    "observation_id: {id} is not the session's current accessibility observation \
                     (take a new one with GET .../accessibility)"
                ),
            ));
        }
        if scope != self.scope {
            return Err(refusal(
                ErrorCode::AxObservationStale,
                format!(
                    "observation_id: {id} was taken under control generation {} and target \
                     revision {}; the session is now at {} and {}",
                    self.scope.generation,
                    self.scope.target_revision,
                    scope.generation,
                    scope.target_revision
                ),
            ));
        }
        let Some(window) = self.windows.get(node as usize) else {
            return Err(refusal(
                ErrorCode::InvalidParams,
                format!(
                    "node: observation {id} has {} nodes, there is no node {node}",
                    self.windows.len()
                ),
            ));
        };
        match window {
            AxWindow::Bound | AxWindow::Popup => Ok(()),
            AxWindow::None | AxWindow::Other => Err(refusal(
                ErrorCode::AxForeignWindow,
                format!(
                    "node: node {node} lives in {} window, not the app's bound window or one of \
                     its popups",
                    if *window == AxWindow::None {
                        "no"
                    } else {
                        "another"
                    }
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observation() -> Observation {
        Observation {
            id: "ax_0123456789abcdef".to_string(),
            scope: Scope {
                generation: 2,
                target_revision: 1,
            },
            windows: vec![
                AxWindow::None,
                AxWindow::Bound,
                AxWindow::Popup,
                AxWindow::Other,
            ],
        }
    }

    fn code(result: Result<(), BrokerError>) -> Option<ErrorCode> {
        result.err().map(|error| error.code())
    }

    #[test]
    fn only_the_current_observation_under_its_scope_and_an_admitted_window_passes() {
        let observation = observation();
        let scope = observation.scope;
        let id = "ax_0123456789abcdef";
        assert_eq!(code(observation.admit(id, 1, scope)), None);
        assert_eq!(code(observation.admit(id, 2, scope)), None);
        let stale = Some(ErrorCode::AxObservationStale);
        assert_eq!(
            code(observation.admit("ax_fedcba9876543210", 1, scope)),
            stale
        );
        for later in [
            Scope {
                generation: 3,
                target_revision: 1,
            },
            Scope {
                generation: 2,
                target_revision: 2,
            },
        ] {
            assert_eq!(code(observation.admit(id, 1, later)), stale);
        }
        let foreign = Some(ErrorCode::AxForeignWindow);
        assert_eq!(code(observation.admit(id, 0, scope)), foreign);
        assert_eq!(code(observation.admit(id, 3, scope)), foreign);
        assert_eq!(
            code(observation.admit(id, 4, scope)),
            Some(ErrorCode::InvalidParams)
        );
    }
}
