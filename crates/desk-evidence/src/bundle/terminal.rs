//! Terminal receipts (`session_killed`) are checked under their killer's own key, not only the
//! journal's: each carries the spool line's envelope (`signed_receipt`) as its killer signed
//! it. Invariant of a bundle that exports or verifies: every `session_killed` record's
//! `signed_receipt` verifies, wraps a spool entry of this session, and signs exactly the
//! record's receipt; a receipt whose source is `watchdog` verifies under the watchdog's key
//! alone (the manifest's `watchdog_key`, which a verifier may pin), any other receipt (an
//! operator's or the broker's kill) under the watchdog's key or the journal's. A receipt the
//! broker's evidence key signed "as the watchdog" is refused.

use super::layout::named;
use crate::error::{EvidenceError, RecordProblem};
use crate::journal::VerifiedRecord;
use crate::record::{RecordBody, SIGNER_IDENTITIES, WATCHDOG_SOURCE};
use crate::sign::VerifyingKey;
use crate::spool::{SPOOL_SCHEMA, Spooled};

fn refused(record: &VerifiedRecord, why: impl Into<String>) -> EvidenceError {
    named(record, RecordProblem::TerminalReceipt(why.into()))
}

/// Checks every `session_killed` record of `records` (see the module's invariant);
/// `journal_key` signed the journal, `watchdog_key` is the watchdog's, when known.
pub(super) fn check(
    records: &[VerifiedRecord],
    journal_key: &VerifyingKey,
    watchdog_key: Option<&VerifyingKey>,
) -> Result<usize, EvidenceError> {
    let mut checked = 0;
    for record in records {
        let RecordBody::SessionKilled(body) = &record.record().body else {
            continue;
        };
        let envelope = body
            .signed_receipt
            .as_ref()
            .ok_or_else(|| refused(record, "the killer's signed receipt is missing"))?;
        let watchdog_signed = watchdog_key.is_some_and(|key| envelope.verify(key).is_ok());
        if body.source == WATCHDOG_SOURCE {
            if watchdog_key.is_none() {
                return Err(refused(
                    record,
                    "a watchdog's receipt, but no watchdog key is known",
                ));
            }
            if !watchdog_signed {
                return Err(refused(
                    record,
                    "a watchdog's receipt not signed by the watchdog's key",
                ));
            }
        } else if !watchdog_signed && envelope.verify(journal_key).is_err() {
            return Err(refused(
                record,
                "signed by neither the watchdog's key nor the journal's",
            ));
        }
        if let Some(identity) = &body.signer_identity {
            // The watchdog stamps its identity on what it signs: its own kills, and another
            // killer's cut kill that it finished.
            if !watchdog_signed {
                return Err(refused(
                    record,
                    "only the watchdog's signature names the signer's identity",
                ));
            }
            if !SIGNER_IDENTITIES.contains(&identity.as_str()) {
                return Err(refused(
                    record,
                    format!("unknown signer identity {identity:?}"),
                ));
            }
        }
        let spooled: Spooled = envelope
            .decode_payload()
            .map_err(|error| refused(record, format!("not a spooled receipt: {error}")))?;
        let mut unsigned = body.clone();
        unsigned.signed_receipt = None;
        if spooled.schema_version != SPOOL_SCHEMA
            || spooled.session_id != record.record().session_id
            || spooled.receipt != unsigned
        {
            return Err(refused(
                record,
                "the signed receipt is not this session's record",
            ));
        }
        checked += 1;
    }
    Ok(checked)
}
