//! The observer process's loop (`deskbroker observer` runs [`run_observer`] once it is on its own
//! uid): binds `<state_dir>/observer.sock` (0600), answers each connection of the broker's uid
//! (`SO_PEERCRED`; any other peer is closed unanswered) with one signed [`Observation`], and
//! exits when its broker is gone.
//!
//! An observation is made from what the observer reads itself (`sight.rs`): the app's tree,
//! from outside the session's sandbox, and the sha256 of the last frame captured. A request
//! with a `point` gets a walk aimed at it and an observation whose `scope` names the point.
//!
//! A tree that cannot be read gives a signed observation with outcome `insufficient_data` and
//! the reason; so does an unknown session.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use desk_contract::a11y::AxTree;
use desk_desktop::StateDir;
use desk_evidence::{Envelope, SigningKey};

use super::{
    MAX_REQUEST_BYTES, OBSERVATION_SCHEMA, Observation, ObservationOutcome, ObservationScope,
    ObserveRequest, ObservedElement, key, socket_path, valid_nonce,
};
use crate::error::BrokerError;
use crate::ids::SessionId;
use crate::line_socket;
use crate::util::now_ms;

/// How long reading a request and writing an answer may take.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Most connections answered at once; more are closed unanswered (the client then blocks).
const MAX_CONCURRENT: usize = 8;

/// How the observer runs.
#[derive(Debug, Clone)]
pub struct ObserverConfig {
    /// The broker's state directory.
    pub state_dir: PathBuf,
    /// The broker's uid: the only peer answered.
    pub broker_uid: u32,
    /// `own` or `shared` (the observer's uid is the broker's).
    pub identity: &'static str,
    /// The broker's pid: the observer exits once it is gone.
    pub broker_pid: Option<u32>,
}

struct Observer {
    config: ObserverConfig,
    key: SigningKey,
    key_id: String,
}

/// Runs the observer until its broker is gone (or forever without `broker_pid`).
pub fn run_observer(config: ObserverConfig) -> Result<(), BrokerError> {
    let state_dir = config.state_dir.clone();
    let others: Vec<_> = [
        crate::evidence::public_key_path(&state_dir),
        crate::watchdog::key::public_key_path(&state_dir),
    ]
    .iter()
    .filter_map(|path| desk_evidence::VerifyingKey::read(path).ok())
    .collect();
    let key = key::load_or_create(&state_dir, &others)?;
    let key_id = key.verifying_key().fingerprint();
    let path = socket_path(&state_dir);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(BrokerError::io("bind", &path))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(BrokerError::io("chmod", &path))?;
    let broker = config.broker_pid.and_then(|pid| {
        Some(desk_desktop::launcher::RecordedProcess {
            role: "broker".to_string(),
            pid,
            start_ticks: desk_desktop::destroy::start_time(pid)?,
        })
    });
    if let Some(broker) = broker {
        let watched = path.clone();
        std::thread::Builder::new()
            .name("observer-broker".to_string())
            .spawn(move || {
                while broker.is_alive() {
                    std::thread::sleep(Duration::from_secs(1));
                }
                tracing::info!("broker gone; observer exits");
                let _ = std::fs::remove_file(&watched);
                std::process::exit(0);
            })
            .map_err(|error| BrokerError::Internal(format!("observer thread: {error}")))?;
    }
    tracing::info!(
        socket = %path.display(),
        key_id,
        identity = config.identity,
        uid = nix::unistd::geteuid().as_raw(),
        "observer running"
    );
    let observer = Arc::new(Observer {
        config,
        key,
        key_id,
    });
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                tracing::debug!(%error, "observer accept failed");
                continue;
            }
        };
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONCURRENT {
            busy.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!("observer busy: a connection closed unanswered");
            continue;
        }
        let (observer, busy) = (observer.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("observer-answer".to_string())
            .spawn(move || {
                observer.answer(stream);
                busy.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "observer thread not started");
        }
    }
    Ok(())
}

impl Observer {
    fn answer(&self, stream: UnixStream) {
        let peer = line_socket::peer_uid(&stream);
        if peer != Some(self.config.broker_uid) {
            tracing::warn!(peer_uid = ?peer, "observer refused a peer");
            return;
        }
        let served = line_socket::serve_one(&stream, IO_TIMEOUT, MAX_REQUEST_BYTES, |line| {
            self.signed_answer(line)
        });
        if let Err(error) = served {
            tracing::debug!(%error, "observer answer not delivered");
        }
    }

