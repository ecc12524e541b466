//! The broker's side of the observer: asks it for an observation of a session with a fresh
//! nonce ([`query`]), accepts only an answer whose peer is the observer's uid (`SO_PEERCRED`
//! equal to the owner of `<state_dir>.observer`), whose signature verifies with the observer's
//! public key (`<state_dir>.observer/observer.pub`, read at each query: the observer creates it
//! at its first start, possibly after the broker's), whose key id is that key's, which echoes
//! the nonce and the session, and which is fresh: made at most [`MAX_AGE_MS`] before it was
//! received (a constant, not a policy field) and not in the future beyond [`MAX_SKEW_MS`], and
//! whose `scope` is the one asked for (aimed at the requested point, or whole).
//! [`observe`] then stores the signed answer as received in
//! `<session>/observations/<observation_id>.json` (0600) and has it journaled as an
//! `observer_observation` record ([`record_body`]: the stored bytes' SHA-256, the key id, the
//! outcome, the frame, the element count, the times) before anything uses or answers it; one
//! that cannot be recorded is removed and refused. [`read_stored`] returns those bytes.
//!
//! Every failure is `insufficient_data`: whatever needs the observer's view is blocked.
//!
//! A broker whose config says an observer runs (`BrokerConfig::observer`: `serve` sets it and
//! starts one) has the high-risk hit-test (`approval.rs`) judge input from the observer's signed
//! view ([`view`]) and refuse it when there is none.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_contract::ErrorCode;
use desk_desktop::SessionDir;
use desk_evidence::record::ObserverObservation;
use desk_evidence::{Envelope, VerifyingKey};

use super::{
    MAX_ANSWER_BYTES, OBSERVATION_SCHEMA, Observation, ObservationOutcome, ObservationScope,
    ObserveRequest, key, socket_path, valid_observation_id,
};
use crate::error::BrokerError;
use crate::line_socket;
use crate::util::now_ms;

/// The oldest an observation may be when it arrives.
pub const MAX_AGE_MS: u64 = 5_000;
/// How far in the future an observation's wall time may be (clocks of one host).
pub const MAX_SKEW_MS: u64 = 1_000;
/// How long one exchange may take (the observer's tree deadline and the frame's hash fit).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(6);

/// An `insufficient_data` refusal naming why.
pub(crate) fn insufficient(message: impl Into<String>) -> BrokerError {
    BrokerError::Control {
        code: ErrorCode::InsufficientData,
        message: message.into(),
    }
}

/// A verified observation and its signed bytes, as received.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The observation.
    pub observation: Observation,
    /// The envelope's bytes (one JSON object, no newline).
    pub signed: Vec<u8>,
}

/// The uid the observer runs under: the owner of its directory.
fn observer_uid(state_dir: &Path) -> Option<u32> {
    std::fs::metadata(key::observer_dir(state_dir))
        .ok()
        .map(|metadata| metadata.uid())
}

/// Whether an observer answers on `state_dir`'s socket now (its key exists and a connection to
/// its socket is accepted).
pub fn running(state_dir: &Path) -> bool {
    key::public_key_path(state_dir).exists() && UnixStream::connect(socket_path(state_dir)).is_ok()
}

