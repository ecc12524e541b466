//! `deskbroker policy …`: author, lint, sign and verify a workspace policy (`desk-policy`).
//!
//! Exit status: 0 when the policy passes; 2 when it is refused (lint violations, a bad
//! signature, outside its validity window), printing every reason; 1 when a file or key
//! cannot be read. The policy key must not be the broker's evidence key: `sign` and `verify`
//! refuse it when `<state_dir>/evidence/evidence.pub` names the same key.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Subcommand;
use desk_policy::{PolicyError, SigningKey, VerifyingKey};

/// `deskbroker policy`.
#[derive(Debug, Subcommand)]
#[command(after_long_help = "\
A workspace policy states what every session's workspace must be and may do. Author it in
YAML, lint it, sign it with a key of its own, and serve it:

  deskbroker policy example > policy.yaml        # a commented starting point
  deskbroker policy lint policy.yaml             # exit 0, or 2 naming every violated rule
  deskbroker policy keygen --out-dir keys/       # keys/policy.key (0600), keys/policy.pub
  deskbroker policy sign policy.yaml --key keys/policy.key --out policy.signed.json
  deskbroker policy verify policy.signed.json --pub keys/policy.pub
  deskbroker serve --policy policy.signed.json --policy-pub keys/policy.pub

Without --policy, serve signs a built-in default (the profiles it serves, no network, no
clipboard, writable: attempt) with <state_dir>/policy/policy.key. Rules: docs/security.md,
\"Workspace policy\".")]
pub(crate) enum PolicyCommand {
    /// Check a YAML policy against every lint rule; prints each violation as
    /// `POL-nnn name at PATH: why`.
    Lint {
        /// The YAML policy.
        file: PathBuf,
    },
    /// Lint a YAML policy and sign it: an Ed25519 envelope over its RFC 8785 bytes.
    Sign {
        /// The YAML policy.
        file: PathBuf,
        /// The policy signing key (from `policy keygen`); never the evidence key.
        #[arg(long)]
        key: PathBuf,
        /// The signed policy to write (must not exist; mode 0600).
        #[arg(long)]
        out: PathBuf,
        /// The broker state directory whose evidence key the policy key must differ from.
        #[arg(long, env = "DESKBROKER_STATE_DIR")]
        state_dir: Option<PathBuf>,
    },
    /// Verify a signed policy: signature, lint and validity window; prints its digest.
    Verify {
        /// The signed policy (from `policy sign`).
        signed: PathBuf,
        /// The policy public key.
        #[arg(long = "pub")]
        public_key: PathBuf,
        /// Check the validity window at this time (YYYY-MM-DDTHH:MM:SSZ) instead of now.
        #[arg(long)]
        at: Option<String>,
        /// The broker state directory whose evidence key the policy key must differ from.
        #[arg(long, env = "DESKBROKER_STATE_DIR")]
        state_dir: Option<PathBuf>,
    },
    /// Create a policy key pair: DIR/policy.key (0600) and DIR/policy.pub.
    Keygen {
        /// Directory to write the two files to (created 0700 if missing).
        #[arg(long)]
        out_dir: PathBuf,
    },
    /// Print a commented example policy that passes lint.
    Example,
}

/// The process exit status `main` uses for a refused policy (the reasons are already printed).
#[derive(Debug)]
pub(crate) struct PolicyRefused;

impl std::fmt::Display for PolicyRefused {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("the policy is refused")
    }
}

impl std::error::Error for PolicyRefused {}

const EXAMPLE: &str = include_str!("policy_example.yaml");

pub(crate) async fn run(command: PolicyCommand) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(move || run_blocking(command)).await?
}

fn read_yaml(file: &Path) -> anyhow::Result<String> {
    let bytes = desk_policy::read_file(file, desk_policy::MAX_YAML_BYTES)?;
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", file.display()))
}

