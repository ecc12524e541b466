//! Answers whose screenshot comes as raw PNG bytes instead of base64: the `*_png` methods send
//! `Accept: application/vnd.deskbroker.answer+png` ([`ANSWER_PNG_MEDIA_TYPE`]), and the broker
//! answers `Content-Type: …; json=N` with the JSON answer (`png_base64` empty) in the first N
//! bytes and the PNG after it. The bytes are checked against the screenshot's `sha256` (a
//! mismatch is [`ClientError::Decode`]). A broker that answers plain JSON (one that predates
//! the binary form) is read too: its base64 is decoded and checked the same way.

use desk_contract::api::{
    ANSWER_PNG_MEDIA_TYPE, ActionRequest, ActionResponse, ResetRequest, ResetResponse, Screenshot,
};
use desk_contract::control::{ProgramRequest, ProgramResponse, ZoomRequest};
use desk_contract::shot::CarriesShot;
use hyper::body::Bytes;
use hyper::header::HeaderValue;
use hyper::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Client, ClientError, session_path};

/// A typed answer and its screenshot's PNG bytes: `None` when the answer carries no image (no
/// screenshot, or one the screenshot gate withheld).
#[derive(Debug, Clone)]
pub struct WithPng<T> {
    /// The answer, its screenshot's `png_base64` empty.
    pub answer: T,
    /// The PNG, whose SHA-256 is the screenshot's `sha256`.
    pub png: Option<Bytes>,
    /// Whether the broker answered in the binary form (else plain JSON, whose base64 was
    /// decoded here).
    pub binary: bool,
}

fn decode_error(operation: &'static str, message: String) -> ClientError {
    ClientError::Decode {
        operation,
        status: StatusCode::OK,
        message,
    }
}

/// The length of the JSON part, from a binary answer's `Content-Type`; `None` for another type.
fn json_len(operation: &'static str, content_type: &str) -> Result<Option<usize>, ClientError> {
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or_default().trim();
    if !media.eq_ignore_ascii_case(ANSWER_PNG_MEDIA_TYPE) {
        return Ok(None);
    }
    let len = parts
        .filter_map(|param| param.trim().strip_prefix("json="))
        .next()
        .ok_or_else(|| decode_error(operation, format!("{content_type:?} has no json=N")))?;
    len.parse().map(Some).map_err(|_| {
        decode_error(
            operation,
            format!("{content_type:?}: json={len} is not a length"),
        )
    })
}

/// Reads an answer to a `*_png` request: binary or (from an older broker) JSON.
pub(crate) fn split<T: DeserializeOwned + CarriesShot>(
    operation: &'static str,
    content_type: Option<&HeaderValue>,
    body: Bytes,
) -> Result<WithPng<T>, ClientError> {
    let content_type = content_type
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let binary_len = json_len(operation, content_type)?;
    let json_len = binary_len.unwrap_or(body.len());
    if json_len > body.len() {
        return Err(decode_error(
            operation,
            format!("json={json_len} but the body has {} bytes", body.len()),
        ));
    }
    let mut answer: T = serde_json::from_slice(&body[..json_len])
        .map_err(|error| decode_error(operation, error.to_string()))?;
    let mut png = Some(body.slice(json_len..)).filter(|png| !png.is_empty());
    if let Some(shot) = answer.screenshot_mut()
        && !shot.png_base64.is_empty()
    {
        if png.is_some() {
            return Err(decode_error(
                operation,
                "an answer carries its PNG twice (base64 and raw)".to_string(),
            ));
        }
        let bytes = desk_contract::b64::decode(&std::mem::take(&mut shot.png_base64))
            .ok_or_else(|| decode_error(operation, "png_base64 is not base64".to_string()))?;
        png = Some(Bytes::from(bytes));
    }
    if let Some(png) = &png {
        let Some(shot) = answer.screenshot_mut() else {
            return Err(decode_error(
                operation,
                "PNG bytes follow an answer without a screenshot".to_string(),
            ));
        };
        let sha256 = desk_contract::sha256_hex(png);
        if sha256 != shot.sha256 {
            return Err(decode_error(
                operation,
                format!(
                    "the PNG's SHA-256 {sha256} is not the screenshot's {}",
                    shot.sha256
                ),
            ));
        }
    }
    Ok(WithPng {
        answer,
        png,
        binary: binary_len.is_some(),
    })
}

