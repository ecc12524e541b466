//! Approval receipts: their digests, signature and durable store.
//!
//! - The action digest is SHA-256 of the RFC 8785 canonical JSON of the wire [`ExactAction`]
//!   (`{"node":3,"observation_id":"…","type":"ax_press"}`), the element digest the same of the
//!   [`ElementBinding`]. An executor request matches a receipt only when its action's digest is
//!   the receipt's, byte for byte.
//! - The receipt is signed with the broker's evidence key (Ed25519 over the canonical payload):
//!   the key `evidence verify --key evidence.pub` already trusts, so a receipt and the journal
//!   record of its issue verify with one key, and no second broker key needs keeping. The
//!   approver's own key authorizes the request; the broker attests what it checked.
//! - Store: `<state_dir>/evidence/<session>/approvals/` (0700, outside anything the sandboxed
//!   desktop sees): `<approval_id>.json` (the signed receipt and the element binding, 0600) and,
//!   once consumed, `<approval_id>.consumed`, created exclusively (`O_EXCL`) and fsynced with its
//!   directory before any invocation: a second consumption, concurrent or after a crash, finds it
//!   and is refused. The executor re-verifies the signature of the stored receipt.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use desk_contract::approval::{
    APPROVAL_RECEIPT_SCHEMA, ApprovalPayload, ApprovalReceipt, ElementBinding, ExactAction,
};
use desk_evidence::{SigningKey, VerifyingKey, canonical_bytes, canonical_sha256};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::ids::SessionId;

fn internal(what: &str) -> impl FnOnce(desk_evidence::EvidenceError) -> BrokerError + '_ {
    move |error| BrokerError::Internal(format!("{what}: {error}"))
}

/// SHA-256 of the canonical JSON of `action`.
pub(crate) fn action_sha256(action: &ExactAction) -> Result<String, BrokerError> {
    canonical_sha256(action).map_err(internal("encode an exact action"))
}

/// SHA-256 of the canonical JSON of `element`.
pub(crate) fn element_sha256(element: &ElementBinding) -> Result<String, BrokerError> {
    canonical_sha256(element).map_err(internal("encode an element binding"))
}

/// A fresh `apr-` id: 16 random bytes in lowercase hex.
pub(crate) fn new_approval_id() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| BrokerError::Internal(format!("draw an approval id: {error}")))?;
    Ok(format!("apr-{}", hex::encode(bytes)))
}

/// Whether `text` has the shape of an approval id (so it can name a file).
pub(crate) fn is_approval_id(text: &str) -> bool {
    text.len() == 36
        && text.starts_with("apr-")
        && text[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Signs `payload` into a receipt.
pub(crate) fn sign(
    key: &SigningKey,
    payload: ApprovalPayload,
) -> Result<ApprovalReceipt, BrokerError> {
    let bytes = canonical_bytes(&payload).map_err(internal("encode an approval receipt"))?;
    Ok(ApprovalReceipt {
        signature_b64: STANDARD.encode(key.sign_bytes(&bytes)),
        payload,
    })
}

/// Whether `receipt` carries a valid signature of `key` and the receipt schema.
pub(crate) fn verify(key: &VerifyingKey, receipt: &ApprovalReceipt) -> bool {
    let Ok(bytes) = canonical_bytes(&receipt.payload) else {
        return false;
    };
    let Some(signature) = STANDARD
        .decode(&receipt.signature_b64)
        .ok()
        .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
    else {
        return false;
    };
    receipt.payload.schema == APPROVAL_RECEIPT_SCHEMA && key.verify_bytes(&bytes, &signature)
}

/// What the store keeps of an issued approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Stored {
    pub(crate) receipt: ApprovalReceipt,
    pub(crate) element: ElementBinding,
}

/// What the consumption marker holds: the request that consumed the receipt and the program it
/// ran, so a retry of that request replays its journaled answer instead of running again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Consumed {
    pub(crate) request_id: String,
    pub(crate) expected_action_index: u64,
    /// The fresh observation the element was re-resolved in, and its node there.
    pub(crate) observation_id: String,
    pub(crate) node: u32,
}

/// One session's approvals on disk.
pub(crate) struct ReceiptStore {
    dir: PathBuf,
    root: PathBuf,
}

fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> BrokerError {
    let message = format!("{what} {}", path.display());
    move |error| BrokerError::Internal(format!("{message}: {error}"))
}

