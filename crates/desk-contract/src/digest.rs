//! The one SHA-256 helper: lowercase hex of a digest, as every wire and evidence field that
//! names bytes by their hash spells it (screenshots, frames, request digests, artifacts).

use sha2::{Digest as _, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    digest_hex(&Sha256::digest(bytes).into())
}

/// Lowercase hex of a SHA-256 already taken (e.g. hashed while the bytes were written), spelled
/// as [`sha256_hex`] spells it.
pub fn digest_hex(digest: &[u8; 32]) -> String {
    hex::encode(digest)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_digests() {
        assert_eq!(
            super::sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
