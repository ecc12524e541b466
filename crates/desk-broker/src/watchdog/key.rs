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

/// The watchdog's private key file inside its directory.
pub const WATCHDOG_KEY_FILE: &str = "watchdog.key";
/// The watchdog's public key file inside its directory.
pub const WATCHDOG_PUBLIC_KEY_FILE: &str = "watchdog.pub";

/// `<state_dir>.watchdog`: the watchdog's directory for the broker state at `state_dir`.
pub fn watchdog_dir(state_dir: &Path) -> PathBuf {
    match state_dir.file_name() {
        Some(name) => {
            let mut name = name.to_os_string();
            name.push(".watchdog");
            state_dir.with_file_name(name)
        }
        None => state_dir.join("watchdog"),
    }
}

/// `<state_dir>.watchdog/watchdog.pub`.
pub fn public_key_path(state_dir: &Path) -> PathBuf {
    watchdog_dir(state_dir).join(WATCHDOG_PUBLIC_KEY_FILE)
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

fn key_error(operation: &'static str) -> impl FnOnce(desk_evidence::EvidenceError) -> BrokerError {
    move |source| BrokerError::Evidence {
        operation,
        source: Box::new(source),
    }
}

/// The watchdog's public key, when its watchdog ever started (`None`: no `watchdog.pub`).
pub fn read_public_key(state_dir: &Path) -> Result<Option<VerifyingKey>, BrokerError> {
    let path = public_key_path(state_dir);
    if !path.exists() {
        return Ok(None);
    }
    VerifyingKey::read(&path)
        .map(Some)
        .map_err(key_error("read the watchdog's public key"))
}

/// Loads the watchdog's key, creating its directory (0700, checked like the state directory)
/// and the key (0600) with `watchdog.pub` at first start. Refused: a `watchdog.pub` of another
/// key, and a key equal to the broker's evidence key (`evidence`, when it exists).
pub(crate) fn load_or_create(
    state_dir: &Path,
    evidence: Option<&VerifyingKey>,
) -> Result<SigningKey, BrokerError> {
    let directory = watchdog_dir(state_dir);
    crate::private::ensure_private_dir(&directory, crate::private::DirUse::State)?;
    let path = directory.join(WATCHDOG_KEY_FILE);
    let key = if path.exists() {
        SigningKey::read(&path).map_err(key_error("read the watchdog key"))?
    } else {
        let key = SigningKey::generate().map_err(key_error("create the watchdog key"))?;
        key.write(&path)
            .map_err(key_error("write the watchdog key"))?;
        tracing::info!(path = %path.display(), "created the watchdog's signing key");
        key
    };
    let public = key.verifying_key();
    if evidence == Some(&public) {
        return Err(BrokerError::Watchdog(format!(
            "{} is the broker's evidence key; the watchdog signs with a key of its own",
            path.display()
        )));
    }
    let public_path = directory.join(WATCHDOG_PUBLIC_KEY_FILE);
    match read_public_key(state_dir)? {
        Some(written) if written != public => {
            return Err(BrokerError::Watchdog(format!(
                "{} belongs to another key than {}; move it away",
                public_path.display(),
                path.display()
            )));
        }
        Some(_) => {}
        None => public
            .write(&public_path)
            .map_err(key_error("write the watchdog's public key"))?,
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn the_watchdog_key_is_private_beside_the_state_directory_and_not_the_evidence_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state");
        assert_eq!(watchdog_dir(&state), dir.path().join("state.watchdog"));
        let key = load_or_create(&state, None).expect("created");
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&watchdog_dir(&state)), 0o700);
        assert_eq!(mode(&watchdog_dir(&state).join(WATCHDOG_KEY_FILE)), 0o600);
        assert_eq!(
            read_public_key(&state).expect("read"),
            Some(key.verifying_key())
        );
        // Loaded again, the same key.
        let again = load_or_create(&state, None).expect("loaded");
        assert_eq!(again.verifying_key(), key.verifying_key());
        // A watchdog key equal to the evidence key is refused.
        assert!(load_or_create(&state, Some(&key.verifying_key())).is_err());
        // A public key file of another key is refused.
        std::fs::remove_file(public_key_path(&state)).expect("remove");
        SigningKey::generate()
            .expect("key")
            .verifying_key()
            .write(&public_key_path(&state))
            .expect("write");
        assert!(load_or_create(&state, None).is_err());
    }
}