impl Client {
    async fn call_png<T: DeserializeOwned + CarriesShot>(
        &self,
        operation: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<WithPng<T>, ClientError> {
        let (content_type, bytes) = self
            .call_accepting(operation, method, path, body, Some(ANSWER_PNG_MEDIA_TYPE))
            .await?;
        split(operation, content_type.as_ref(), bytes)
    }

    async fn post_png<B: Serialize, T: DeserializeOwned + CarriesShot>(
        &self,
        operation: &'static str,
        session_id: &str,
        suffix: &str,
        body: &B,
    ) -> Result<WithPng<T>, ClientError> {
        let path = session_path(operation, session_id, suffix)?;
        let body = Self::json(operation, body)?;
        self.call_png(operation, Method::POST, &path, Some(body))
            .await
    }

    /// [`Client::reset`], the screenshot as PNG bytes.
    pub async fn reset_png(
        &self,
        session_id: &str,
        request: &ResetRequest,
    ) -> Result<WithPng<ResetResponse>, ClientError> {
        self.post_png("reset", session_id, "/reset", request).await
    }

    /// [`Client::screenshot`] as PNG bytes.
    pub async fn screenshot_png(
        &self,
        session_id: &str,
    ) -> Result<WithPng<Screenshot>, ClientError> {
        let path = session_path("screenshot", session_id, "/screenshot")?;
        self.call_png("screenshot", Method::GET, &path, None).await
    }

    /// [`Client::act`], the screenshot as PNG bytes.
    pub async fn act_png(
        &self,
        session_id: &str,
        request: &ActionRequest,
    ) -> Result<WithPng<ActionResponse>, ClientError> {
        self.post_png("execute_action", session_id, "/actions", request)
            .await
    }

    /// [`Client::program`], the screenshot as PNG bytes.
    pub async fn program_png(
        &self,
        session_id: &str,
        request: &ProgramRequest,
    ) -> Result<WithPng<ProgramResponse>, ClientError> {
        self.post_png("execute_program", session_id, "/programs", request)
            .await
    }

    /// [`Client::zoom`] as PNG bytes.
    pub async fn zoom_png(
        &self,
        session_id: &str,
        request: &ZoomRequest,
    ) -> Result<WithPng<Screenshot>, ClientError> {
        self.post_png("zoom", session_id, "/zoom", request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shot_json(sha256: &str, png_base64: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "png_base64": png_base64, "width": 2, "height": 1, "sequence": 3,
            "timestamp_ms": 4, "app_maximized": true, "sha256": sha256,
        }))
        .expect("serializes")
    }

    fn binary(json: &[u8], png: &[u8]) -> (HeaderValue, Bytes) {
        let content_type = format!("{ANSWER_PNG_MEDIA_TYPE}; json={}", json.len());
        let body = [json, png].concat();
        (
            HeaderValue::from_str(&content_type).expect("a header"),
            Bytes::from(body),
        )
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n pixels";

    #[test]
    fn a_binary_answer_splits_into_its_json_and_checked_png() {
        let (content_type, body) = binary(&shot_json(&desk_contract::sha256_hex(PNG), ""), PNG);
        let read: WithPng<Screenshot> = split("t", Some(&content_type), body).expect("reads");
        assert_eq!(read.png.as_deref(), Some(PNG));
        assert_eq!(read.answer.width, 2);
        assert!(read.binary);
    }

    #[test]
    fn a_mismatching_hash_is_refused() {
        let (content_type, body) =
            binary(&shot_json(&desk_contract::sha256_hex(b"other"), ""), PNG);
        let error = split::<Screenshot>("t", Some(&content_type), body).expect_err("refused");
        assert!(
            matches!(&error, ClientError::Decode { message, .. } if message.contains("SHA-256")),
            "{error:?}"
        );
        // The same from a JSON answer's base64.
        let json = shot_json(
            &desk_contract::sha256_hex(b"other"),
            &desk_contract::b64::encode(PNG),
        );
        let error = split::<Screenshot>("t", None, Bytes::from(json)).expect_err("refused");
        assert!(matches!(error, ClientError::Decode { .. }), "{error:?}");
    }

    #[test]
    fn a_json_answer_gives_its_decoded_png() {
        let json = shot_json(
            &desk_contract::sha256_hex(PNG),
            &desk_contract::b64::encode(PNG),
        );
        let content_type = HeaderValue::from_static("application/json");
        let read: WithPng<Screenshot> =
            split("t", Some(&content_type), Bytes::from(json)).expect("reads");
        assert_eq!(read.png.as_deref(), Some(PNG));
        assert!(read.answer.png_base64.is_empty());
        assert!(!read.binary);
    }

    #[test]
    fn a_withheld_frame_has_no_png() {
        let (content_type, body) = binary(&shot_json("ab", ""), b"");
        let read: WithPng<Screenshot> = split("t", Some(&content_type), body).expect("reads");
        assert!(read.png.is_none());
    }

    #[test]
    fn a_bad_json_length_is_refused() {
        let json = shot_json(&desk_contract::sha256_hex(PNG), "");
        for content_type in [
            format!(
                "{ANSWER_PNG_MEDIA_TYPE}; json={}",
                json.len() + PNG.len() + 1
            ),
            format!("{ANSWER_PNG_MEDIA_TYPE}; json=x"),
            ANSWER_PNG_MEDIA_TYPE.to_string(),
            format!("{ANSWER_PNG_MEDIA_TYPE}; json=3"),
        ] {
            let body = Bytes::from([json.as_slice(), PNG].concat());
            let content_type = HeaderValue::from_str(&content_type).expect("a header");
            let error = split::<Screenshot>("t", Some(&content_type), body).expect_err("refused");
            assert!(matches!(error, ClientError::Decode { .. }), "{error:?}");
        }
    }
}
