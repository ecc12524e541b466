//! A helper service's own directory and signing key beside the broker's state directory: the
//! one shape the observer (`observer/key.rs`) and the watchdog (`watchdog/key.rs`) share.
//!
//! Layout: `<state_dir>.<name>/`, 0700 (checked like the state directory), holding
//! `<name>.key` (0600, the service's Ed25519 key, created at its first start) and `<name>.pub`
//! (its public key). Refused at load: a `<name>.pub` of another key, and a key equal to one of
//! the other signers' keys the caller names.

use std::path::{Path, PathBuf};

use desk_evidence::{SigningKey, VerifyingKey};

use crate::error::BrokerError;

/// One service's key: its name and the exact words of its errors.
pub(crate) struct ServiceKey {
    /// The directory suffix and the fallback directory name (`observer`, `watchdog`).
    pub(crate) name: &'static str,
    /// The private key file inside the directory.
    pub(crate) key_file: &'static str,
    /// The public key file inside the directory.
    pub(crate) public_key_file: &'static str,
    /// The operation named when the public key cannot be read.
    pub(crate) read_public_op: &'static str,
    /// The operation named when the private key cannot be read.
    pub(crate) read_key_op: &'static str,
    /// The operation named when the private key cannot be created.
    pub(crate) create_key_op: &'static str,
    /// The operation named when the private key cannot be written.
    pub(crate) write_key_op: &'static str,
    /// The operation named when the public key cannot be written.
    pub(crate) write_public_op: &'static str,
    /// What a key equal to another signer's is, after its path ("is another signer's key; ...").
    pub(crate) foreign_key: &'static str,
    /// The error variant the service's refusals use.
    pub(crate) refusal: fn(String) -> BrokerError,
}

fn key_error(operation: &'static str) -> impl FnOnce(desk_evidence::EvidenceError) -> BrokerError {
    move |source| BrokerError::Evidence {
        operation,
        source: Box::new(source),
    }
}

impl ServiceKey {
    /// `<state_dir>.<name>`: the service's directory for the broker state at `state_dir`.
    pub(crate) fn dir(&self, state_dir: &Path) -> PathBuf {
        match state_dir.file_name() {
            Some(file_name) => {
                let mut file_name = file_name.to_os_string();
                file_name.push(".");
                file_name.push(self.name);
                state_dir.with_file_name(file_name)
            }
            None => state_dir.join(self.name),
        }
    }

    /// `<state_dir>.<name>/<name>.pub`.
    pub(crate) fn public_key_path(&self, state_dir: &Path) -> PathBuf {
        self.dir(state_dir).join(self.public_key_file)
    }

    /// The service's public key, when it ever started (`None`: no public key file).
    pub(crate) fn read_public_key(
        &self,
        state_dir: &Path,
    ) -> Result<Option<VerifyingKey>, BrokerError> {
        let path = self.public_key_path(state_dir);
        if !path.exists() {
            return Ok(None);
        }
        VerifyingKey::read(&path)
            .map(Some)
            .map_err(key_error(self.read_public_op))
    }

    /// Loads the service's key, creating its directory (0700) and the key (0600) with its
    /// public key file at first start. Refused: a public key file of another key, and a key
    /// equal to one of `others`.
    pub(crate) fn load_or_create(
        &self,
        state_dir: &Path,
        others: &[&VerifyingKey],
    ) -> Result<SigningKey, BrokerError> {
        let directory = self.dir(state_dir);
        crate::private::ensure_private_dir(&directory, crate::private::DirUse::State)?;
        let path = directory.join(self.key_file);
        let key = if path.exists() {
            SigningKey::read(&path).map_err(key_error(self.read_key_op))?
        } else {
            let key = SigningKey::generate().map_err(key_error(self.create_key_op))?;
            key.write(&path).map_err(key_error(self.write_key_op))?;
            tracing::info!(path = %path.display(), "created the {}'s signing key", self.name);
            key
        };
        let public = key.verifying_key();
        if others.contains(&&public) {
            return Err((self.refusal)(format!(
                "{} {}",
                path.display(),
                self.foreign_key
            )));
        }
        let public_path = directory.join(self.public_key_file);
        match self.read_public_key(state_dir)? {
            Some(written) if written != public => {
                return Err((self.refusal)(format!(
                    "{} belongs to another key than {}; move it away",
                    public_path.display(),
                    path.display()
                )));
            }
            Some(_) => {}
            None => public
                .write(&public_path)
                .map_err(key_error(self.write_public_op))?,
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    /// A service of the shape the observer's and the watchdog's are.
    const TEST: ServiceKey = ServiceKey {
        name: "helper",
        key_file: "helper.key",
        public_key_file: "helper.pub",
        read_public_op: "read the helper's public key",
        read_key_op: "read the helper key",
        create_key_op: "create the helper key",
        write_key_op: "write the helper key",
        write_public_op: "write the helper's public key",
        foreign_key: "is another signer's key",
        refusal: BrokerError::Internal,
    };

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_service_key_is_private_beside_the_state_directory_and_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state");
        assert_eq!(TEST.dir(&state), dir.path().join("state.helper"));
        assert_eq!(TEST.read_public_key(&state).expect("none yet"), None);
        let key = TEST.load_or_create(&state, &[]).expect("created");
        assert_eq!(mode(&TEST.dir(&state)), 0o700);
        assert_eq!(mode(&TEST.dir(&state).join("helper.key")), 0o600);
        assert_eq!(
            TEST.read_public_key(&state).expect("read"),
            Some(key.verifying_key())
        );
        // Loaded again, the same key.
        let again = TEST.load_or_create(&state, &[]).expect("loaded");
        assert_eq!(again.verifying_key(), key.verifying_key());
        // A key equal to another signer's is refused, with the service's words.
        let error = TEST
            .load_or_create(&state, &[&key.verifying_key()])
            .expect_err("another signer's key");
        assert!(
            matches!(&error, BrokerError::Internal(message) if message.ends_with("is another signer's key")),
            "{error:?}"
        );
        // A public key file of another key is refused.
        std::fs::remove_file(TEST.public_key_path(&state)).expect("remove");
        SigningKey::generate()
            .expect("key")
            .verifying_key()
            .write(&TEST.public_key_path(&state))
            .expect("write");
        assert!(TEST.load_or_create(&state, &[]).is_err());
    }
}
