//! Answers that carry a screenshot, in one of two forms.
//!
//! JSON (the default): a 1080p frame's base64 is about 700 KB, and escaping it character by
//! character was the largest single cost of serializing an action's answer. Base64
//! (`A–Z a–z 0–9 + / =`) needs no escaping in JSON, so the answer is serialized with an empty
//! `png_base64` and the base64 copied into place: the bytes are exactly those `serde_json` would
//! have written. The place is the first `"png_base64":""` in the JSON. Inside a JSON string every
//! quote is escaped (`\"`), so that byte sequence can only be the field itself, never text a
//! client sent (an action's `intent`, say); each answer carries at most one screenshot.
//!
//! Binary, when the request's `Accept` names [`ANSWER_PNG_MEDIA_TYPE`]: the body is the JSON
//! answer with `png_base64` empty (N bytes) followed by the raw PNG, typed
//! `application/vnd.deskbroker.answer+png; json=N`; no base64 is made at all. Without an image
//! (none, or withheld by the gate) the body is the JSON alone and N its length. Errors are
//! JSON whatever the `Accept`.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use desk_broker::BrokerError;
use desk_contract::api::ANSWER_PNG_MEDIA_TYPE;
use desk_contract::shot::CarriesShot;

/// The field as it appears, empty, in the serialized answer.
const EMPTY_PNG_FIELD: &[u8] = br#""png_base64":"""#;

/// Which form the caller asked for, read from its `Accept` (never refused: any other value,
/// or none, means JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShotForm {
    /// `application/json`, the PNG as base64 inside.
    Json,
    /// JSON then the raw PNG ([`ANSWER_PNG_MEDIA_TYPE`]).
    Binary,
}

