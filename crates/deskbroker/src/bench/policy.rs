//! `bench run --policy SIGNED --policy-pub PUB`: the run's own broker enforces a signed
//! workspace policy instead of the built-in default, e.g. `scripts/bench-gate-policy.yaml`
//! with its `screenshot_gate` section (`scripts/bench.sh OUT --gate`; docs/screenshot-gate.md).
//! The files are read by `local::read_policy`, as `serve --policy` reads them.

use std::path::{Path, PathBuf};

use clap::Args;

/// The signed policy flags of `bench run`.
#[derive(Debug, Args)]
pub(crate) struct PolicyArgs {
    /// A signed workspace policy the run's broker enforces instead of the built-in default
    /// (`deskbroker policy sign`), e.g. one with a `screenshot_gate` section
    /// (`scripts/bench.sh OUT --gate`); needs --policy-pub. A --broker-socket broker has its own.
    #[arg(
        long,
        requires = "policy_pub",
        conflicts_with = "broker_socket",
        value_name = "SIGNED"
    )]
    pub(crate) policy: Option<PathBuf>,
    /// The public key --policy must verify with.
    #[arg(long, requires = "policy", value_name = "PUB")]
    pub(crate) policy_pub: Option<PathBuf>,
}

impl PolicyArgs {
    /// The signed policy, if given.
    pub(crate) fn signed(&self) -> Option<&Path> {
        self.policy.as_deref()
    }

    /// Its public key, if given.
    pub(crate) fn public(&self) -> Option<&Path> {
        self.policy_pub.as_deref()
    }
}
