//! The observer's routes (lease token, like every session route):
//! `POST /v1/sessions/{id}/observations` asks the observer for a fresh signed observation of
//! the session and answers it as stored; `GET /v1/sessions/{id}/observations/{observation_id}`
//! answers a stored one, byte for byte. Both answer the signed envelope itself
//! (`{payload, signature_b64}`), so a client verifies it with the observer's public key.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::broker::Broker;
use crate::error::BrokerError;
use crate::ids::SessionId;

fn json_bytes(bytes: Vec<u8>) -> Response {
    let mut response = bytes.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl Broker {
    /// A fresh verified observation of `session_id`, stored.
    pub(crate) async fn observe(
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
}

/// `POST /v1/sessions/{id}/observations`.
pub(crate) async fn observe_route(
    State(broker): State<Broker>,
    id: SessionId,
) -> Result<Response, BrokerError> {
    let verified = broker.observe(&id).await?;
    Ok(json_bytes(verified.signed))
}

/// `GET /v1/sessions/{id}/observations/{observation_id}`.
pub(crate) async fn observation_route(
    State(broker): State<Broker>,
    Path((id, observation_id)): Path<(String, String)>,
) -> Result<Response, BrokerError> {
    let id = SessionId::parse(&id).map_err(|_| BrokerError::NotFound("session".to_string()))?;
    let bytes = broker
        .run(None, move |inner| {
            let session = inner.load(&id)?;
            super::client::read_stored(&session.dir(), &observation_id)
        })
        .await?;
    Ok(json_bytes(bytes))
}
