//! The watchdog's own directory and signing key, apart from the broker's.
//!
//! Layout: `<state_dir>.watchdog/` beside the state directory (not inside it, so a state
//! directory made unwritable, even by a read-only bind, leaves it writable), 0700, holding
//! `watchdog.key` (0600, the watchdog's Ed25519 key, created at its first start, never the
//! broker's evidence key), `watchdog.pub` (its public key: what `deskbroker readback` verifies
//! answers with, and what `evidence export` names in a bundle's manifest so `evidence verify`
//! accepts a `watchdog` terminal receipt only under it), `spool/terminal.ndjson` (the
//! watchdog's terminal receipts, signed with its key) and `kills/` (its tombstones and kill
//! locks while the state directory cannot be written: `kill.rs`).
//!
//! Only the watchdog reads the private key; the broker, the kill switch and the exporter read
//! `watchdog.pub` and the spool. Under a root broker the watchdog runs under a uid of its own
//! (`deskbroker watchdog` claims it and gives it this directory before it drops to it), so
//! the directory and key belong to that uid and no other non-root uid reads them; a broker
//! that is not root shares its uid with its watchdog (`WatchdogIdentity::Shared`).

use std::path::{Path, PathBuf};

use desk_evidence::{SigningKey, VerifyingKey};

use crate::error::BrokerError;
use crate::service_key::ServiceKey;

/// The watchdog's private key file inside its directory.
pub const WATCHDOG_KEY_FILE: &str = "watchdog.key";
/// The watchdog's public key file inside its directory.
pub const WATCHDOG_PUBLIC_KEY_FILE: &str = "watchdog.pub";

/// The watchdog's directory and key, in the shape it shares with the observer's.
const SERVICE: ServiceKey = ServiceKey {
    name: "watchdog",
    key_file: WATCHDOG_KEY_FILE,
    public_key_file: WATCHDOG_PUBLIC_KEY_FILE,
    read_public_op: "read the watchdog's public key",
    read_key_op: "read the watchdog key",
    create_key_op: "create the watchdog key",
    write_key_op: "write the watchdog key",
    write_public_op: "write the watchdog's public key",
    foreign_key: "is the broker's evidence key; the watchdog signs with a key of its own",
    refusal: BrokerError::Watchdog,
};

/// `<state_dir>.watchdog`: the watchdog's directory for the broker state at `state_dir`.
pub fn watchdog_dir(state_dir: &Path) -> PathBuf {
    SERVICE.dir(state_dir)
}

/// `<state_dir>.watchdog/watchdog.pub`.
pub fn public_key_path(state_dir: &Path) -> PathBuf {
    SERVICE.public_key_path(state_dir)
}

/// `<state_dir>.watchdog/spool/terminal.ndjson`: the watchdog's terminal receipts.
pub fn spool_path(state_dir: &Path) -> PathBuf {
    watchdog_dir(state_dir)
        .join("spool")
        .join("terminal.ndjson")
}

/// `<state_dir>.watchdog/kills`: the watchdog's tombstones and kill locks while the state
/// directory cannot be written.
pub(crate) fn kills_dir(state_dir: &Path) -> PathBuf {
    watchdog_dir(state_dir).join("kills")
}

/// The watchdog's public key, when its watchdog ever started (`None`: no `watchdog.pub`).
pub fn read_public_key(state_dir: &Path) -> Result<Option<VerifyingKey>, BrokerError> {
    SERVICE.read_public_key(state_dir)
}

/// Loads the watchdog's key, creating its directory (0700, checked like the state directory)
/// and the key (0600) with `watchdog.pub` at first start. Refused: a `watchdog.pub` of another
/// key, and a key equal to the broker's evidence key (`evidence`, when it exists).
pub(crate) fn load_or_create(
    state_dir: &Path,
    evidence: Option<&VerifyingKey>,
) -> Result<SigningKey, BrokerError> {
    let others: Vec<&VerifyingKey> = evidence.into_iter().collect();
    SERVICE.load_or_create(state_dir, &others)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared shape is tested in `service_key.rs`; here, what is the watchdog's own: its
    /// directory and files, and that it refuses the evidence key with its own error.
    #[test]
    fn the_watchdog_key_lives_in_state_watchdog_and_refuses_the_evidence_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state");
        assert_eq!(watchdog_dir(&state), dir.path().join("state.watchdog"));
        let key = load_or_create(&state, None).expect("created");
        assert!(watchdog_dir(&state).join(WATCHDOG_KEY_FILE).is_file());
        assert_eq!(
            public_key_path(&state),
            watchdog_dir(&state).join(WATCHDOG_PUBLIC_KEY_FILE)
        );
        let error = load_or_create(&state, Some(&key.verifying_key())).expect_err("evidence key");
        assert!(matches!(error, BrokerError::Watchdog(_)), "{error:?}");
    }
}
