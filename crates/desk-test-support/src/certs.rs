//! Certificates for transport tests: a CA and, signed by it, a worker (server) certificate for
//! 127.0.0.1 and a broker (client) certificate, written as PEM files.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
};

/// Writes `ca.pem`, `server.pem`/`server.key` (for 127.0.0.1) and `client.pem`/`client.key`
/// into `dir`: a fresh CA each call, so two calls give two trust domains.
pub fn write_worker_certs(dir: &Path) {
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    for (name, san, usage) in [
        ("server", "127.0.0.1", ExtendedKeyUsagePurpose::ServerAuth),
        ("client", "broker", ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let mut params = CertificateParams::new(vec![san.to_string()]).unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}
