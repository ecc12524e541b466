//! The observer's own directory and signing key, apart from the broker's and the watchdog's.
//!
//! Layout: `<state_dir>.observer/` beside the state directory, 0700, holding `observer.key`
//! (0600, its Ed25519 key, created at its first start, never the broker's evidence key nor the
//! watchdog's) and `observer.pub` (its public key: what the broker verifies observations with).
//! Under a root broker the observer runs under a uid of its own (`deskbroker observer` claims it
//! and gives it this directory before it drops to it), so no other non-root uid reads the key; a
//! broker that is not root shares its uid with its observer (identity `shared`).

use std::path::{Path, PathBuf};

use desk_evidence::{SigningKey, VerifyingKey};

use crate::error::BrokerError;

/// The observer's private key file inside its directory.
pub const OBSERVER_KEY_FILE: &str = "observer.key";
/// The observer's public key file inside its directory.
pub const OBSERVER_PUBLIC_KEY_FILE: &str = "observer.pub";

/// `<state_dir>.observer`: the observer's directory for the broker state at `state_dir`.
pub fn observer_dir(state_dir: &Path) -> PathBuf {
    match state_dir.file_name() {
        Some(name) => {
            let mut name = name.to_os_string();
            name.push(".observer");
            state_dir.with_file_name(name)
        }
        None => state_dir.join("observer"),
    }
}

/// `<state_dir>.observer/observer.pub`.
pub fn public_key_path(state_dir: &Path) -> PathBuf {
    observer_dir(state_dir).join(OBSERVER_PUBLIC_KEY_FILE)
}

fn key_error(operation: &'static str) -> impl FnOnce(desk_evidence::EvidenceError) -> BrokerError {
    move |source| BrokerError::Evidence {
        operation,
        source: Box::new(source),
    }
}

/// The observer's public key, when its observer ever started (`None`: no `observer.pub`).
pub fn read_public_key(state_dir: &Path) -> Result<Option<VerifyingKey>, BrokerError> {
    let path = public_key_path(state_dir);
    if !path.exists() {
        return Ok(None);
    }
    VerifyingKey::read(&path)
        .map(Some)
        .map_err(key_error("read the observer's public key"))
}

/// Loads the observer's key, creating its directory (0700) and the key (0600) with
/// `observer.pub` at first start. Refused: an `observer.pub` of another key, and a key equal to
/// one of `others` (the broker's evidence key, the watchdog's).
pub fn load_or_create(
    state_dir: &Path,
    others: &[VerifyingKey],
) -> Result<SigningKey, BrokerError> {
    let directory = observer_dir(state_dir);
    crate::private::ensure_private_dir(&directory, crate::private::DirUse::State)?;
    let path = directory.join(OBSERVER_KEY_FILE);
    let key = if path.exists() {
        SigningKey::read(&path).map_err(key_error("read the observer key"))?
    } else {
        let key = SigningKey::generate().map_err(key_error("create the observer key"))?;
        key.write(&path)
            .map_err(key_error("write the observer key"))?;
        tracing::info!(path = %path.display(), "created the observer's signing key");
        key
    };
    let public = key.verifying_key();
    if others.contains(&public) {
        return Err(BrokerError::Internal(format!(
            "{} is another signer's key; the observer signs with a key of its own",
            path.display()
        )));
    }
    let public_path = directory.join(OBSERVER_PUBLIC_KEY_FILE);
    match read_public_key(state_dir)? {
        Some(written) if written != public => {
            return Err(BrokerError::Internal(format!(
                "{} belongs to another key than {}; move it away",
                public_path.display(),
                path.display()
            )));
        }
        Some(_) => {}
        None => public
            .write(&public_path)
            .map_err(key_error("write the observer's public key"))?,
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn the_observer_key_is_private_beside_the_state_directory_and_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state");
        assert_eq!(observer_dir(&state), dir.path().join("state.observer"));
        let key = load_or_create(&state, &[]).expect("created");
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&observer_dir(&state)), 0o700);
        assert_eq!(mode(&observer_dir(&state).join(OBSERVER_KEY_FILE)), 0o600);
        assert_eq!(
            read_public_key(&state).expect("read"),
            Some(key.verifying_key())
        );
        let again = load_or_create(&state, &[]).expect("loaded");
        assert_eq!(again.verifying_key(), key.verifying_key());
        assert!(load_or_create(&state, &[key.verifying_key()]).is_err());
        std::fs::remove_file(public_key_path(&state)).expect("remove");
        SigningKey::generate()
            .expect("key")
            .verifying_key()
            .write(&public_key_path(&state))
            .expect("write");
        assert!(load_or_create(&state, &[]).is_err());
    }
}
