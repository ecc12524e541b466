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
use crate::service_key::ServiceKey;

/// The observer's private key file inside its directory.
pub const OBSERVER_KEY_FILE: &str = "observer.key";
/// The observer's public key file inside its directory.
pub const OBSERVER_PUBLIC_KEY_FILE: &str = "observer.pub";

/// The observer's directory and key, in the shape it shares with the watchdog's.
const SERVICE: ServiceKey = ServiceKey {
    name: "observer",
    key_file: OBSERVER_KEY_FILE,
    public_key_file: OBSERVER_PUBLIC_KEY_FILE,
    read_public_op: "read the observer's public key",
    read_key_op: "read the observer key",
    create_key_op: "create the observer key",
    write_key_op: "write the observer key",
    write_public_op: "write the observer's public key",
    foreign_key: "is another signer's key; the observer signs with a key of its own",
    refusal: BrokerError::Internal,
};

/// `<state_dir>.observer`: the observer's directory for the broker state at `state_dir`.
pub fn observer_dir(state_dir: &Path) -> PathBuf {
    SERVICE.dir(state_dir)
}

/// `<state_dir>.observer/observer.pub`.
pub fn public_key_path(state_dir: &Path) -> PathBuf {
    SERVICE.public_key_path(state_dir)
}

/// The observer's public key, when its observer ever started (`None`: no `observer.pub`).
pub fn read_public_key(state_dir: &Path) -> Result<Option<VerifyingKey>, BrokerError> {
    SERVICE.read_public_key(state_dir)
}

/// Loads the observer's key, creating its directory (0700) and the key (0600) with
/// `observer.pub` at first start. Refused: an `observer.pub` of another key, and a key equal to
/// one of `others` (the broker's evidence key, the watchdog's).
pub fn load_or_create(
    state_dir: &Path,
    others: &[VerifyingKey],
) -> Result<SigningKey, BrokerError> {
    let others: Vec<&VerifyingKey> = others.iter().collect();
    SERVICE.load_or_create(state_dir, &others)
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
