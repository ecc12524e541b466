//! The observer as the broker uses it for the observer's routes (desk-server's
//! `observer_routes.rs`): a fresh verified observation of a session, stored, a stored one read
//! back byte for byte, and whether an observer answers (the `observer` feature).

use crate::broker::Broker;
use crate::error::BrokerError;
use crate::ids::SessionId;

impl Broker {
    /// A fresh verified observation of `session_id`, stored.
    pub async fn observe(
        &self,
        session_id: &SessionId,
    ) -> Result<super::client::Verified, BrokerError> {
        let id = session_id.clone();
        self.run(None, move |inner| {
            let session = inner.load(&id)?;
            inner.check_live(&session, "observe")?;
            let record =
                |body| crate::evidence::observer_observation(inner.evidence(), &session, body);
            super::client::observe(
                &inner.config.state_dir,
                &session.dir(),
                id.as_str(),
                None,
                &record,
            )
        })
        .await
    }

    /// `observer`: offered when an observer answers on the state directory's socket.
    pub(crate) fn observer_feature(&self) -> desk_contract::control::FeatureSupport {
        let supported = super::client::running(&self.inner.config.state_dir);
        desk_contract::control::FeatureSupport {
            feature: super::OBSERVER.to_string(),
            supported,
            refusal: (!supported).then_some(desk_contract::ErrorCode::InsufficientData),
            note: if supported {
                "a process of its own signs what it saw of a session (accessibility elements, \
                 the last frame's sha256): POST/GET /v1/sessions/{id}/observations; \
                 docs/observer.md"
            } else {
                "no observer answers on the state directory's observer.sock"
            }
            .to_string(),
        }
    }

    /// The stored signed observation `observation_id` of `session_id`, byte for byte.
    pub async fn stored_observation(
        &self,
        session_id: &SessionId,
        observation_id: String,
    ) -> Result<Vec<u8>, BrokerError> {
        let id = session_id.clone();
        self.run(None, move |inner| {
            let session = inner.load(&id)?;
            super::client::read_stored(&session.dir(), &observation_id)
        })
        .await
    }
}
