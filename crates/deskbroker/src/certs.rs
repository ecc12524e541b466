//! `deskbroker certs …`: a local CA, server and client identities, and orchestration credentials
//! for a first TLS setup.
//!
//! `init` writes into one directory (created 0700): `ca.pem`/`ca.key` (the local CA),
//! `server.pem`/`server.key` (SANs `localhost`, `127.0.0.1` and every `--san`), `client.pem`/
//! `client.key` (client authentication), and `orchestrator.key`/`orchestrator.pub` (the Ed25519
//! pair that signs and verifies orchestration credentials). Private keys are mode 0600, and no
//! existing file is ever overwritten. `reviewer` writes a screenshot reviewer's pair,
//! `reviewer.key`/`reviewer.pub` (for `serve --reviewer-pub`; earlier a whole `init` directory's
//! `orchestrator.*` served, and such files are still read: a key file is a key file). `token`
//! prints a credential signed with the key given (the orchestrator's, or the reviewer's).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;
use desk_broker::credential::{self, Scope};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, date_time_ymd,
};

/// `deskbroker certs`.
#[derive(Debug, Subcommand)]
pub(crate) enum CertsCommand {
    /// Create a local CA, a server identity, a client identity and an orchestrator signing key
    /// pair in a directory.
    Init {
        /// Directory to write the PEM files into (created with mode 0700).
        #[arg(long)]
        dir: PathBuf,
        /// Extra subject alternative name of the server certificate (DNS name or IP address);
        /// repeatable. `localhost` and `127.0.0.1` are always included.
        #[arg(long = "san")]
        sans: Vec<String>,
    },
    /// Create a screenshot reviewer's signing key pair in a directory: reviewer.key (0600) and
    /// reviewer.pub (for `serve --reviewer-pub`).
    Reviewer {
        /// Directory to write the two files into (created with mode 0700).
        #[arg(long)]
        dir: PathBuf,
    },
    /// Print an orchestration credential: signed, expiring, scoped.
    Token {
        /// The signing key: orchestrator.key from `certs init`, or reviewer.key from `certs
        /// reviewer` for the `review` scope.
        #[arg(long)]
        key: PathBuf,
        /// What the credential allows: `lease`, `metrics`, `kill`, `review` (with the
        /// reviewer's key, for `serve --reviewer-pub`); repeatable.
        #[arg(long = "scope", required = true, value_parser = parse_scope)]
        scopes: Vec<Scope>,
        /// Lifetime, e.g. `90s`, `15m`, `2h` (at most 1d).
        #[arg(long, default_value = "15m", value_parser = parse_ttl)]
        ttl: u64,
        /// Who the credential is for (logged by the broker).
        #[arg(long, default_value = "orchestrator")]
        sub: String,
    },
}

fn parse_scope(text: &str) -> Result<Scope, String> {
    Scope::parse(text)
        .ok_or_else(|| format!("unknown scope {text:?}; use lease, metrics, kill or review"))
}

fn parse_ttl(text: &str) -> Result<u64, String> {
    credential::parse_ttl_ms(text)
        .filter(|ttl_ms| (1..=credential::MAX_TTL_MS).contains(ttl_ms))
        .ok_or_else(|| format!("bad lifetime {text:?}; use e.g. 90s, 15m, 2h, at most 1d"))
}

/// Writes `bytes` to a new file `path` with `mode`; an existing file is an error.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("failed to create {} (it must not exist)", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("failed to write {}", path.display()))
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "deskbroker");
    name.push(DnType::CommonName, common_name);
    name
}

fn leaf_params(
    sans: Vec<String>,
    common_name: &str,
    usage: ExtendedKeyUsagePurpose,
) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(sans).context("bad subject alternative name")?;
    params.distinguished_name = name(common_name);
    params.not_before = date_time_ymd(2025, 1, 1);
    params.not_after = date_time_ymd(2035, 1, 1);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![usage];
    Ok(params)
}

const FILES: &[&str] = &[
    "ca.pem",
    "ca.key",
    "server.pem",
    "server.key",
    "client.pem",
    "client.key",
    "orchestrator.key",
    "orchestrator.pub",
];