/// Asks the observer of `state_dir` to observe `session` with `nonce` and verifies the answer
/// (see the module documentation).
pub fn query(
    state_dir: &Path,
    session: &str,
    nonce: &str,
    point: Option<[u32; 2]>,
) -> Result<Verified, BrokerError> {
    let path = socket_path(state_dir);
    let refused = |why: String| insufficient(format!("observer {}: {why}", path.display()));
    let key: VerifyingKey = key::read_public_key(state_dir)
        .map_err(|error| refused(format!("{error}")))?
        .ok_or_else(|| refused("no observer ever started (no observer.pub)".to_string()))?;
    let stream = UnixStream::connect(&path).map_err(|error| refused(format!("{error}")))?;
    let peer = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|error| refused(format!("no peer credentials: {error}")))?
        .uid();
    if Some(peer) != observer_uid(state_dir) {
        return Err(refused(format!(
            "the socket's peer runs as uid {peer}, not the observer's"
        )));
    }
    line_socket::set_timeouts(&stream, EXCHANGE_TIMEOUT).map_err(refused)?;
    let request = serde_json::to_vec(&ObserveRequest {
        op: "observe".to_string(),
        session: session.to_string(),
        nonce: nonce.to_string(),
        point,
    })
    .map_err(BrokerError::json("encode an observe request"))?;
    let line = line_socket::exchange(&stream, request, MAX_ANSWER_BYTES).map_err(refused)?;
    let received = now_ms();
    let signed = line.trim_end().as_bytes().to_vec();
    if let Some(error) = line_socket::refusal(&signed) {
        return Err(refused(format!("the observer refused: {error}")));
    }
    let observation = verify(&signed, &key)?;
    if observation.nonce != nonce {
        return Err(refused("the answer does not echo the nonce".to_string()));
    }
    if observation.session_id != session {
        return Err(refused(format!(
            "the answer is about session {:?}",
            observation.session_id
        )));
    }
    if observation.scope != point.map(|point| ObservationScope { point }) {
        return Err(refused(format!(
            "the answer's scope {:?} is not the one asked for ({point:?})",
            observation.scope
        )));
    }
    if observation.at_ms > received.saturating_add(MAX_SKEW_MS) {
        return Err(refused(format!(
            "the observation is dated {} ms in the future",
            observation.at_ms - received
        )));
    }
    if received.saturating_sub(observation.at_ms) > MAX_AGE_MS {
        return Err(refused(format!(
            "the observation is {} ms old (at most {MAX_AGE_MS})",
            received - observation.at_ms
        )));
    }
    Ok(Verified {
        observation,
        signed,
    })
}

/// Verifies signed observation bytes with the observer's `key`: the envelope, the signature,
/// the schema, the key id and the observation id's form.
pub fn verify(signed: &[u8], key: &VerifyingKey) -> Result<Observation, BrokerError> {
    let refused = |why: String| insufficient(format!("observation: {why}"));
    let envelope =
        Envelope::parse(signed).map_err(|error| refused(format!("not signed: {error}")))?;
    envelope
        .verify(key)
        .map_err(|error| refused(format!("signature: {error}")))?;
    let observation: Observation = envelope
        .decode_payload()
        .map_err(|error| refused(format!("not an observation: {error}")))?;
    if observation.schema_version != OBSERVATION_SCHEMA {
        return Err(refused(format!(
            "schema {} (expected {OBSERVATION_SCHEMA})",
            observation.schema_version
        )));
    }
    if observation.observer_key_id != key.fingerprint() {
        return Err(refused("the key id is not the observer's key".to_string()));
    }
    if !valid_observation_id(&observation.observation_id) {
        return Err(refused("malformed observation id".to_string()));
    }
    Ok(observation)
}

/// Appends an observation's journal record (`crate::evidence::observer_observation`).
pub(crate) type Recorder<'a> = &'a dyn Fn(ObserverObservation) -> Result<(), BrokerError>;

/// The `observer_observation` record of a verified observation.
pub fn record_body(verified: &Verified) -> ObserverObservation {
    let observation = &verified.observation;
    ObserverObservation {
        observation_id: observation.observation_id.clone(),
        signed_sha256: desk_evidence::sha256_hex(&verified.signed),
        signed_bytes: verified.signed.len() as u64,
        observer_key_id: observation.observer_key_id.clone(),
        outcome: match observation.outcome {
            ObservationOutcome::Observed => "observed",
            ObservationOutcome::InsufficientData => "insufficient_data",
        }
        .to_string(),
        frame_sha256: observation.frame.as_ref().map(|frame| frame.sha256.clone()),
        element_count: observation.elements.len() as u64,
        truncated: observation.truncated,
        observed_at_ms: observation.at_ms,
        monotonic_ms: observation.monotonic_ms,
        tree_ms: observation.tree_ms,
    }
}

