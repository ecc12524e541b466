//! Canonical bytes (RFC 8785 / JCS), SHA-256 digests, Ed25519 keys and the signed envelope
//! `{"payload": <object>, "signature_b64": "<Ed25519 over JCS(payload)>"}`.
//!
//! Invariants: signatures always cover the JCS bytes of the payload, never the bytes as read;
//! verification uses `verify_strict` (no weak keys, no malleable signatures); `signature_b64` is
//! canonical standard base64 with padding; a value whose integers exceed ±(2^53 − 1) is refused
//! before canonicalization, because JCS would silently round it to a double.

use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
pub use desk_contract::sha256_hex;
use ed25519_dalek::Signer as _;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::EvidenceError;
use crate::files;
use crate::strict;

/// The RFC 8785 canonical bytes of `value`, after [`strict::check_value`].
pub fn canonical_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, EvidenceError> {
    let value =
        serde_json::to_value(value).map_err(|error| EvidenceError::Canonical(error.to_string()))?;
    strict::check_value(&value)?;
    serde_json_canonicalizer::to_vec(&value)
        .map_err(|error| EvidenceError::Canonical(error.to_string()))
}

/// SHA-256 (hex) of `value`'s [`canonical_bytes`]: the digest of a JSON value that does not
/// depend on key order or formatting.
pub fn canonical_sha256<T: Serialize + ?Sized>(value: &T) -> Result<String, EvidenceError> {
    canonical_bytes(value).map(|bytes| sha256_hex(&bytes))
}

/// An Ed25519 private key. `Debug` never prints the secret.
#[derive(Clone)]
pub struct SigningKey {
    inner: ed25519_dalek::SigningKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SigningKey")
            .field("public", &self.verifying_key().fingerprint())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<Self, EvidenceError> {
        let mut secret = [0_u8; 32];
        getrandom::fill(&mut secret).map_err(|error| EvidenceError::Key {
            operation: "generate",
            path: Default::default(),
            reason: error.to_string(),
        })?;
        Ok(Self::from_bytes(&secret))
    }

    /// The key with this 32-byte secret seed.
    pub fn from_bytes(secret: &[u8; 32]) -> Self {
        Self {
            inner: ed25519_dalek::SigningKey::from_bytes(secret),
        }
    }

    /// The matching public key.
    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey {
            inner: self.inner.verifying_key(),
        }
    }

    /// The raw signature over `message`.
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.inner.sign(message).to_bytes()
    }

    /// Writes the key as a PKCS#8 PEM file with mode 0600, refusing to overwrite.
    pub fn write(&self, path: &Path) -> Result<(), EvidenceError> {
        let pem = self
            .inner
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|error| key_error("encode", path, error))?;
        files::write_new(path, pem.as_bytes(), 0o600)
    }

    /// Reads a key written by [`SigningKey::write`], or a file holding the raw 32-byte seed in
    /// standard base64.
    pub fn read(path: &Path) -> Result<Self, EvidenceError> {
        let text = read_key_text(path)?;
        if text.starts_with("-----BEGIN") {
            let inner = ed25519_dalek::SigningKey::from_pkcs8_pem(&text)
                .map_err(|error| key_error("decode", path, error))?;
            return Ok(Self { inner });
        }
        let seed = decode_raw_key(&text, path)?;
        Ok(Self::from_bytes(&seed))
    }
}

/// An Ed25519 public key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct VerifyingKey {
    inner: ed25519_dalek::VerifyingKey,
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "VerifyingKey({})", self.fingerprint())
    }
}

impl VerifyingKey {
    /// The key with these 32 public bytes; weak or malformed points are refused.
    pub fn from_bytes(public: &[u8; 32]) -> Result<Self, EvidenceError> {
        let inner = ed25519_dalek::VerifyingKey::from_bytes(public)
            .map_err(|error| key_error("decode", Path::new(""), error))?;
        if inner.is_weak() {
            return Err(key_error("decode", Path::new(""), "weak public key"));
        }
        Ok(Self { inner })
    }

