//! The screenshot gate's records: every decision (desk-gate's `GateRecord`, bound to the frame's
//! and the policy's digests) signed with the evidence key as an envelope `{payload,
//! signature_b64}`, appended to `<state_dir>/evidence/<session>/gate.jsonl`, synced, and read
//! back and verified before the frame's answer leaves. Not yet a kind of the hash-chained
//! journal (`docs/screenshot-gate.md`, "Evidence").

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt as _;

use desk_evidence::Envelope;

use super::*;

/// The file of a session's gate records, in its evidence directory.
const GATE_FILE: &str = "gate.jsonl";

/// Signs `record`, appends it to the session's gate file and reads it back.
pub(crate) fn gate_decision(
    evidence: Evidence<'_>,
    session_id: &SessionId,
    record: &desk_gate::GateRecord,
) -> Result<(), BrokerError> {
    let failed = |error: EvidenceError| BrokerError::Evidence {
        operation: "record a screenshot gate decision",
        source: Box::new(error),
    };
    let key = signing_key(evidence).map_err(failed)?;
    let envelope = Envelope::sign(record, &key).map_err(failed)?;
    let mut line = serde_json::to_vec(&envelope)
        .map_err(|error| failed(EvidenceError::Canonical(error.to_string())))?;
    line.push(b'\n');
    let directory = session_evidence_dir(&evidence.config.state_dir, session_id);
    create_private_dir(&evidence.config.state_dir, &directory).map_err(failed)?;
    let path = directory.join(GATE_FILE);
    let io = |operation| {
        let path = path.clone();
        move |source| {
            failed(EvidenceError::Io {
                operation,
                path,
                source,
            })
        }
    };
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .mode(0o600)
        .open(&path)
        .map_err(io("open"))?;
    let start = file.seek(SeekFrom::End(0)).map_err(io("seek"))?;
    file.write_all(&line).map_err(io("append"))?;
    file.sync_data().map_err(io("sync"))?;
    // Read back what was written, and verify it, before the answer leaves.
    file.seek(SeekFrom::Start(start)).map_err(io("seek"))?;
    let mut written = vec![0; line.len()];
    file.read_exact(&mut written).map_err(io("read back"))?;
    if written != line {
        return Err(failed(EvidenceError::Canonical(
            "the gate record read back differs from the one written".to_string(),
        )));
    }
    let read = Envelope::parse(&written[..written.len() - 1]).map_err(failed)?;
    read.verify(&key.verifying_key()).map_err(failed)
}
