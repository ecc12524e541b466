//! Short-lived orchestration credentials: Ed25519-signed, expiring, scoped bearer tokens that
//! admit a TCP client without a client certificate to the non-session routes (`lease`,
//! `metrics`).
//!
//! Format: `base64url(JCS(claims)) "." base64url(signature)`, both without padding, where the
//! signature is Ed25519 over exactly the JCS bytes of the claims. Verification refuses a payload
//! that is not the canonical encoding of what it parses to (one credential has one encoding), a
//! payload that is not strict JSON with exactly the claim fields, a version other than 1, an
//! expired or not-yet-valid credential and a lifetime above [`MAX_TTL_MS`]. Error messages name
//! the reason, never the credential.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use desk_evidence::{SigningKey, VerifyingKey, canonical_bytes};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;

/// The longest lifetime a credential may have: one day.
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Accepted clock skew for `iat_ms` in the future.
const SKEW_MS: u64 = 60 * 1000;
/// Longest accepted credential text.
const MAX_LEN: usize = 4096;

/// What a credential allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// `POST /v1/leases`.
    Lease,
    /// `GET /v1/metrics`.
    Metrics,
    /// `POST /v1/sessions/{id}/kill`: the operator's kill switch.
    Kill,
    /// The screenshot gate's review routes (`/v1/reviews…`), verified with the reviewer key
    /// (`serve --reviewer-pub`), never the orchestrator's.
    Review,
    /// `POST /v1/sessions/{id}/approvals`, verified with the policy's approver key, never the
    /// orchestrator's (`docs/approvals.md`).
    Approve,
}

impl Scope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Lease => "lease",
            Scope::Metrics => "metrics",
            Scope::Kill => "kill",
            Scope::Review => "review",
            Scope::Approve => "approve",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "lease" => Some(Scope::Lease),
            "metrics" => Some(Scope::Metrics),
            "kill" => Some(Scope::Kill),
            "review" => Some(Scope::Review),
            "approve" => Some(Scope::Approve),
            _ => None,
        }
    }
}

/// The signed claims of a credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Format version, 1.
    pub v: u32,
    /// Who the credential was issued to (free text, logged).
    pub sub: String,
    /// What it allows.
    pub scope: Vec<Scope>,
    /// Issued at, milliseconds since the Unix epoch.
    pub iat_ms: u64,
    /// Expires at, milliseconds since the Unix epoch (exclusive).
    pub exp_ms: u64,
}

fn refused(reason: &str) -> BrokerError {
    BrokerError::Unauthorized(format!("orchestration credential refused: {reason}"))
}

/// Issues a credential for `sub` with `scope`, valid from `now_ms` for `ttl_ms`.
pub fn issue(
    key: &SigningKey,
    sub: &str,
    scope: &[Scope],
    now_ms: u64,
    ttl_ms: u64,
) -> Result<String, BrokerError> {
    if ttl_ms == 0 || ttl_ms > MAX_TTL_MS {
        return Err(BrokerError::InvalidRequest(format!(
            "a credential lifetime must be between 1 ms and {MAX_TTL_MS} ms"
        )));
    }
    if scope.is_empty() {
        return Err(BrokerError::InvalidRequest(
            "a credential needs at least one scope".to_string(),
        ));
    }
    let claims = Claims {
        v: 1,
        sub: sub.to_string(),
        scope: scope.to_vec(),
        iat_ms: now_ms,
        exp_ms: now_ms.saturating_add(ttl_ms),
    };
    let payload = canonical_bytes(&claims)
        .map_err(|error| BrokerError::InvalidRequest(format!("bad credential claims: {error}")))?;
    let signature = key.sign_bytes(&payload);
    Ok(format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

fn decode_part(text: &str) -> Option<Vec<u8>> {
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    (URL_SAFE_NO_PAD.encode(&bytes) == text).then_some(bytes)
}

/// Verifies `text` with `key` at `now_ms` and returns its claims. Scope is the caller's check.
pub fn verify(key: &VerifyingKey, text: &str, now_ms: u64) -> Result<Claims, BrokerError> {
    if text.len() > MAX_LEN {
        return Err(refused("too long"));
    }
    let (payload_text, signature_text) = text
        .split_once('.')
        .ok_or_else(|| refused("not of the form payload.signature"))?;
    let payload = decode_part(payload_text).ok_or_else(|| refused("payload is not base64url"))?;
    let signature = decode_part(signature_text)
        .and_then(|bytes| <[u8; 64]>::try_from(bytes.as_slice()).ok())
        .ok_or_else(|| refused("signature is not 64 bytes of base64url"))?;
    if !key.verify_bytes(&payload, &signature) {
        return Err(refused("bad signature"));
    }
    let claims: Claims = desk_evidence::strict::parse_typed(&payload)
        .map_err(|_| refused("claims are not valid strict JSON"))?;
    let canonical = canonical_bytes(&claims).map_err(|_| refused("claims are not canonical"))?;
    if canonical != payload {
        return Err(refused("claims are not canonical"));
    }
    if claims.v != 1 {
        return Err(refused("unknown version"));
    }
    if claims.exp_ms <= claims.iat_ms || claims.exp_ms - claims.iat_ms > MAX_TTL_MS {
        return Err(refused("lifetime out of range"));
    }
    if claims.iat_ms > now_ms.saturating_add(SKEW_MS) {
        return Err(refused("not yet valid"));
    }
    if now_ms >= claims.exp_ms {
        return Err(refused("expired"));
    }
    Ok(claims)
}

/// Parses a lifetime such as `90s`, `15m`, `2h` or `1d`.
pub fn parse_ttl_ms(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let unit_ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60 * 1000,
        "h" => 60 * 60 * 1000,
        "d" => 24 * 60 * 60 * 1000,
        _ => return None,
    };
    number.checked_mul(unit_ms)
}
