//! Reaching a remote worker: TCP, the mutual-TLS handshake, `hello` and its checks (protocol
//! version, display size, instance id), and the session's record of which worker it is on.
//!
//! Invariant: a connection is handed out only after `hello` proved the worker speaks this
//! protocol on the expected display and, when the session already has a worker, is that same
//! worker instance; every failure before that is typed and nothing else was sent.

use std::io::Write as _;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use desk_contract::DisplaySize;
use desk_contract::worker::{WORKER_PROTOCOL_VERSION, WorkerOp, WorkerValue};
use rustls::ClientConnection;
use rustls_pki_types::ServerName;
use serde::{Deserialize, Serialize};

use crate::error::BackendError;
use crate::worker_client::WorkerClient;

/// How long the TCP connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the TLS handshake and the first `hello` may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one write to the worker may block.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// `<session>/remote-worker.json`: which worker a session's desktop is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Record {
    /// `tcp://HOST:PORT` as configured.
    pub(super) endpoint: String,
    /// The instance id the worker said in its first `hello`.
    pub(super) instance_id: String,
}

impl Record {
    /// Reads the record; `Ok(None)` when the session never had a remote desktop.
    pub(super) fn read(path: &Path) -> Result<Option<Record>, BackendError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(BackendError::DesktopFailed(format!(
                    "cannot read {}: {error}",
                    path.display()
                )));
            }
        };
        serde_json::from_str(&text).map(Some).map_err(|error| {
            BackendError::DesktopFailed(format!("{} is unreadable: {error}", path.display()))
        })
    }

    /// Writes the record (mode 0600), replacing an older one.
    pub(super) fn write(&self, path: &Path) -> Result<(), BackendError> {
        let failed = |error: std::io::Error| {
            BackendError::DesktopFailed(format!("cannot write {}: {error}", path.display()))
        };
        let text =
            serde_json::to_vec(self).map_err(|error| failed(std::io::Error::other(error)))?;
        let temporary = path.with_extension("json.tmp");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(failed)?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(failed)?;
        std::fs::rename(&temporary, path).map_err(failed)
    }
}

/// A checked connection and the worker's instance id.
pub(super) struct Connected {
    pub(super) client: WorkerClient,
    pub(super) instance_id: String,
}

/// Connects to the worker at `endpoint`, completes mutual TLS with `tls`, says `hello` and
/// checks the answer: protocol version, `display`, and (`expected_instance`) the worker instance.
pub(super) fn connect(
    endpoint: &desk_worker_io::TcpEndpoint,
    tls: &std::sync::Arc<rustls::ClientConfig>,
    display: DisplaySize,
    expected_instance: Option<&str>,
) -> Result<Connected, BackendError> {
    let unreachable = |why: String| BackendError::WorkerUnreachable(format!("{endpoint}: {why}"));
    let addresses = endpoint
        .authority()
        .to_socket_addrs()
        .map_err(|error| unreachable(format!("cannot resolve the host: {error}")))?;
    let mut last = None;
    let mut tcp = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(error) => last = Some(format!("{address}: {error}")),
        }
    }
    let mut tcp = tcp.ok_or_else(|| {
        unreachable(last.unwrap_or_else(|| "the host has no address".to_string()))
    })?;
    let io = |error: std::io::Error| unreachable(error.to_string());
    tcp.set_nodelay(true).map_err(io)?;
    tcp.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(io)?;
    tcp.set_write_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(io)?;
    let name = ServerName::try_from(endpoint.host.clone()).map_err(|error| {
        BackendError::Rejected(format!("{endpoint}: not a host name for TLS: {error}"))
    })?;
    let mut conn = ClientConnection::new(tls.clone(), name)
        .map_err(|error| BackendError::WorkerTlsRefused(format!("{endpoint}: {error}")))?;
    while conn.is_handshaking() {
        if let Err(error) = conn.complete_io(&mut tcp) {
            return Err(classify(
                endpoint,
                &error.to_string(),
                error
                    .get_ref()
                    .is_some_and(|inner| inner.is::<rustls::Error>()),
            ));
        }
    }
    // Between requests the connection may idle for as long as the session does.
    tcp.set_read_timeout(None).map_err(io)?;
    tcp.set_write_timeout(Some(WRITE_TIMEOUT)).map_err(io)?;
    let control = tcp.try_clone().map_err(io)?;
    let mut client = WorkerClient::over_tls(rustls::StreamOwned::new(conn, tcp), control)?;
    // Under TLS 1.3 the worker checks the broker's certificate after the broker finished its
    // side of the handshake: a refusal arrives as an alert on this first answer.
    let hello = match client.call(WorkerOp::Hello, HANDSHAKE_TIMEOUT) {
        Ok(WorkerValue::Hello(hello)) => hello,
        Ok(_) => {
            return Err(BackendError::WorkerMismatch(format!(
                "{endpoint} answered hello with something else"
            )));
        }
        Err(BackendError::Worker(message)) => {
            return Err(classify(endpoint, &message, message.contains("alert")));
        }
        Err(other) => return Err(other),
    };
    if hello.protocol_version != WORKER_PROTOCOL_VERSION {
        return Err(BackendError::WorkerMismatch(format!(
            "{endpoint} speaks worker protocol {}, this broker {WORKER_PROTOCOL_VERSION}",
            hello.protocol_version
        )));
    }
    if hello.display != display {
        return Err(BackendError::WorkerMismatch(format!(
            "{endpoint}'s display is {}x{}, the session's {}x{} (serve --display)",
            hello.display.width, hello.display.height, display.width, display.height
        )));
    }
    let Some(instance_id) = hello.instance_id else {
        return Err(BackendError::WorkerMismatch(format!(
            "{endpoint} did not say its instance id: not a listening worker"
        )));
    };
    if let Some(expected) = expected_instance
        && expected != instance_id
    {
        return Err(BackendError::WorkerMismatch(format!(
            "{endpoint} is worker instance {instance_id}, the session's desktop was on \
             {expected} (the worker restarted: its desktop is gone)"
        )));
    }
    Ok(Connected {
        client,
        instance_id,
    })
}

/// A TLS refusal when rustls said so, else an unreachable worker.
fn classify(endpoint: &desk_worker_io::TcpEndpoint, message: &str, tls: bool) -> BackendError {
    if tls {
        BackendError::WorkerTlsRefused(format!("{endpoint}: {message}"))
    } else {
        BackendError::WorkerUnreachable(format!("{endpoint}: {message}"))
    }
}
