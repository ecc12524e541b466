//! Reading a signed workspace policy and its public key from files (`serve --policy`,
//! `bench run --policy`, the watchdog), apart from the broker's start (`local.rs`) so that the
//! watchdog reads them without naming the start that spawns it.

use anyhow::{Context, Result};

/// The signed policy file and its public key as read (both or neither), unverified.
pub(crate) fn read_policy(
    signed: Option<&std::path::Path>,
    public: Option<&std::path::Path>,
) -> Result<Option<desk_broker::PolicyConfig>> {
    let (Some(signed), Some(public)) = (signed, public) else {
        return Ok(None);
    };
    let signed = desk_policy::read_file(signed, desk_policy::MAX_SIGNED_BYTES)
        .with_context(|| format!("failed to read the policy {}", signed.display()))?;
    let public_key = desk_evidence::VerifyingKey::read(public)
        .with_context(|| format!("failed to read the policy key {}", public.display()))?;
    Ok(Some(desk_broker::PolicyConfig { signed, public_key }))
}
