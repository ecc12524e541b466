//! Serde helper: bytes as standard, padded base64 strings (RFC 4648), backed by the `base64`
//! crate's fast engine: screenshots cross the worker pipe and the HTTP API this way, several
//! hundred kilobytes per action.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serializer};

/// Encodes bytes as padded standard base64.
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes padded standard base64; `None` on any malformed input.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// Serializes bytes as base64.
pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&encode(bytes))
}

/// Deserializes base64 into bytes.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    decode(&text).ok_or_else(|| serde::de::Error::custom("invalid base64"))
}