fn sync_dir(dir: &Path) -> Result<(), BrokerError> {
    File::open(dir)
        .and_then(|dir_file| dir_file.sync_all())
        .map_err(io("sync", dir))
}

impl ReceiptStore {
    /// The store of `session_id` under `state_dir`.
    pub(crate) fn new(state_dir: &Path, session_id: &SessionId) -> ReceiptStore {
        let root = desk_desktop::StateDir::new(state_dir).session_evidence(session_id.as_str());
        ReceiptStore {
            dir: root.join("approvals"),
            root,
        }
    }

    fn path(&self, approval_id: &str, suffix: &str) -> PathBuf {
        self.dir.join(format!("{approval_id}.{suffix}"))
    }

    fn write_new(&self, path: &Path, bytes: &[u8]) -> Result<bool, BrokerError> {
        if !self.dir.exists() {
            crate::private::create_dir_below(&self.root, &self.dir)
                .map_err(io("create", &self.dir))?;
        }
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(error) => return Err(io("create", path)(error)),
        };
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(io("write", path))?;
        sync_dir(&self.dir)?;
        Ok(true)
    }

    /// Stores an issued approval (its id is fresh: an existing file is an internal error).
    pub(crate) fn put(&self, stored: &Stored) -> Result<(), BrokerError> {
        let path = self.path(&stored.receipt.payload.approval_id, "json");
        let bytes = serde_json::to_vec(stored).map_err(BrokerError::json("encode an approval"))?;
        if self.write_new(&path, &bytes)? {
            Ok(())
        } else {
            Err(BrokerError::Internal(format!(
                "approval {} exists already",
                stored.receipt.payload.approval_id
            )))
        }
    }

    /// The approval `approval_id`, if this session has it.
    pub(crate) fn get(&self, approval_id: &str) -> Result<Option<Stored>, BrokerError> {
        if !is_approval_id(approval_id) {
            return Ok(None);
        }
        let path = self.path(approval_id, "json");
        match std::fs::read(&path) {
            Ok(bytes) => desk_evidence::strict::parse_typed(&bytes)
                .map(Some)
                .map_err(|error| BrokerError::Internal(format!("approval {approval_id}: {error}"))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io("read", &path)(error)),
        }
    }

    /// Marks `approval_id` consumed by `consumed`, durably; `false` when it was consumed already.
    pub(crate) fn consume(
        &self,
        approval_id: &str,
        consumed: &Consumed,
    ) -> Result<bool, BrokerError> {
        let bytes =
            serde_json::to_vec(consumed).map_err(BrokerError::json("encode a consumption"))?;
        self.write_new(&self.path(approval_id, "consumed"), &bytes)
    }

    /// Who consumed `approval_id`, if it was.
    pub(crate) fn consumed(&self, approval_id: &str) -> Result<Option<Consumed>, BrokerError> {
        let path = self.path(approval_id, "consumed");
        match std::fs::read(&path) {
            Ok(bytes) => desk_evidence::strict::parse_typed(&bytes)
                .map(Some)
                .map_err(|error| {
                    BrokerError::Internal(format!("approval {approval_id} consumption: {error}"))
                }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io("read", &path)(error)),
        }
    }
}

impl ReceiptStore {
    /// Records how the approved action `approval_id` ended (for a retry of its request).
    pub(crate) fn put_outcome(
        &self,
        approval_id: &str,
        state: desk_contract::approval::ApprovedState,
        effect: &desk_contract::approval::EffectReadback,
    ) -> Result<(), BrokerError> {
        let bytes = serde_json::to_vec(&(state, effect))
            .map_err(BrokerError::json("encode an approved action's outcome"))?;
        self.write_new(&self.path(approval_id, "outcome"), &bytes)
            .map(|_| ())
    }

    /// How the approved action `approval_id` ended, once known.
    pub(crate) fn outcome(
        &self,
        approval_id: &str,
    ) -> Result<
        Option<(
            desk_contract::approval::ApprovedState,
            desk_contract::approval::EffectReadback,
        )>,
        BrokerError,
    > {
        let path = self.path(approval_id, "outcome");
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|error| {
                BrokerError::Internal(format!("approval {approval_id} outcome: {error}"))
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io("read", &path)(error)),
        }
    }
}
