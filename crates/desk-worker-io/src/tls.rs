//! The TLS configurations of the worker transport and the PEM reading both ends (and the
//! broker's HTTP listener, `desk-broker`'s `tls.rs`) use.
//!
//! The worker (`worker_config`) presents its own certificate and requires a client
//! certificate chaining to the pinned client CA; the broker ([`broker_config`]) trusts only the
//! pinned worker CA (no system roots), checks the worker's certificate for the host it dialled,
//! and presents its client certificate. Both use rustls' ring provider explicitly, so nothing
//! depends on a process-wide default.

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

use crate::WorkerIoError;

fn pem_error(path: &Path, reason: impl std::fmt::Display) -> WorkerIoError {
    WorkerIoError::Pem {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Every certificate in the PEM file at `path`; at least one.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, WorkerIoError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|error| pem_error(path, format!("cannot read certificates: {error}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| pem_error(path, format!("cannot parse certificates: {error}")))?;
    if certs.is_empty() {
        return Err(pem_error(path, "holds no certificate"));
    }
    Ok(certs)
}

/// The private key in the PEM file at `path`.
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, WorkerIoError> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|error| pem_error(path, format!("cannot read the private key: {error}")))
}

/// A root store holding exactly the certificates of the CA file at `path`.
pub fn pinned_roots(path: &Path) -> Result<RootCertStore, WorkerIoError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(path)? {
        roots
            .add(cert)
            .map_err(|error| pem_error(path, format!("not a usable CA certificate: {error}")))?;
    }
    Ok(roots)
}

/// The SHA-256 of a certificate's DER bytes, in hex (what the logs name a peer by).
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    hex::encode(Sha256::digest(cert.as_ref()))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The worker's side: its identity (`cert`, `key`) and the CA every client must chain to.
pub(crate) fn worker_config(
    cert: &Path,
    key: &Path,
    client_ca: &Path,
) -> Result<Arc<rustls::ServerConfig>, WorkerIoError> {
    let chain = read_certs(cert)?;
    let key = read_key(key)?;
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(pinned_roots(client_ca)?), provider())
            .build()
            .map_err(|error| WorkerIoError::Config(format!("the client CA: {error}")))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| WorkerIoError::Config(error.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|error| WorkerIoError::Config(format!("the worker's identity: {error}")))?;
    Ok(Arc::new(config))
}

/// The broker's side: the CA the worker's certificate must chain to, and the broker's client
/// identity (`cert`, `key`).
pub fn broker_config(
    worker_ca: &Path,
    cert: &Path,
    key: &Path,
) -> Result<Arc<rustls::ClientConfig>, WorkerIoError> {
    let roots = pinned_roots(worker_ca)?;
    let chain = read_certs(cert)?;
    let key = read_key(key)?;
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| WorkerIoError::Config(error.to_string()))?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|error| WorkerIoError::Config(format!("the broker's identity: {error}")))?;
    Ok(Arc::new(config))
}
