//! JSON answers that carry a screenshot. A 1080p frame's base64 is about 700 KB, and escaping it
//! character by character was the largest single cost of serializing an action's answer. Base64
//! (`A–Z a–z 0–9 + / =`) needs no escaping in JSON, so the answer is serialized with an empty
//! `png_base64` and the base64 copied into place: the bytes are exactly those `serde_json` would
//! have written.
//!
//! The place is the first `"png_base64":""` in the JSON. Inside a JSON string every quote is
//! escaped (`\"`), so that byte sequence can only be the field itself, never text a client sent
//! (an action's `intent`, say); each answer carries at most one screenshot.

use axum::http::header;
use axum::response::{IntoResponse, Response};

use desk_broker::BrokerError;
use desk_broker::CarriesShot;

/// The field as it appears, empty, in the serialized answer.
const EMPTY_PNG_FIELD: &[u8] = br#""png_base64":"""#;

/// An answer whose screenshot (if any) is serialized by copying its base64.
pub(crate) struct ShotJson<T>(pub(crate) T);

/// The JSON of `answer`, its base64 copied into place.
pub(crate) fn to_vec(mut answer: impl CarriesShot) -> Result<Vec<u8>, BrokerError> {
    let serialize = BrokerError::json("serialize an answer");
    let png = answer
        .screenshot_mut()
        .map(|shot| std::mem::take(&mut shot.png_base64))
        .unwrap_or_default();
    let json = serde_json::to_vec(&answer).map_err(serialize)?;
    if png.is_empty() {
        return Ok(json);
    }
    let Some(at) = json
        .windows(EMPTY_PNG_FIELD.len())
        .position(|window| window == EMPTY_PNG_FIELD)
    else {
        return Err(BrokerError::Internal(
            "a serialized screenshot has no png_base64 field".to_string(),
        ));
    };
    let value_at = at + EMPTY_PNG_FIELD.len() - 1;
    let mut out = Vec::with_capacity(json.len() + png.len());
    out.extend_from_slice(&json[..value_at]);
    out.extend_from_slice(png.as_bytes());
    out.extend_from_slice(&json[value_at..]);
    Ok(out)
}

impl<T: CarriesShot> IntoResponse for ShotJson<T> {
    fn into_response(self) -> Response {
        match to_vec(self.0) {
            Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(error) => crate::api_error::ApiError(error).into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use desk_contract::api::Screenshot;
    use serde::Serialize;

    use super::*;

    fn shot(png_base64: &str, sha256: &str) -> Screenshot {
        serde_json::from_value(serde_json::json!({
            "png_base64": png_base64, "width": 2, "height": 1, "sequence": 3,
            "timestamp_ms": 4, "app_maximized": true, "sha256": sha256,
        }))
        .expect("a screenshot")
    }

    fn same_as_serde_json(png_base64: &str, sha256: &str) {
        let spliced = to_vec(shot(png_base64, sha256)).expect("serializes");
        let plain = serde_json::to_vec(&shot(png_base64, sha256)).expect("serializes");
        assert_eq!(
            String::from_utf8_lossy(&spliced),
            String::from_utf8_lossy(&plain)
        );
    }

    #[test]
    fn the_copied_base64_gives_the_bytes_serde_json_writes() {
        same_as_serde_json("iVBORw0KGgo+/AAAA==", "ab");
        // No screenshot bytes: plain JSON.
        same_as_serde_json("", "ab");
    }

    /// An answer with client text before its screenshot, as an action's intent can be.
    #[derive(Serialize)]
    struct Noted {
        note: String,
        shot: Screenshot,
    }

    impl CarriesShot for Noted {
        fn screenshot(&self) -> Option<&Screenshot> {
            Some(&self.shot)
        }
        fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
            Some(&mut self.shot)
        }
    }

    #[test]
    fn the_field_pattern_inside_a_string_is_not_the_place() {
        // A string holding the pattern is escaped in JSON, so it cannot be taken for the field.
        let noted = || Noted {
            note: r#"x"png_base64":"" y"#.to_string(),
            shot: shot("QUJD", "ab"),
        };
        let spliced = to_vec(noted()).expect("serializes");
        let plain = serde_json::to_vec(&noted()).expect("serializes");
        assert_eq!(
            String::from_utf8_lossy(&spliced),
            String::from_utf8_lossy(&plain)
        );
    }
}