impl ShotForm {
    /// The form an `Accept` value asks for: binary when one of its media ranges is exactly
    /// [`ANSWER_PNG_MEDIA_TYPE`] (case-insensitive) and not refused by a zero weight (`q=0`,
    /// RFC 9110 §12.4.2: "not acceptable"); other parameters are ignored.
    fn of_accept(accept: &[u8]) -> ShotForm {
        let Ok(accept) = std::str::from_utf8(accept) else {
            return ShotForm::Json;
        };
        let named = accept.split(',').any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|parameter| {
                parameter.split_once('=').is_some_and(|(name, weight)| {
                    name.trim().eq_ignore_ascii_case("q")
                        && weight.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
                })
            });
            media.eq_ignore_ascii_case(ANSWER_PNG_MEDIA_TYPE) && !refused
        });
        if named {
            ShotForm::Binary
        } else {
            ShotForm::Json
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ShotForm {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<ShotForm, Infallible> {
        Ok(parts
            .headers
            .get_all(header::ACCEPT)
            .iter()
            .map(|value| ShotForm::of_accept(value.as_bytes()))
            .find(|form| *form == ShotForm::Binary)
            .unwrap_or(ShotForm::Json))
    }
}

/// An answer whose screenshot (if any) is written in the caller's form.
pub(crate) struct ShotJson<T>(pub(crate) T, pub(crate) ShotForm);

/// `answer`'s image taken out (raw when the broker gave the bytes, else decoded from base64),
/// and its JSON with `png_base64` empty.
fn split(mut answer: impl CarriesShot) -> Result<(Vec<u8>, Image), BrokerError> {
    let image = match answer.screenshot_mut() {
        Some(shot) => match shot.png.take() {
            Some(png) => {
                shot.png_base64 = String::new();
                Image::Raw(png.0)
            }
            None => Image::Base64(std::mem::take(&mut shot.png_base64)),
        },
        None => Image::Base64(String::new()),
    };
    let json = serde_json::to_vec(&answer).map_err(BrokerError::json("serialize an answer"))?;
    Ok((json, image))
}

/// A screenshot's image as the broker handed it out.
enum Image {
    Raw(std::sync::Arc<[u8]>),
    /// Empty: no image.
    Base64(String),
}

/// The JSON of `answer`, its base64 copied into place.
pub(crate) fn to_vec(answer: impl CarriesShot) -> Result<Vec<u8>, BrokerError> {
    let (json, image) = split(answer)?;
    let png = match image {
        Image::Raw(png) => desk_contract::b64::encode(&png),
        Image::Base64(png) => png,
    };
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

/// The binary form of `answer`: its `Content-Type` (with `json=N`) and body.
pub(crate) fn to_binary(answer: impl CarriesShot) -> Result<(String, Vec<u8>), BrokerError> {
    let (mut body, image) = split(answer)?;
    let json_len = body.len();
    match image {
        Image::Raw(png) => body.extend_from_slice(&png),
        Image::Base64(png) if png.is_empty() => {}
        Image::Base64(png) => {
            body.extend_from_slice(&desk_contract::b64::decode(&png).ok_or_else(|| {
                BrokerError::Internal("a screenshot's base64 does not decode".to_string())
            })?)
        }
    }
    Ok((format!("{ANSWER_PNG_MEDIA_TYPE}; json={json_len}"), body))
}

impl<T: CarriesShot> IntoResponse for ShotJson<T> {
    fn into_response(self) -> Response {
        let written = match self.1 {
            ShotForm::Json => to_vec(self.0).map(|body| ("application/json".to_string(), body)),
            ShotForm::Binary => to_binary(self.0),
        };
        match written {
            Ok((content_type, body)) => {
                // The form depends on `Accept`: a cache must not hand one caller's to another.
                let headers = [
                    (header::CONTENT_TYPE, content_type),
                    (header::VARY, "accept".to_string()),
                ];
                (headers, body).into_response()
            }
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

    /// The binary body of `answer` split at its `json=N`: the JSON and the PNG bytes.
    fn binary_parts(answer: impl CarriesShot) -> (serde_json::Value, Vec<u8>) {
        let (content_type, body) = to_binary(answer).expect("writes");
        let n: usize = content_type
            .strip_prefix("application/vnd.deskbroker.answer+png; json=")
            .expect("the binary media type with json=N")
            .parse()
            .expect("N is a length");
        assert!(n <= body.len());
        let json = serde_json::from_slice(&body[..n]).expect("the first N bytes are JSON");
        (json, body[n..].to_vec())
    }

    /// A screenshot as the broker hands it out: raw bytes, no base64.
    fn raw_shot(png: &[u8]) -> Screenshot {
        let mut shot = shot("", &desk_contract::sha256_hex(png));
        shot.png = Some(png.into());
        shot
    }

    #[test]
    fn the_binary_form_is_the_json_answer_then_its_png() {
        let png = b"\x89PNG\r\n\x1a\n not really a png \x00\xff".to_vec();
        let json_answer: serde_json::Value =
            serde_json::from_slice(&to_vec(raw_shot(&png)).expect("writes")).expect("JSON");
        let (json, bytes) = binary_parts(raw_shot(&png));
        assert_eq!(bytes, png);
        assert_eq!(
            json_answer["png_base64"],
            serde_json::json!(desk_contract::b64::encode(&bytes))
        );
        let mut expected = json_answer.clone();
        expected["png_base64"] = serde_json::json!("");
        assert_eq!(json, expected);
        // An answer that already holds base64 (a cached one) gives the same binary form.
        let (json, bytes) = binary_parts(shot(&desk_contract::b64::encode(&png), "ab"));
        assert_eq!(bytes, png);
        assert_eq!(json["png_base64"], "");
    }

    #[test]
    fn without_an_image_the_binary_form_is_the_json_alone() {
        // Withheld by the gate: no bytes in either form.
        let mut withheld = raw_shot(b"secret pixels");
        withheld.withhold_image();
        let (content_type, body) = to_binary(withheld.clone()).expect("writes");
        assert_eq!(
            content_type,
            format!("application/vnd.deskbroker.answer+png; json={}", body.len())
        );
        assert_eq!(body, to_vec(withheld).expect("writes"));
        // An answer with no screenshot at all.
        let (content_type, body) = to_binary(NoShot { note: "x" }).expect("writes");
        assert_eq!(
            content_type,
            format!("application/vnd.deskbroker.answer+png; json={}", body.len())
        );
        assert_eq!(body, br#"{"note":"x"}"#);
    }

    #[derive(Serialize)]
    struct NoShot {
        note: &'static str,
    }

    impl CarriesShot for NoShot {
        fn screenshot(&self) -> Option<&Screenshot> {
            None
        }
        fn screenshot_mut(&mut self) -> Option<&mut Screenshot> {
            None
        }
    }

    #[test]
    fn the_raw_bytes_give_the_json_serde_json_writes_with_their_base64() {
        let png = b"\x89PNG some bytes".to_vec();
        let spliced = to_vec(raw_shot(&png)).expect("writes");
        let plain = serde_json::to_vec(&shot(
            &desk_contract::b64::encode(&png),
            &desk_contract::sha256_hex(&png),
        ))
        .expect("serializes");
        assert_eq!(spliced, plain);
    }

    #[test]
    fn accept_names_the_binary_form_exactly() {
        let binary = [
            "application/vnd.deskbroker.answer+png",
            "application/json;q=0.5, Application/Vnd.Deskbroker.Answer+PNG",
            "application/vnd.deskbroker.answer+png; q=1",
        ];
        for accept in binary {
            assert_eq!(
                ShotForm::of_accept(accept.as_bytes()),
                ShotForm::Binary,
                "{accept}"
            );
        }
        let json = [
            "",
            "*/*",
            "application/json",
            "image/png",
            "application/vnd.deskbroker.answer+pngx",
            "application/vnd.deskbroker.answer+png;q=0",
            "application/json, application/vnd.deskbroker.answer+png; Q=0.000",
        ];
        for accept in json {
            assert_eq!(
                ShotForm::of_accept(accept.as_bytes()),
                ShotForm::Json,
                "{accept}"
            );
        }
        assert_eq!(ShotForm::of_accept(b"\xff\xfe"), ShotForm::Json);
    }

    #[test]
    fn errors_stay_json_whatever_the_accept() {
        // A cached answer whose base64 does not decode cannot be written in the binary form:
        // an internal error, answered as plain JSON.
        let response = ShotJson(shot("!!not base64", "ab"), ShotForm::Binary).into_response();
        assert_eq!(
            response.status(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }
}
