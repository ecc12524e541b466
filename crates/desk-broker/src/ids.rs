//! Typed ids: the one home of [`SessionId`] and [`RequestId`], so a request id, lease token, task
//! id or attempt id cannot be passed where a session id is expected, nor a session id where an
//! action's request id is.
//!
//! On the wire and in SQLite both stay plain strings (`#[serde(transparent)]`, stored as `TEXT`);
//! only the broker's generator ([`SessionId::generate`]), the parsers of received ids
//! ([`SessionId::parse`], [`RequestId::parse`]) and the store's reader (`FromSql`) construct one.

use std::fmt;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::BrokerError;
use crate::util::check_identifier;

/// Longest accepted session id, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 64;

/// Whether `id` can be a session id at all: 1 to [`MAX_SESSION_ID_BYTES`] ASCII letters, digits,
/// `_` or `-`. Anything else is refused before any lookup.
pub(crate) fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_ID_BYTES
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// A session id. The broker mints `s_` and 32 lowercase hex digits; ids received from a client
/// or read back from the store are any plain token ([`is_plain_id`]), so an unknown id is a
/// lookup miss (404), not a parse error.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// A fresh random session id: `s_` and 32 lowercase hex digits.
    pub(crate) fn generate() -> Result<Self, BrokerError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|error| {
            BrokerError::Internal(format!("failed to draw a session id: {error}"))
        })?;
        Ok(Self(format!("s_{}", hex::encode(bytes))))
    }

    /// A session id received from outside the broker (a path segment, a command-line argument):
    /// refused unless it is a plain token.
    pub fn parse(text: &str) -> Result<Self, BrokerError> {
        if is_plain_id(text) {
            Ok(Self(text.to_string()))
        } else {
            Err(BrokerError::InvalidRequest(format!(
                "bad session id: expected 1 to {MAX_SESSION_ID_BYTES} letters, digits, '_' or '-'"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Read from stored JSON (a kill tombstone): the plain string, refused unless a plain token.
impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if is_plain_id(&text) {
            Ok(Self(text))
        } else {
            Err(serde::de::Error::custom(format!(
                "session id {text:?} is not a plain token"
            )))
        }
    }
}

/// Stored as the plain string, byte for byte.
impl ToSql for SessionId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0.as_str()))
    }
}

/// Read back from a `TEXT` column; a stored id that is not a plain token is a store error.
impl FromSql for SessionId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        if is_plain_id(text) {
            Ok(Self(text.to_string()))
        } else {
            Err(FromSqlError::Other(
                format!("stored session id {text:?} is not a plain token").into(),
            ))
        }
    }
}

/// An action's or program's `request_id`, once checked: 1 to 200 printable ASCII characters
/// without spaces. Every journaled action has one; a refused request's raw id (never checked)
/// stays a `&str`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub(crate) struct RequestId(String);

impl RequestId {
    /// A request id received from a client, refused with `invalid_request` unless valid.
    pub(crate) fn parse(text: &str) -> Result<Self, BrokerError> {
        check_identifier("request_id", text)?;
        Ok(Self(text.to_string()))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl AsRef<str> for RequestId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl ToSql for RequestId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0.as_str()))
    }
}

impl FromSql for RequestId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        Self::parse(text).map_err(|error| FromSqlError::Other(error.to_string().into()))
    }
}

/// A session id for unit tests, from a literal known to be a plain token.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn sid(text: &str) -> SessionId {
    SessionId::parse(text).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_s_and_32_hex_digits_and_parse_back() -> Result<(), BrokerError> {
        let id = SessionId::generate()?;
        let hex = id.as_str().strip_prefix("s_").unwrap_or_default();
        assert_eq!(hex.len(), 32, "{id}");
        assert!(
            hex.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(SessionId::parse(id.as_str())?, id);
        assert_eq!(serde_json::to_string(&id).ok(), Some(format!("\"{id}\"")));
        assert!(SessionId::parse("../etc").is_err());
        Ok(())
    }

    #[test]
    fn request_ids_are_printable_ascii_tokens() -> Result<(), BrokerError> {
        let id = RequestId::parse("req-1/a:b")?;
        assert_eq!(
            serde_json::to_string(&id).ok(),
            Some("\"req-1/a:b\"".to_string())
        );
        for refused in [
            String::new(),
            "a b".to_string(),
            "é".to_string(),
            "a".repeat(201),
        ] {
            assert!(RequestId::parse(&refused).is_err(), "{refused:?}");
        }
        Ok(())
    }

    #[test]
    fn session_ids_are_plain_tokens() {
        assert!(is_plain_id("s_0123456789abcdef0123456789abcdef"));
        assert!(is_plain_id("s_missing"));
        assert!(is_plain_id(&"a".repeat(MAX_SESSION_ID_BYTES)));
        for refused in [
            String::new(),
            "a".repeat(MAX_SESSION_ID_BYTES + 1),
            "s x".to_string(),
            "a.b".to_string(),
            "../etc".to_string(),
            "é".to_string(),
            "a\0b".to_string(),
        ] {
            assert!(!is_plain_id(&refused), "{refused:?}");
        }
    }
}
