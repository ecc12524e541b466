//! The `workspace_launched` evidence hook, the launch receipt: at handoff, before the reset
//! answers, the broker takes a census of the workspace's pid namespace from outside and signs
//! every process it found (pid, parent, start time, program as the sandbox shows it), their
//! population digest, and the digest of the workspace facts the reset answer reports.

use desk_contract::desktop::{SandboxMode, WorkspaceFacts};
use desk_desktop::SessionDir;
use desk_desktop::census::{CensusRules, ScanError};
use desk_evidence::RecordBody;
use desk_evidence::record::{LaunchedProcess, WorkspaceLaunched};

use super::journal::{Evidence, with_journal};
use crate::error::BrokerError;
use crate::store::SessionRow;

fn digest<T: serde::Serialize>(value: &T) -> Result<String, BrokerError> {
    desk_evidence::canonical_sha256(value).map_err(|error| {
        BrokerError::Internal(format!("failed to encode the launch receipt: {error}"))
    })
}

/// The launch receipt of `session`'s workspace, measured now.
pub(crate) fn launch_receipt(
    session_dir: &SessionDir,
    sandbox: SandboxMode,
    facts: Option<&WorkspaceFacts>,
) -> Result<WorkspaceLaunched, BrokerError> {
    let census = match CensusRules::read(session_dir) {
        Some(rules) => match desk_desktop::census::scan(session_dir, &rules) {
            Ok(census) => Some(census),
            // A desktop without a sandbox (off, or the fake) has no namespace to count.
            Err(ScanError::NoSandbox) => None,
            Err(ScanError::HolderGone) => {
                return Err(BrokerError::Desktop {
                    operation: "measure the workspace at handoff",
                    source: desk_desktop::BackendError::WorkspaceUnverified(vec![
                        "the sandbox ended before its launch receipt".to_string(),
                    ]),
                });
            }
        },
        None => None,
    };
    let (processes, prohibited) = match census {
        Some(census) => (
            census
                .processes
                .iter()
                .map(|seen| LaunchedProcess {
                    pid: seen.pid,
                    ppid: seen.ppid,
                    start_ticks: seen.start_ticks,
                    exe: seen.exe.clone(),
                })
                .collect::<Vec<_>>(),
            census.violations.len() as u64,
        ),
        None => (Vec::new(), 0),
    };
    Ok(WorkspaceLaunched {
        sandbox: if sandbox.is_on() { "on" } else { "off" }.to_string(),
        process_population_count: processes.len() as u64,
        process_population_sha256: digest(&processes)?,
        processes,
        prohibited,
        workspace_facts_sha256: facts.map(digest).transpose()?,
    })
}

/// Appends `receipt` to the session's journal.
pub(crate) fn workspace_launched(
    evidence: Evidence<'_>,
    session: &SessionRow,
    receipt: WorkspaceLaunched,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "workspace_launched", |journal| {
        journal.append(RecordBody::WorkspaceLaunched(receipt))
    })
}
