//! The `clipboard_access` evidence hook: one signed record per clipboard read or write (and
//! per refusal), written and read back before the answer. The text is never recorded.

use desk_evidence::RecordBody;
use desk_evidence::record::ClipboardAccess;

use super::journal::{Evidence, with_journal};
use crate::error::BrokerError;
use crate::store::SessionRow;

/// Appends `access` to the session's journal.
pub(crate) fn clipboard_access(
    evidence: Evidence<'_>,
    session: &SessionRow,
    access: ClipboardAccess,
) -> Result<(), BrokerError> {
    with_journal(evidence, session, "clipboard_access", |journal| {
        journal.append(RecordBody::ClipboardAccess(access))
    })
}
