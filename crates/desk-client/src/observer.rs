//! The observer's routes: `POST /v1/sessions/{id}/observations` (a fresh signed observation)
//! and `GET /v1/sessions/{id}/observations/{observation_id}` (a stored one). Both return the
//! signed envelope's bytes as the broker sent them, for the caller to verify with the
//! observer's public key (`docs/observer.md`).

use hyper::Method;

use crate::{Client, ClientError, session_path};

impl Client {
    /// `POST /v1/sessions/{id}/observations`: the signed observation's bytes.
    pub async fn observe(&self, session_id: &str) -> Result<Vec<u8>, ClientError> {
        let operation = "observe";
        let path = session_path(operation, session_id, "/observations")?;
        let bytes = self
            .call_raw(operation, Method::POST, &path, Some(b"{}".to_vec()))
            .await?;
        Ok(bytes.to_vec())
    }

    /// `GET /v1/sessions/{id}/observations/{observation_id}`: the stored bytes.
    pub async fn observation(
        &self,
        session_id: &str,
        observation_id: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let operation = "get_observation";
        let plain = observation_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return Err(ClientError::Request {
                operation,
                message: "the observation id is not a plain token".to_string(),
            });
        }
        let path = session_path(
            operation,
            session_id,
            &format!("/observations/{observation_id}"),
        )?;
        let bytes = self.call_raw(operation, Method::GET, &path, None).await?;
        Ok(bytes.to_vec())
    }
}
