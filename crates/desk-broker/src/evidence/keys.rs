//! The broker's evidence signing key: loaded from the configured file or created at first start
//! (0600), with `evidence.pub` published beside it.

use std::path::Path;

use desk_evidence::{EvidenceError, SigningKey, VerifyingKey};

use super::shared::{PUBLIC_KEY_FILE, SIGNING_KEY_FILE, create_private_dir, evidence_dir};

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
