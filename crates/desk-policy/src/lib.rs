//! deskbroker's signed workspace policy: what a session's workspace may be and do, authored in
//! YAML, linted, signed and verified.
//!
//! - `yaml.rs`: strict YAML (no duplicate keys, anchors, aliases, tags, merge keys, or
//!   booleans other than `true`/`false`) into JSON.
//! - [`lint`]: every rule of [`Rule`] over a document, all violations at once.
//! - [`Policy`]: the linted document and what it states ([`Policy::limits`],
//!   [`Policy::clipboard_mode`], [`Policy::network`], [`Policy::frame_retention`], the allowed
//!   profiles, the validity window, [`Policy::approvals`]: the optional high-risk targets and
//!   approver of `approvals.rs`).
//! - [`sign`], [`verify`]: the Ed25519 envelope over the RFC 8785 bytes (desk-evidence's), the
//!   validity window against a clock passed in, and [`digest`].
//! - [`default_policy`]: the built-in policy a broker uses when given none.
//!
//! No network and no clock of its own; file I/O only in [`read_file`].

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod approvals;
mod default;
mod document;
mod error;
mod lint;
mod rules;
mod signed;
mod yaml;

use std::io::Read as _;
use std::path::Path;

pub use approvals::{Approvals, HighRiskTarget, MAX_RECEIPT_TTL_SECONDS, MAX_TARGETS};
pub use default::default_policy;
pub use desk_evidence::{Envelope, SigningKey, VerifyingKey};
pub use document::{ClipboardMode, FrameRetention, Limits, Network, Policy};
pub use error::PolicyError;
pub use rules::{Rule, SCHEMA_VERSION, Violation, parse_utc};
pub use signed::{
    MAX_SIGNED_BYTES, VerifiedPolicy, check_distinct, digest, sign, verify, verify_signature,
};
pub use yaml::{MAX_DEPTH, MAX_YAML_BYTES};

/// Lints a YAML policy: every violated rule, in document order; empty when it passes.
pub fn lint(text: &str) -> Vec<Violation> {
    match Policy::from_yaml(text) {
        Ok(_) => Vec::new(),
        Err(PolicyError::Lint(violations)) => violations,
        Err(other) => vec![Violation {
            rule: Rule::YamlSyntax,
            path: "$".to_string(),
            message: other.to_string(),
        }],
    }
}

/// Reads at most `limit` bytes of `path`; a longer file is refused, not truncated.
pub fn read_file(path: &Path, limit: usize) -> Result<Vec<u8>, PolicyError> {
    let io = |operation| {
        move |source| PolicyError::Io {
            operation,
            path: path.to_path_buf(),
            source,
        }
    };
    let file = std::fs::File::open(path).map_err(io("open"))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io("read"))?;
    if bytes.len() > limit {
        return Err(io("read")(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
