//! The containment records of a session's journal: denials (`action_refused`, written before a
//! refusal is answered) and the terminal receipt of a kill (`session_killed`, replayed from the
//! spool), both in the containment spec's record shape (control id, stage, outcome, recorded
//! time).

use desk_evidence::RecordBody;

use super::journal::{Evidence, with_journal};
use crate::error::BrokerError;
use crate::store::SessionRow;
use crate::util::now_ms;

/// A killed session's terminal receipt, replayed from the spool with its original id: appended
/// unless the journal already ended (replaying twice changes nothing). Never half-logged: an
/// accepted action still open (the kill cut its input and its own receipt could not be
/// written) is first closed `in_doubt` with `input_outcome_unknown`.
pub(crate) fn session_killed(
    evidence: Evidence<'_>,
    session: &SessionRow,
    receipt: &desk_evidence::record::SessionKilled,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "kill_session", |journal| {
        if journal.released {
            return Ok(());
        }
        let open: Vec<u64> = journal.open_actions.iter().copied().collect();
        for index in open {
            journal.receipt(index, "in_doubt", Some("input_outcome_unknown"), None)?;
        }
        journal.append(RecordBody::SessionKilled(receipt.clone()))
    })
}

/// `action_refused`: a denial before any input, in the containment spec's record shape, with
/// the session's refused-action count including it. Skipped once the journal ended.
pub(crate) fn action_refused(
    evidence: Evidence<'_>,
    session: &SessionRow,
    request_id: &str,
    code: desk_contract::ErrorCode,
    refused_count: Option<u64>,
) -> Result<(), BrokerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| BrokerError::Internal(format!("failed to draw a record id: {error}")))?;
    let request_id = crate::util::check_identifier("request_id", request_id)
        .is_ok()
        .then(|| request_id.to_string());
    let body = desk_evidence::record::ActionRefused {
        record_id: format!("deny-{}", hex::encode(bytes)),
        control_id: desk_evidence::record::DENIAL_CONTROL_ID.to_string(),
        stage: desk_evidence::record::DENIAL_STAGE.to_string(),
        outcome: desk_evidence::record::DENIAL_OUTCOME.to_string(),
        recorded_at_ms: now_ms(),
        request_id,
        error_code: code.as_str().to_string(),
        refused_count,
    };
    with_journal(evidence, session, "record_refusal", |journal| {
        if journal.released {
            return Ok(());
        }
        journal.append(RecordBody::ActionRefused(body))
    })
}
