//! TLS connection setup for a remote broker: the URL, the CA that signs the broker's
//! certificate, and an optional client identity for mutual TLS.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::TlsConnector;

use crate::ClientError;

/// How to reach a broker over TLS.
#[derive(Clone, Default)]
pub struct RemoteConfig {
    /// `https://HOST:PORT`.
    pub url: String,
    /// PEM CA certificate(s) the broker's certificate must chain to; nothing else is trusted.
    pub ca: PathBuf,
    /// PEM client certificate and key, for a broker that requires mutual TLS.
    pub identity: Option<(PathBuf, PathBuf)>,
    /// An orchestration credential (`deskbroker certs token`), sent on non-session routes.
    pub credential: Option<String>,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RemoteConfig")
            .field("url", &self.url)
            .field("ca", &self.ca)
            .field("identity", &self.identity)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A resolved TLS endpoint.
pub(crate) struct TlsEndpoint {
    /// `host:port`, for connecting and the `Host` header.
    pub(crate) address: String,
    pub(crate) server_name: ServerName<'static>,
    pub(crate) connector: TlsConnector,
}

fn config_error(message: impl Into<String>) -> ClientError {
    ClientError::Config(message.into())
}

fn read_certs(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|error| config_error(format!("failed to read {}: {error}", path.display())))?;
    if certs.is_empty() {
        return Err(config_error(format!(
            "no certificate in {}",
            path.display()
        )));
    }
    Ok(certs)
}

/// Splits `https://host:port` into the host (brackets removed for IPv6) and `host:port`.
fn parse_url(url: &str) -> Result<(String, String), ClientError> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| config_error(format!("url {url:?} must start with https://")))?;
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains('/') || authority.contains('@') {
        return Err(config_error(format!(
            "url {url:?} must be https://HOST:PORT"
        )));
    }
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| config_error(format!("url {url:?} needs a port")))?;
    port.parse::<u16>()
        .map_err(|_| config_error(format!("bad port in {url:?}")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), authority.to_string()))
}

impl TlsEndpoint {
    pub(crate) fn new(config: &RemoteConfig) -> Result<TlsEndpoint, ClientError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (host, address) = parse_url(&config.url)?;
        let server_name = ServerName::try_from(host.clone())
            .map_err(|_| config_error(format!("bad host name {host:?}")))?;
        let mut roots = RootCertStore::empty();
        for cert in read_certs(&config.ca)? {
            roots
                .add(cert)
                .map_err(|error| config_error(format!("bad CA certificate: {error}")))?;
        }
        let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
        let mut tls = match &config.identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = read_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|error| {
                    config_error(format!("failed to read {}: {error}", key.display()))
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|error| config_error(format!("bad client identity: {error}")))?
            }
        };
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsEndpoint {
            address,
            server_name,
            connector: TlsConnector::from(Arc::new(tls)),
        })
    }
}
