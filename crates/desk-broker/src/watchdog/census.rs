//! The census in the broker's processes (`desk_desktop::census`): the watchdog takes it of
//! every live session each round, the broker before every action's input (while the action's
//! ledger opens, `program.rs`; a violation withdraws the accepted action before the kill); a
//! process the session's rules do not allow, seen twice 50 ms apart, ends the session through
//! the one kill path with the limit `prohibited_process` and the process (program, command
//! line, parent) in the signed terminal receipt.

use desk_desktop::census::{CensusRules, Violation, confirmed_violation};
use desk_desktop::{SessionDir, StateDir};
use desk_evidence::record::ProhibitedProcess;

use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::kill::{KillOutcome, KillSource, kill_session};

/// The longest reason a kill takes (`kill::check_reason`).
const MAX_REASON: usize = 256;

/// The violation as its kill records it.
fn prohibited(violation: Violation) -> ProhibitedProcess {
    ProhibitedProcess {
        pid: violation.pid,
        exe: violation.exe,
        cmdline: violation.cmdline,
        parent_pid: violation.parent_pid,
        parent_exe: violation.parent_exe,
        why: violation.why,
    }
}

/// The kill's reason in words: the program, its pid and parent, then its command line, cut
/// to [`MAX_REASON`] bytes.
fn reason(process: &ProhibitedProcess) -> String {
    let parent = process
        .parent_exe
        .as_deref()
        .unwrap_or("outside the sandbox");
    let text = format!(
        "prohibited process {} (pid {}, parent {} {parent}): {}",
        process.exe, process.pid, process.parent_pid, process.cmdline
    );
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut end = text.len().min(MAX_REASON);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Takes the census of the session in `session_dir` and, on a confirmed violation, kills the
/// session (`by`: `watchdog` or `broker`) signed by the [`crate::kill::Signer`] `key` gives. `Ok(None)`:
/// nothing prohibited runs, or the session has no census (no rules recorded, no sandbox).
pub(crate) fn enforce(
    state: &StateDir,
    key: impl FnOnce() -> Result<crate::kill::Signer, BrokerError>,
    session_id: &SessionId,
    session_dir: &SessionDir,
    by: &'static str,
) -> Result<Option<KillOutcome>, BrokerError> {
    let Some(rules) = CensusRules::read(session_dir) else {
        return Ok(None);
    };
    let Some(violation) = confirmed_violation(session_dir, &rules) else {
        return Ok(None);
    };
    kill_for(state, key, session_id, violation, by).map(Some)
}

/// Kills the session for `violation`, a confirmed census violation (`by`: `watchdog` or
/// `broker`).
fn kill_for(
    state: &StateDir,
    key: impl FnOnce() -> Result<crate::kill::Signer, BrokerError>,
    session_id: &SessionId,
    violation: Violation,
    by: &'static str,
) -> Result<KillOutcome, BrokerError> {
    let process = prohibited(violation);
    let reason = reason(&process);
    tracing::warn!(%session_id, by, %reason, why = process.why, "census found a prohibited process");
    let source = KillSource::Census {
        by,
        process: Box::new(process),
    };
    kill_session(state, &key()?, session_id, &reason, &source)
}

impl crate::broker::Inner {
    /// Runs `work` (an action's ledger opening) while the census before its input is taken
    /// beside it (reads only): `work`'s result, a confirmed violation (`None` when nothing
    /// prohibited runs or the session has no census: no rules recorded, no sandbox, and then
    /// no thread is started) and how long the census took (µs).
    pub(crate) fn beside_census<T: Send>(
        &self,
        session_dir: &SessionDir,
        work: impl FnOnce() -> T + Send,
    ) -> (T, Option<Violation>, u64) {
        let Some(rules) = CensusRules::read(session_dir) else {
            return (work(), None, 0);
        };
        let (done, (violation, census_us)) = desk_evidence::durable::join(work, || {
            let started = std::time::Instant::now();
            let violation = confirmed_violation(session_dir, &rules);
            let census_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            (violation, census_us)
        });
        (done, violation, census_us)
    }

    /// An action whose census ([`Self::beside_census`]) found `violation`: its accepted
    /// records (`opened`, when the ledger opened) are withdrawn first, as for any refusal before
    /// input, then the kill runs ([`Self::census_kill`]), so its receipt names no action in
    /// flight. Nothing was sent.
    pub(crate) fn census_refused(
        &self,
        session_id: &SessionId,
        action_index: u64,
        opened: Result<crate::ledger::Ledger<'_>, BrokerError>,
        violation: Violation,
    ) -> BrokerError {
        if let Ok(ledger) = opened {
            let refusal = BrokerError::SessionKilled {
                session_id: session_id.to_string(),
                reason: "the census found a prohibited process".to_string(),
            };
            let withdrawn = ledger.withdrawn(refusal);
            if withdrawn.code() != desk_contract::ErrorCode::SessionKilled {
                tracing::error!(%session_id, action_index, error = %withdrawn, "an action refused by the census was not withdrawn; the kill names it in doubt");
            }
        }
        self.census_kill(session_id, violation)
    }

    /// Ends the session for `violation` (found by [`Self::beside_census`]) through the
    /// one kill path: `session_killed` (nothing sent), or the kill's own error.
    fn census_kill(&self, session_id: &SessionId, violation: Violation) -> BrokerError {
        let key = || {
            crate::kill::Signer::evidence(
                &self.config.state_dir,
                self.config.evidence.signing_key.as_deref(),
            )
        };
        let reason = match kill_for(&self.config.layout(), key, session_id, violation, "broker") {
            Ok(KillOutcome::Killed(receipt)) => receipt.reason,
            Ok(KillOutcome::AlreadyKilled(tombstone)) => tombstone.reason,
            Err(error) => return error,
        };
        BrokerError::SessionKilled {
            session_id: session_id.to_string(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_names_the_program_and_parent_and_fits_a_kill() {
        let process = ProhibitedProcess {
            pid: 7,
            exe: "/usr/bin/python3".to_string(),
            cmdline: format!("python3 -c {}\u{7}", "x".repeat(400)),
            parent_pid: 5,
            parent_exe: Some("/usr/bin/librecad".to_string()),
            why: "the app started a program the profile does not allow".to_string(),
        };
        let text = reason(&process);
        assert!(text.starts_with(
            "prohibited process /usr/bin/python3 (pid 7, parent 5 /usr/bin/librecad): python3 -c"
        ));
        assert_eq!(text.len(), MAX_REASON);
        assert!(crate::kill::check_reason(&text).is_ok());
    }
}
