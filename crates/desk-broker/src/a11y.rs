//! Accessibility and windows: `GET /v1/sessions/{id}/accessibility` (the app's AT-SPI tree,
//! bounded, a new current observation) and `GET /v1/sessions/{id}/windows` (the app's
//! top-level windows). Both read the desktop through its worker and send no input; like a
//! screenshot they need a live session in an observable state. A snapshot becomes the session's
//! current observation (`control/ax.rs`), the only one semantic program steps may name. See
//! `docs/accessibility.md`.

use desk_contract::a11y::{AxLimits, AxTree};
use desk_contract::api::{AccessibilityResponse, WindowsResponse};

use crate::broker::{Broker, Inner};
use crate::door::Need;
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::journal::store_unavailable;

/// Parses `max_nodes` and `max_depth` from a raw query string; unknown, repeated or
/// out-of-range parameters are refused, never clamped.
pub fn parse_limits(query: Option<&str>) -> Result<AxLimits, BrokerError> {
    let (mut max_nodes, mut max_depth) = (None, None);
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').ok_or_else(|| {
            BrokerError::InvalidRequest(format!("query parameter {pair:?} has no value"))
        })?;
        let slot = match name {
            "max_nodes" => &mut max_nodes,
            "max_depth" => &mut max_depth,
            _ => {
                return Err(BrokerError::InvalidRequest(format!(
                    "unknown query parameter {name:?}; expected max_nodes or max_depth"
                )));
            }
        };
        if slot.is_some() {
            return Err(BrokerError::InvalidRequest(format!(
                "query parameter {name} is repeated"
            )));
        }
        let parsed = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
            .then(|| value.parse::<u32>().ok())
            .flatten()
            .ok_or_else(|| {
                BrokerError::InvalidRequest(format!(
                    "query parameter {name} must be a decimal integer, got {value:?}"
                ))
            })?;
        *slot = Some(parsed);
    }
    AxLimits::new(max_nodes, max_depth)
        .map_err(|error| BrokerError::InvalidRequest(error.to_string()))
}

impl Inner {
    fn accessibility(
        &self,
        session_id: &SessionId,
        limits: AxLimits,
    ) -> Result<AxTree, BrokerError> {
        self.enter(session_id, "accessibility", Need::Observe, |mut door| {
            let tree = door
                .desktop()?
                .accessibility(limits)
                .map_err(BrokerError::desktop("read the accessibility tree"))?;
            // The broker's record of the current observation, which semantic steps are checked
            // against before any input.
            self.controls
                .observed(session_id, &door.session().dir(), &tree)?;
            self.approvals.observed(session_id, &tree);
            door.renew();
            door.commit()?;
            tracing::info!(
                %session_id,
                observation_id = %tree.observation_id,
                nodes = tree.nodes.len(),
                truncated = tree.truncated,
                elapsed_ms = tree.elapsed_ms,
                "accessibility snapshot"
            );
            Ok(tree)
        })
    }

    fn windows(&self, session_id: &SessionId) -> Result<WindowsResponse, BrokerError> {
        self.enter(session_id, "windows", Need::Observe, |mut door| {
            let windows = door
                .desktop()?
                .windows()
                .map_err(BrokerError::desktop("list the app's windows"))?;
            door.renew();
            door.commit()?;
            Ok(WindowsResponse { windows })
        })
    }
}

impl Broker {
    /// `get_accessibility`.
    pub async fn accessibility(
        &self,
        session_id: &SessionId,
        limits: AxLimits,
    ) -> Result<AccessibilityResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.accessibility(&session_id, limits)
        })
        .await
        .map_err(store_unavailable("get_accessibility"))
        .map(|tree| AccessibilityResponse { tree })
    }

    /// `get_windows`.
    pub async fn windows(&self, session_id: &SessionId) -> Result<WindowsResponse, BrokerError> {
        let session_id = session_id.clone();
        self.run(Some(session_id.clone()), move |inner| {
            inner.windows(&session_id)
        })
        .await
        .map_err(store_unavailable("get_windows"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_refused_never_clamped() {
        let ok = parse_limits(Some("max_nodes=5&max_depth=3")).expect("valid");
        assert_eq!((ok.max_nodes, ok.max_depth), (5, 3));
        assert_eq!(parse_limits(None).expect("defaults").max_nodes, 2000);
        for bad in [
            "max_nodes=0",
            "max_nodes=10001",
            "max_depth=257",
            "max_nodes=-1",
            "max_nodes=1e3",
            "max_nodes=",
            "max_nodes",
            "max_nodes=1&max_nodes=2",
            "depth=3",
            "max_nodes=99999999999",
        ] {
            let error = parse_limits(Some(bad)).expect_err(bad);
            assert!(
                matches!(error, BrokerError::InvalidRequest(_)),
                "{bad}: {error}"
            );
        }
    }
}