    /// The 32 public bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.inner.to_bytes()
    }

    /// The 32 public bytes in standard base64 (how a bundle's manifest names the watchdog's
    /// key).
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.to_bytes())
    }

    /// The key [`VerifyingKey::to_base64`] wrote; anything else is refused.
    pub fn from_base64(text: &str) -> Result<Self, EvidenceError> {
        let bytes = decode_base64(text)
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            .ok_or_else(|| key_error("decode", Path::new(""), "not 32 bytes of base64"))?;
        Self::from_bytes(&bytes)
    }

    /// `sha256:<hex of the 32 public bytes>`, the name bundles use for their signer.
    pub fn fingerprint(&self) -> String {
        format!("sha256:{}", sha256_hex(&self.to_bytes()))
    }

    /// Verifies a raw signature over `message` with `verify_strict`.
    pub fn verify_bytes(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        let signature = ed25519_dalek::Signature::from_bytes(signature);
        self.inner.verify_strict(message, &signature).is_ok()
    }

    /// Writes the key as an SPKI PEM file (mode 0644), refusing to overwrite.
    pub fn write(&self, path: &Path) -> Result<(), EvidenceError> {
        let pem = self
            .inner
            .to_public_key_pem(LineEnding::LF)
            .map_err(|error| key_error("encode", path, error))?;
        files::write_new(path, pem.as_bytes(), 0o644)
    }

    /// Reads a key written by [`VerifyingKey::write`], or a file holding the raw 32 public
    /// bytes in standard base64.
    pub fn read(path: &Path) -> Result<Self, EvidenceError> {
        let text = read_key_text(path)?;
        if text.starts_with("-----BEGIN") {
            let inner = ed25519_dalek::VerifyingKey::from_public_key_pem(&text)
                .map_err(|error| key_error("decode", path, error))?;
            return Self::from_bytes(&inner.to_bytes());
        }
        let public = decode_raw_key(&text, path)?;
        Self::from_bytes(&public).map_err(|error| match error {
            EvidenceError::Key { reason, .. } => key_error("decode", path, reason),
            other => other,
        })
    }
}

fn key_error(operation: &'static str, path: &Path, reason: impl fmt::Display) -> EvidenceError {
    EvidenceError::Key {
        operation,
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn read_key_text(path: &Path) -> Result<String, EvidenceError> {
    let bytes = files::read_limited(path, 16 * 1024)?;
    let text = String::from_utf8(bytes).map_err(|_| key_error("read", path, "not UTF-8"))?;
    Ok(text.trim().to_string())
}

fn decode_raw_key(text: &str, path: &Path) -> Result<[u8; 32], EvidenceError> {
    let bytes = decode_base64(text).ok_or_else(|| key_error("decode", path, "not base64"))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        key_error(
            "decode",
            path,
            format!("{} bytes, expected 32", bytes.len()),
        )
    })
}

/// Decodes canonical standard base64 (padding required, no trailing bits, one encoding only).
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let bytes = STANDARD.decode(text).ok()?;
    (STANDARD.encode(&bytes) == text).then_some(bytes)
}

/// A signed envelope: an object payload and the Ed25519 signature over its JCS bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The signed object.
    pub payload: Map<String, Value>,
    /// Standard base64 (with padding) of the 64-byte Ed25519 signature over JCS(`payload`).
    pub signature_b64: String,
}

impl Envelope {
    /// Signs `payload`, which must serialize to a JSON object.
    pub fn sign<T: Serialize + ?Sized>(
        payload: &T,
        key: &SigningKey,
    ) -> Result<Self, EvidenceError> {
        let value = serde_json::to_value(payload)
            .map_err(|error| EvidenceError::Canonical(error.to_string()))?;
        let Value::Object(payload) = value else {
            return Err(EvidenceError::Canonical(
                "an envelope payload must be a JSON object".to_string(),
            ));
        };
        let signature = key.sign_bytes(&canonical_bytes(&payload)?);
        Ok(Self {
            payload,
            signature_b64: STANDARD.encode(signature),
        })
    }

    /// Parses one envelope strictly (exact key set `{payload, signature_b64}`).
    pub fn parse(bytes: &[u8]) -> Result<Self, EvidenceError> {
        strict::parse_typed(bytes)
    }

    /// Verifies the signature against `key`.
    pub fn verify(&self, key: &VerifyingKey) -> Result<(), EvidenceError> {
        let signature = decode_base64(&self.signature_b64)
            .and_then(|bytes| <[u8; 64]>::try_from(bytes.as_slice()).ok())
            .ok_or_else(|| {
                EvidenceError::Signature("signature_b64 is not 64 bytes of base64".to_string())
            })?;
        if key.verify_bytes(&canonical_bytes(&self.payload)?, &signature) {
            Ok(())
        } else {
            Err(EvidenceError::Signature(format!(
                "signature does not verify with key {}",
                key.fingerprint()
            )))
        }
    }

    /// The JCS bytes of the whole envelope: what a journal line holds (without its newline).
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, EvidenceError> {
        canonical_bytes(self)
    }

    /// SHA-256 (hex) of [`Envelope::canonical_bytes`]: the chain link of journal records.
    pub fn digest(&self) -> Result<String, EvidenceError> {
        Ok(sha256_hex(&self.canonical_bytes()?))
    }

    /// The payload as the exact typed record `T` (paths start at `$.payload`).
    pub fn decode_payload<T: DeserializeOwned + Serialize>(&self) -> Result<T, EvidenceError> {
        strict::from_value_exact(Value::Object(self.payload.clone()), "$.payload")
    }
}

#[cfg(test)]
mod tests;