fn stored_path(session_dir: &SessionDir, observation_id: &str) -> PathBuf {
    session_dir
        .path()
        .join("observations")
        .join(format!("{observation_id}.json"))
}

/// Asks the observer for a fresh observation of `session` ([`query`]), stores it in the
/// session's directory (0600, in a 0700 directory), has `record` journal it and returns it. An
/// observation with outcome `insufficient_data` is stored and recorded too (it is evidence) and
/// then refused; one that cannot be recorded is removed and refused.
pub(crate) fn observe(
    state_dir: &Path,
    session_dir: &SessionDir,
    session: &str,
    point: Option<[u32; 2]>,
    record: Recorder<'_>,
) -> Result<Verified, BrokerError> {
    let mut random = [0u8; 32];
    getrandom::fill(&mut random)
        .map_err(|error| BrokerError::Internal(format!("random: {error}")))?;
    let nonce = hex::encode(random);
    let verified = query(state_dir, session, &nonce, point)?;
    let path = stored_path(session_dir, &verified.observation.observation_id);
    if let Some(dir) = path.parent() {
        crate::private::ensure_private_dir(dir, crate::private::DirUse::State)?;
    }
    let mut file = crate::private::create_file(&path).map_err(BrokerError::io("create", &path))?;
    file.write_all(&verified.signed)
        .and_then(|()| file.sync_all())
        .map_err(BrokerError::io("write", &path))?;
    let observation = &verified.observation;
    if let Err(error) = record(record_body(&verified)) {
        if let Err(removal) = std::fs::remove_file(&path) {
            tracing::warn!(path = %path.display(), %removal, "cannot remove an unrecorded observation");
        }
        return Err(insufficient(format!(
            "the observation {} could not be recorded in the session's journal: {error}",
            observation.observation_id
        )));
    }
    tracing::info!(
        session_id = session,
        observation_id = observation.observation_id,
        outcome = ?observation.outcome,
        elements = observation.elements.len(),
        frame_sha256 = observation.frame.as_ref().map(|frame| frame.sha256.as_str()),
        tree_ms = observation.tree_ms,
        "observer observation stored"
    );
    if observation.outcome == ObservationOutcome::InsufficientData {
        return Err(insufficient(format!(
            "the observer could not see the session's app ({}): {}",
            observation.observation_id,
            observation.reason.as_deref().unwrap_or("no reason given")
        )));
    }
    Ok(verified)
}

/// The fresh, verified and stored view of `session` by the observer of the broker on
/// `state_dir`, as a tree for the hit-test, journaled by `record` first, with its scope: aimed
/// at `point` when one is given (a pointer step's; the tree then decides that point only), else
/// whole. An observer that is gone, an answer that does not verify, is stale or has another
/// scope, and an `insufficient_data` observation are errors.
pub(crate) fn view(
    state_dir: &Path,
    session: &crate::ids::SessionId,
    point: Option<[u32; 2]>,
    record: Recorder<'_>,
) -> Result<(desk_contract::a11y::AxTree, Option<ObservationScope>), BrokerError> {
    let session_dir = desk_desktop::StateDir::new(state_dir).session(session.as_str());
    observe(state_dir, &session_dir, session.as_str(), point, record)
        .map(|verified| (verified.observation.tree(), verified.observation.scope))
}

/// The signed bytes of a stored observation of the session, as stored.
pub fn read_stored(session_dir: &SessionDir, observation_id: &str) -> Result<Vec<u8>, BrokerError> {
    if !valid_observation_id(observation_id) {
        return Err(BrokerError::NotFound(format!(
            "observation {observation_id:?}"
        )));
    }
    let path = stored_path(session_dir, observation_id);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(BrokerError::NotFound(
            format!("observation {observation_id:?}"),
        )),
        Err(error) => Err(BrokerError::io("read", &path)(error)),
    }
}
