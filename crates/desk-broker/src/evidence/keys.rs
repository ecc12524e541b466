//! The broker's evidence signing key: loaded from the configured file or created at first start
//! (0600), with `evidence.pub` published beside it.

use super::*;

/// Loads the signing key: the configured file, or `<state_dir>/evidence/signing.key`, which is
/// created (0600) on first use. Writes `evidence.pub` beside it when missing and refuses a
/// stale one that belongs to another key.
pub(super) fn load_or_create_key(
    state_dir: &Path,
    configured: Option<&Path>,
) -> Result<SigningKey, EvidenceError> {
    let directory = evidence_dir(state_dir);
    create_private_dir(state_dir, &directory)?;
    let key = match configured {
        Some(path) => SigningKey::read(path)?,
        None => {
            let path = directory.join(SIGNING_KEY_FILE);
            if path.exists() {
                SigningKey::read(&path)?
            } else {
                let key = SigningKey::generate()?;
                key.write(&path)?;
                tracing::info!(path = %path.display(), "created the evidence signing key");
                key
            }
        }
    };
    let public_path = directory.join(PUBLIC_KEY_FILE);
    let public = key.verifying_key();
    if public_path.exists() {
        if VerifyingKey::read(&public_path)? != public {
            return Err(EvidenceError::Key {
                operation: "check",
                path: public_path,
                reason: "it belongs to another key than the signing key; move it away".to_string(),
            });
        }
    } else {
        public.write(&public_path)?;
    }
    tracing::info!(
        fingerprint = public.fingerprint(),
        public_key = %public_path.display(),
        "evidence signing key loaded"
    );
    Ok(key)
}

/// The broker's signing key, loaded once per broker.
pub(super) fn signing_key(evidence: Evidence<'_>) -> Result<SigningKey, EvidenceError> {
    let config = evidence.config;
    let mut cached = lock(&evidence.journals.key);
    if let Some(key) = cached.as_ref() {
        return Ok(key.clone());
    }
    let key = load_or_create_key(&config.state_dir, config.evidence.signing_key.as_deref())?;
    *cached = Some(key.clone());
    Ok(key)
}
