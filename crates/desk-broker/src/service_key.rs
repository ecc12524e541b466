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