fn init(dir: &Path, extra_sans: &[String]) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("failed to create {}", dir.display()))?;
    for file in FILES {
        let path = dir.join(file);
        anyhow::ensure!(
            !path.exists(),
            "{} already exists; certs init never overwrites",
            path.display()
        );
    }

    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = name("deskbroker local CA");
    ca_params.not_before = date_time_ymd(2025, 1, 1);
    ca_params.not_after = date_time_ymd(2035, 1, 1);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().context("failed to generate the CA key")?;
    let ca_key_pem = ca_key.serialize_pem();
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).context("failed to sign the CA")?;

    let mut server_sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    for san in extra_sans {
        if !server_sans.contains(san) {
            server_sans.push(san.clone());
        }
    }
    let server_params = leaf_params(
        server_sans,
        "deskbroker server",
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let server_key = KeyPair::generate().context("failed to generate the server key")?;
    let server = server_params
        .signed_by(&server_key, &ca)
        .context("failed to sign the server certificate")?;

    let client_params = leaf_params(
        vec!["deskbroker-client".to_string()],
        "deskbroker client",
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    let client_key = KeyPair::generate().context("failed to generate the client key")?;
    let client = client_params
        .signed_by(&client_key, &ca)
        .context("failed to sign the client certificate")?;

    write_new(&dir.join("ca.pem"), ca.pem().as_bytes(), 0o644)?;
    write_new(&dir.join("ca.key"), ca_key_pem.as_bytes(), 0o600)?;
    write_new(&dir.join("server.pem"), server.pem().as_bytes(), 0o644)?;
    write_new(
        &dir.join("server.key"),
        server_key.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_new(&dir.join("client.pem"), client.pem().as_bytes(), 0o644)?;
    write_new(
        &dir.join("client.key"),
        client_key.serialize_pem().as_bytes(),
        0o600,
    )?;
    let orchestrator =
        desk_evidence::SigningKey::generate().context("failed to generate the orchestrator key")?;
    orchestrator
        .write(&dir.join("orchestrator.key"))
        .context("failed to write orchestrator.key")?;
    orchestrator
        .verifying_key()
        .write(&dir.join("orchestrator.pub"))
        .context("failed to write orchestrator.pub")?;
    outln!("wrote {} in {}", FILES.join(", "), dir.display());
    outln!(
        "serve:  deskbroker serve --listen 0.0.0.0:8443 --tls-cert {d}/server.pem --tls-key {d}/server.key --client-ca {d}/ca.pem --orchestrator-pub {d}/orchestrator.pub",
        d = dir.display()
    );
    Ok(())
}

/// `certs reviewer`: `dir/reviewer.key` (0600) and `dir/reviewer.pub`; neither may exist.
fn reviewer(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("failed to create {}", dir.display()))?;
    let (key_path, pub_path) = (dir.join("reviewer.key"), dir.join("reviewer.pub"));
    for path in [&key_path, &pub_path] {
        anyhow::ensure!(
            !path.exists(),
            "{} already exists; certs reviewer never overwrites",
            path.display()
        );
    }
    let key =
        desk_evidence::SigningKey::generate().context("failed to generate the reviewer key")?;
    key.write(&key_path)
        .context("failed to write reviewer.key")?;
    key.verifying_key()
        .write(&pub_path)
        .context("failed to write reviewer.pub")?;
    outln!("wrote reviewer.key, reviewer.pub in {}", dir.display());
    outln!(
        "serve:  deskbroker serve ... --reviewer-pub {d}/reviewer.pub\n\
         token:  deskbroker certs token --key {d}/reviewer.key --scope review --sub NAME",
        d = dir.display()
    );
    Ok(())
}

fn token(key: &Path, scopes: &[Scope], ttl_ms: u64, sub: &str) -> Result<()> {
    let key = desk_evidence::SigningKey::read(key)
        .with_context(|| format!("failed to read the signing key {}", key.display()))?;
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .context("the clock is before 1970")?
            .as_millis(),
    )
    .context("the clock is out of range")?;
    let credential = credential::issue(&key, sub, scopes, now_ms, ttl_ms)?;
    outln!("{credential}");
    Ok(())
}

pub(crate) async fn run(command: CertsCommand) -> Result<()> {
    match command {
        CertsCommand::Init { dir, sans } => init(&dir, &sans),
        CertsCommand::Reviewer { dir } => reviewer(&dir),
        CertsCommand::Token {
            key,
            scopes,
            ttl,
            sub,
        } => token(&key, &scopes, ttl, &sub),
    }
}