    fn signed_answer(&self, line: &str) -> Result<Vec<u8>, String> {
        let request: ObserveRequest = serde_json::from_str(line.trim_end())
            .map_err(|error| format!("not an observe request: {error}"))?;
        if request.op != "observe" {
            return Err(format!("unknown operation {:?}", request.op));
        }
        if !valid_nonce(&request.nonce) {
            return Err("the nonce must be 16 to 128 characters of A-Z, a-z, 0-9, - and _".into());
        }
        let session = SessionId::parse(&request.session)
            .map_err(|_| "the session is not a session id".to_string())?;
        let observation = self
            .observe(&session, &request.nonce, request.point)
            .map_err(|error| format!("cannot observe: {error}"))?;
        Envelope::sign(&observation, &self.key)
            .and_then(|envelope| envelope.canonical_bytes())
            .map_err(|error| format!("cannot sign the answer: {error}"))
    }

    fn observe(
        &self,
        session: &SessionId,
        nonce: &str,
        point: Option<[u32; 2]>,
    ) -> Result<Observation, BrokerError> {
        let session_dir = StateDir::new(&self.config.state_dir).session(session.as_str());
        let started = Instant::now();
        let (tree, frame) = if session_dir.path().is_dir() {
            (
                super::sight::read_tree(&session_dir, point),
                super::sight::last_frame(&session_dir),
            )
        } else {
            (Err("no such session".to_string()), None)
        };
        let tree_ms = started.elapsed().as_millis() as u64;
        let (outcome, reason, elements, truncated) = match tree {
            Ok(tree) => (
                ObservationOutcome::Observed,
                None,
                elements(&tree),
                tree.truncated,
            ),
            Err(reason) => (
                ObservationOutcome::InsufficientData,
                Some(reason),
                Vec::new(),
                false,
            ),
        };
        let monotonic = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let monotonic_ms = u64::try_from(monotonic.tv_sec).unwrap_or(0) * 1000
            + u64::try_from(monotonic.tv_nsec).unwrap_or(0) / 1_000_000;
        Ok(Observation {
            schema_version: OBSERVATION_SCHEMA.to_string(),
            observation_id: new_id()?,
            session_id: session.as_str().to_string(),
            nonce: nonce.to_string(),
            outcome,
            reason,
            elements,
            truncated,
            scope: point.map(|point| ObservationScope { point }),
            frame,
            monotonic_ms,
            at_ms: now_ms(),
            tree_ms,
            observer_key_id: self.key_id.clone(),
            observer_pid: std::process::id(),
            observer_uid: nix::unistd::geteuid().as_raw(),
            observer_identity: self.config.identity.to_string(),
        })
    }
}

fn new_id() -> Result<String, BrokerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| BrokerError::Internal(format!("random: {error}")))?;
    Ok(format!("obs_{}", hex::encode(bytes)))
}

/// The tree's nodes as elements, each with its path of child ordinals.
fn elements(tree: &AxTree) -> Vec<ObservedElement> {
    let mut ids: Vec<String> = Vec::with_capacity(tree.nodes.len());
    let mut ordinals: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(tree.nodes.len());
    for node in &tree.nodes {
        let id = match node.parent {
            None => "0".to_string(),
            Some(parent) => {
                let ordinal = ordinals.entry(parent).or_insert(0);
                let parent_id = ids.get(parent as usize).cloned().unwrap_or_default();
                let id = format!("{parent_id}.{ordinal}");
                *ordinal += 1;
                id
            }
        };
        ids.push(id.clone());
        out.push(ObservedElement {
            id,
            index: node.index,
            parent: node.parent,
            role: node.role.clone(),
            name: node.name.clone(),
            bounds: node.bounds,
            states: node.states.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_carry_paths_of_child_ordinals() {
        let node = |index: u32, parent: Option<u32>| desk_contract::a11y::AxNode {
            index,
            parent,
            depth: 0,
            role: "r".to_string(),
            name: String::new(),
            states: Vec::new(),
            bounds: None,
            actions: Vec::new(),
            editable: false,
            child_count: 0,
            window: Default::default(),
        };
        let tree = AxTree {
            observation_id: "ax_0".to_string(),
            nodes: vec![
                node(0, None),
                node(1, Some(0)),
                node(2, Some(0)),
                node(3, Some(2)),
            ],
            truncated: false,
            elapsed_ms: 0,
        };
        let ids: Vec<String> = elements(&tree).into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["0", "0.0", "0.1", "0.1.0"]);
    }
}
