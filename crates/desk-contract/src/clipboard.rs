//! The task-scoped clipboard (`GET`/`PUT /v1/sessions/{id}/clipboard`): its wire types, its
//! limits and the pure rules that apply them (`docs/control-session.md`, "Clipboard").
//!
//! Limits (spec CLIP-07/12/13): a read returns at most `max_output_bytes` of the clipboard's
//! UTF-8 text, [`DEFAULT_READ_BYTES`] (64 KiB) when absent and at most [`MAX_READ_BYTES`]
//! (1 MiB); a larger or zero `max_output_bytes` is refused, never clamped. The text returned is
//! an exact prefix cut at a character boundary, with the original `byte_length` and
//! `truncated: true`; no marker text is added. A write carries at most [`CEILING_BYTES`]
//! (16 MiB, 2^24 bytes, inclusive) and no NUL; anything else is refused before the desktop is
//! asked. The same ceiling bounds what a read transfers from the clipboard's owner. Every
//! clipboard operation has a [`DEADLINE_MS`] deadline.
//!
//! Invariant: these functions only decide; they never change what they are given.

use serde::{Deserialize, Serialize};

use crate::control::ControlToken;

/// Default `max_output_bytes` of a read: 64 KiB.
pub const DEFAULT_READ_BYTES: u64 = 64 * 1024;
/// Largest `max_output_bytes` a read accepts: 1 MiB.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;
/// The transport ceiling: the most text a write carries or a read transfers (16 MiB, inclusive).
pub const CEILING_BYTES: u64 = 16 * 1024 * 1024;
/// Deadline of one clipboard operation on the desktop, in milliseconds.
pub const DEADLINE_MS: u64 = 10_000;

/// `PUT /v1/sessions/{id}/clipboard`: replace the clipboard's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClipboardWriteRequest {
    /// The new text (UTF-8, no NUL, at most [`CEILING_BYTES`]); empty clears the clipboard.
    pub text: String,
    /// The control token; required once the session has an owner (as for programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlToken>,
}

/// The answer to a clipboard write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClipboardWritten {
    /// UTF-8 bytes now offered on the session's clipboard.
    pub byte_length: u64,
}

/// The clipboard's text as read (`GET /v1/sessions/{id}/clipboard`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClipboardText {
    /// An exact prefix of the clipboard's text, cut at a character boundary; the whole text
    /// when `truncated` is false. Empty when the clipboard holds nothing.
    pub text: String,
    /// UTF-8 bytes of the whole text on the clipboard.
    pub byte_length: u64,
    /// Whether `text` is shorter than the clipboard's text.
    pub truncated: bool,
}

/// Why a clipboard request was refused before anything was asked of the desktop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClipboardLimitError {
    /// The text holds a NUL character (at this byte offset).
    #[error("text: holds a NUL character at byte {0}; NUL is refused")]
    Nul(u64),
    /// The text is longer than [`CEILING_BYTES`].
    #[error("text: {0} bytes is over the {CEILING_BYTES}-byte clipboard ceiling")]
    OverCeiling(u64),
    /// `max_output_bytes` is 0 or above [`MAX_READ_BYTES`].
    #[error("max_output_bytes: {0} is outside 1..={MAX_READ_BYTES}; it is never clamped")]
    ReadCap(u64),
    /// The query string is malformed (unknown or repeated key, bad value).
    #[error("{0}")]
    Query(String),
}

/// Checks a write's text: at most [`CEILING_BYTES`], no NUL.
pub fn check_write(text: &str) -> Result<(), ClipboardLimitError> {
    let length = text.len() as u64;
    if length > CEILING_BYTES {
        return Err(ClipboardLimitError::OverCeiling(length));
    }
    if let Some(offset) = text.bytes().position(|byte| byte == 0) {
        return Err(ClipboardLimitError::Nul(offset as u64));
    }
    Ok(())
}

/// The read cap for a requested `max_output_bytes`: the default when absent, refused when 0
/// or above [`MAX_READ_BYTES`].
pub fn read_cap(requested: Option<u64>) -> Result<u64, ClipboardLimitError> {
    match requested {
        None => Ok(DEFAULT_READ_BYTES),
        Some(cap) if (1..=MAX_READ_BYTES).contains(&cap) => Ok(cap),
        Some(cap) => Err(ClipboardLimitError::ReadCap(cap)),
    }
}

/// What a read returns of `text` under `cap`: the longest prefix of at most `cap` bytes that
/// ends on a character boundary, the whole length, and whether it was cut.
pub fn truncate(text: &str, cap: u64) -> ClipboardText {
    let byte_length = text.len() as u64;
    let mut end = usize::try_from(cap).unwrap_or(usize::MAX).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    ClipboardText {
        text: text[..end].to_string(),
        byte_length,
        truncated: end < text.len(),
    }
}

/// The query of `GET /v1/sessions/{id}/clipboard`: `max_output_bytes`, and the control token
/// as `owner` and `generation` (both or neither).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClipboardQuery {
    /// The requested read cap; see [`read_cap`].
    pub max_output_bytes: Option<u64>,
    /// The control token.
    pub control: Option<ControlToken>,
}

/// Parses the read's query string strictly: only the three keys, each at most once, decimal
/// numbers without sign or leading zeros, `owner` with `generation`.
pub fn parse_query(query: Option<&str>) -> Result<ClipboardQuery, ClipboardLimitError> {
    let bad = |message: String| ClipboardLimitError::Query(message);
    let number = |key: &str, value: &str| -> Result<u64, ClipboardLimitError> {
        let plain = !value.is_empty()
            && value.len() <= 16
            && value.bytes().all(|byte| byte.is_ascii_digit())
            && (value == "0" || !value.starts_with('0'));
        plain
            .then(|| value.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| {
                bad(format!(
                    "{key}: {:?} is not a decimal number",
                    crate::strict::clip(value)
                ))
            })
    };
    let (mut max_output_bytes, mut owner, mut generation) = (None, None, None);
    for pair in query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let repeated = match key {
            "max_output_bytes" => max_output_bytes.replace(number(key, value)?).is_some(),
            "generation" => generation.replace(number(key, value)?).is_some(),
            "owner" => owner.replace(value.to_string()).is_some(),
            other => {
                return Err(bad(format!(
                    "unknown query parameter {:?}; the clipboard read takes max_output_bytes, \
                     owner and generation",
                    crate::strict::clip(other)
                )));
            }
        };
        if repeated {
            return Err(bad(format!("query parameter {key:?} given twice")));
        }
    }
    let control = match (owner, generation) {
        (Some(owner), Some(generation)) => Some(ControlToken { owner, generation }),
        (None, None) => None,
        _ => {
            return Err(bad(
                "owner and generation form the control token: give both or neither".to_string(),
            ));
        }
    };
    Ok(ClipboardQuery {
        max_output_bytes,
        control,
    })
}

#[cfg(test)]
mod tests;
