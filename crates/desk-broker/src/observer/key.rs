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
    use super::*;

    /// The shared shape is tested in `service_key.rs`; here, what is the observer's own: its
    /// directory and files, and that it refuses each of the other signers' keys.
    #[test]
    fn the_observer_key_lives_in_state_observer_and_refuses_the_other_signers_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state");
        assert_eq!(observer_dir(&state), dir.path().join("state.observer"));
        let key = load_or_create(&state, &[]).expect("created");
        assert!(observer_dir(&state).join(OBSERVER_KEY_FILE).is_file());
        assert_eq!(
            public_key_path(&state),
            observer_dir(&state).join(OBSERVER_PUBLIC_KEY_FILE)
        );
        let other = SigningKey::generate().expect("key").verifying_key();
        for others in [vec![key.verifying_key()], vec![other, key.verifying_key()]] {
            let error = load_or_create(&state, &others).expect_err("another signer's key");
            assert!(matches!(error, BrokerError::Internal(_)), "{error:?}");
        }
        assert!(load_or_create(&state, &[other]).is_ok());
    }
}