/// Prints why a policy is refused and turns it into [`PolicyRefused`]; other errors pass.
fn refused(error: PolicyError) -> anyhow::Error {
    match error {
        PolicyError::Lint(violations) => {
            for violation in &violations {
                eprintln!("{violation}");
            }
            eprintln!("{} violation(s)", violations.len());
            PolicyRefused.into()
        }
        PolicyError::Io { .. } | PolicyError::Key(_) => error.into(),
        other => {
            eprintln!("{other}");
            PolicyRefused.into()
        }
    }
}

/// Refuses `key` when it is the evidence key of the broker at `state_dir`.
fn check_not_evidence_key(key: &VerifyingKey, state_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let state_dir = state_dir.unwrap_or_else(crate::paths::default_state_dir);
    let evidence_pub = desk_broker::public_key_path(&state_dir);
    if evidence_pub.exists() {
        let evidence = VerifyingKey::read(&evidence_pub)?;
        desk_policy::check_distinct(key, &evidence).map_err(refused)?;
    }
    Ok(())
}

fn run_blocking(command: PolicyCommand) -> anyhow::Result<()> {
    match command {
        PolicyCommand::Lint { file } => {
            let violations = desk_policy::lint(&read_yaml(&file)?);
            if !violations.is_empty() {
                return Err(refused(PolicyError::Lint(violations)));
            }
            println!("OK {}", file.display());
        }
        PolicyCommand::Sign {
            file,
            key,
            out,
            state_dir,
        } => {
            let policy = desk_policy::Policy::from_yaml(&read_yaml(&file)?).map_err(refused)?;
            let key = SigningKey::read(&key)
                .with_context(|| format!("failed to read the policy key {}", key.display()))?;
            check_not_evidence_key(&key.verifying_key(), state_dir)?;
            let bytes = desk_policy::sign(&policy, &key)
                .and_then(|envelope| {
                    envelope
                        .canonical_bytes()
                        .map_err(|error| PolicyError::Encode(error.to_string()))
                })
                .map_err(refused)?;
            write_new(&out, &bytes)?;
            println!(
                "signed {} sha256 {}",
                out.display(),
                desk_policy::digest(&policy)?
            );
        }
        PolicyCommand::Verify {
            signed,
            public_key,
            at,
            state_dir,
        } => {
            let key = VerifyingKey::read(&public_key).with_context(|| {
                format!("failed to read the policy key {}", public_key.display())
            })?;
            check_not_evidence_key(&key, state_dir)?;
            let now = match at {
                Some(text) => desk_policy::parse_utc(&text)
                    .with_context(|| format!("--at {text:?} is not YYYY-MM-DDTHH:MM:SSZ"))?,
                None => now_unix(),
            };
            let bytes = desk_policy::read_file(&signed, desk_policy::MAX_SIGNED_BYTES)?;
            let verified = desk_policy::verify(&bytes, &key, now).map_err(refused)?;
            let policy = verified.policy();
            let limits = policy.limits();
            println!(
                "OK sha256 {} version {} profiles {:?} network {:?} clipboard {:?} \
                 max_task_minutes {} max_refused_actions {} idle_seconds {}",
                verified.sha256(),
                policy.policy_version(),
                policy.allowed_profiles(),
                policy.network(),
                policy.clipboard_mode(),
                limits.max_task_minutes,
                limits.max_refused_actions,
                limits.idle_seconds
            );
        }
        PolicyCommand::Keygen { out_dir } => {
            create_private_dir(&out_dir)?;
            let key = SigningKey::generate()?;
            key.write(&out_dir.join("policy.key"))?;
            key.verifying_key().write(&out_dir.join("policy.pub"))?;
            println!(
                "wrote {0}/policy.key and {0}/policy.pub ({1})",
                out_dir.display(),
                key.verifying_key().fingerprint()
            );
        }
        PolicyCommand::Example => print!("{EXAMPLE}"),
    }
    Ok(())
}

fn now_unix() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX)
}

pub(crate) fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("failed to create {}", dir.display()))
}

fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("failed to create {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("failed to write {}", path.display()))
}
