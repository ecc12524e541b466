//! A desktop on a remote worker (`serve --worker tcp://HOST:PORT`): [`RemoteWorker`] (where it
//! is and the broker's TLS identity), [`RemoteFactory`] (one session at a time on it) and
//! [`RemoteDesktop`], a [`DesktopBackend`] that speaks the worker protocol over TCP with mutual
//! TLS (`docs/worker-protocol.md`, "Transport").
//!
//! The worker launched its app itself (`--launch`); a reset re-binds and re-verifies that app
//! (`await_app` on `hello`'s `app_pid`: window found, maximized, stable) but cannot restart it,
//! and the broker launches, sandboxes and limits nothing on the worker's host.
//!
//! Invariants: a dropped connection is noticed before the next request is written and replaced
//! by a new one to the **same** worker instance (`hello`'s `instance_id`, recorded in
//! `<session>/remote-worker.json` so a restarted broker reattaches the same way), else the
//! operation fails typed with nothing sent; a request whose connection failed after it was
//! written is never sent again (an `execute` is then an unknown outcome).
//!
//! Over 400 lines: the factory and the desktop share the instance record and the holder, and
//! the desktop forwards every trait method and declares its capabilities beside them; the
//! connection itself is apart (`remote/connect.rs`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use desk_contract::clipboard::{ClipboardText, ClipboardWritten};
use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff};
use desk_contract::worker::{WorkerOp, WorkerValue};
use desk_contract::{DisplaySize, InputAction, SettlePolicy};
use desk_worker_io::TcpEndpoint;

use crate::factory::{BackendFactory, BackendRequest};
use crate::layout::SessionDir;
use crate::worker_client::WorkerClient;
use crate::{AppLaunch, BackendError, DesktopBackend};

mod connect;

use connect::{Record, connect};

/// How long one request may take beyond its own waits.
const WORKER_TIMEOUT: Duration = Duration::from_secs(30);
/// Clipboard requests have the worker's 10 s deadline plus a margin.
const CLIPBOARD_TIMEOUT: Duration = Duration::from_secs(15);

/// A remote worker: its endpoint and the broker's TLS configuration for it.
#[derive(Debug, Clone)]
pub struct RemoteWorker {
    endpoint: TcpEndpoint,
    tls: Arc<rustls::ClientConfig>,
}

impl RemoteWorker {
    /// The worker at `endpoint` (`tcp://HOST:PORT`, HOST as its certificate names it), whose
    /// certificate must chain to `worker_ca`, reached with the broker's client identity
    /// (`cert`, `key`). Reads the files now, so a bad one stops `serve` at its start.
    pub fn new(
        endpoint: &str,
        worker_ca: &Path,
        cert: &Path,
        key: &Path,
    ) -> Result<RemoteWorker, BackendError> {
        let endpoint = TcpEndpoint::parse(endpoint)
            .map_err(|error| BackendError::Rejected(error.to_string()))?;
        if endpoint.port == 0 {
            return Err(BackendError::Rejected(format!(
                "{endpoint}: a remote worker needs its port"
            )));
        }
        let tls = desk_worker_io::tls::broker_config(worker_ca, cert, key)
            .map_err(|error| BackendError::WorkerTlsRefused(error.to_string()))?;
        Ok(RemoteWorker { endpoint, tls })
    }

    /// Where the worker is.
    pub fn endpoint(&self) -> &TcpEndpoint {
        &self.endpoint
    }

    /// Connects, completes mutual TLS and checks `hello` (protocol, `display`, and the
    /// `expected` instance when given), then disconnects; returns the worker's instance id.
    /// What a session's connection goes through, without a session.
    pub fn check(
        &self,
        display: DisplaySize,
        expected: Option<&str>,
    ) -> Result<String, BackendError> {
        connect(&self.endpoint, &self.tls, display, expected).map(|connected| connected.instance_id)
    }
}

/// The session a remote worker's desktop belongs to, if any.
type Holder = Arc<Mutex<Option<String>>>;

/// One [`RemoteDesktop`] at a time on one remote worker.
#[derive(Debug, Clone)]
pub struct RemoteFactory {
    worker: RemoteWorker,
    holder: Holder,
}

impl RemoteFactory {
    /// Sessions on `worker`.
    pub fn new(worker: RemoteWorker) -> RemoteFactory {
        RemoteFactory {
            worker,
            holder: Arc::new(Mutex::new(None)),
        }
    }

    /// Takes the worker for `session`, refusing while another session holds it.
    fn take(&self, session: &str) -> Result<(), BackendError> {
        let mut holder = self.holder.lock().map_err(|_| {
            BackendError::DesktopFailed("the remote worker's holder is poisoned".into())
        })?;
        match holder.as_deref() {
            Some(other) if other != session => Err(BackendError::Rejected(format!(
                "the remote worker at {} serves session {other}; it serves one session at a time",
                self.worker.endpoint
            ))),
            _ => {
                *holder = Some(session.to_string());
                Ok(())
            }
        }
    }

    fn open(
        &self,
        request: &BackendRequest,
        expected: Option<&str>,
    ) -> Result<RemoteDesktop, BackendError> {
        self.take(&request.session_id)?;
        let opened = connect(
            &self.worker.endpoint,
            &self.worker.tls,
            request.display,
            expected,
        )
        .and_then(|connected| {
            let record = Record {
                endpoint: self.worker.endpoint.to_string(),
                instance_id: connected.instance_id.clone(),
            };
            record.write(&request.session_dir.remote_worker_file())?;
            Ok(connected)
        });
        match opened {
            Ok(connected) => {
                tracing::info!(
                    session = %request.session_id,
                    worker = %self.worker.endpoint,
                    instance_id = %connected.instance_id,
                    "remote worker connected"
                );
                Ok(RemoteDesktop {
                    worker: self.worker.clone(),
                    holder: Arc::clone(&self.holder),
                    session_id: request.session_id.clone(),
                    session_dir: request.session_dir.clone(),
                    display: request.display,
                    instance_id: connected.instance_id,
                    client: Some(connected.client),
                    shut: false,
                })
            }
            Err(error) => {
                release_holder(&self.holder, &request.session_id);
                Err(error)
            }
        }
    }
}

fn release_holder(holder: &Holder, session: &str) {
    if let Ok(mut holder) = holder.lock()
        && holder.as_deref() == Some(session)
    {
        *holder = None;
    }
}

impl BackendFactory for RemoteFactory {
    fn create(&self, request: &BackendRequest) -> Result<Box<dyn DesktopBackend>, BackendError> {
        Ok(Box::new(self.open(request, None)?))
    }

    fn reattach(
        &self,
        request: &BackendRequest,
    ) -> Result<Option<Box<dyn DesktopBackend>>, BackendError> {
        let Some(record) = Record::read(&request.session_dir.remote_worker_file())? else {
            return Ok(None);
        };
        if record.endpoint != self.worker.endpoint.to_string() {
            return Err(BackendError::WorkerMismatch(format!(
                "the session's desktop is on {}, this broker's worker is {}",
                record.endpoint, self.worker.endpoint
            )));
        }
        let desktop = self.open(request, Some(&record.instance_id))?;
        Ok(Some(Box::new(desktop)))
    }

    fn reap_orphans(&self, session_dir: &SessionDir) -> usize {
        // Nothing runs here; the record only names the worker.
        let _ = std::fs::remove_file(session_dir.remote_worker_file());
        0
    }

    /// A clipboard and detaching; accessibility and the windows view are not promised, since
    /// not every remote worker has them (the Windows worker), so the broker documents neither.
    fn capabilities(&self) -> crate::BackendCapabilities {
        crate::BackendCapabilities {
            clipboard: true,
            detach: true,
            ..crate::BackendCapabilities::NONE
        }
    }
}

/// A session's desktop on a remote worker.
pub struct RemoteDesktop {
    worker: RemoteWorker,
    holder: Holder,
    session_id: String,
    session_dir: SessionDir,
    display: DisplaySize,
    instance_id: String,
    client: Option<WorkerClient>,
    shut: bool,
}

impl RemoteDesktop {
    /// The connection, reconnected to the same worker instance when the last one is gone.
    fn client(&mut self) -> Result<&mut WorkerClient, BackendError> {
        if self.shut {
            return Err(BackendError::ShutDown);
        }
        if self.client.as_mut().is_none_or(WorkerClient::is_closed) {
            self.client = None;
            tracing::info!(worker = %self.worker.endpoint, "reconnecting to the remote worker");
            let connected = connect(
                &self.worker.endpoint,
                &self.worker.tls,
                self.display,
                Some(&self.instance_id),
            )?;
            self.client = Some(connected.client);
        }
        self.client
            .as_mut()
            .ok_or_else(|| BackendError::WorkerUnreachable("no connection".into()))
    }

    fn call(&mut self, op: WorkerOp, timeout: Duration) -> Result<WorkerValue, BackendError> {
        self.client()?.call(op, timeout)
    }

    /// Which worker instance the desktop is on.
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }
}

fn unexpected(what: &str) -> BackendError {
    BackendError::Worker(format!(
        "the remote worker answered {what} with something else"
    ))
}

impl DesktopBackend for RemoteDesktop {
    fn display_size(&self) -> DisplaySize {
        self.display
    }

    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        let WorkerValue::Hello(hello) = self.call(WorkerOp::Hello, WORKER_TIMEOUT)? else {
            return Err(unexpected("hello"));
        };
        let Some(pid) = hello.app_pid else {
            return Err(BackendError::Rejected(format!(
                "the remote worker at {} launched no app (start it with --launch)",
                self.worker.endpoint
            )));
        };
        tracing::info!(pid, argv = ?launch.argv, "remote reset binds the worker's app; the profile's command is not run");
        let op = WorkerOp::AwaitApp {
            pid,
            rules: launch.window.clone(),
            settle: launch.settle,
        };
        let timeout = Duration::from_millis(u64::from(launch.window.timeout_ms)) + WORKER_TIMEOUT;
        match self.call(op, timeout)? {
            WorkerValue::Handoff(handoff) => Ok(*handoff),
            _ => Err(unexpected("await_app")),
        }
    }

    fn capture(&mut self) -> Result<Frame, BackendError> {
        match self.call(WorkerOp::Capture, WORKER_TIMEOUT)? {
            WorkerValue::Frame(frame) => Ok(frame),
            _ => Err(unexpected("capture")),
        }
    }

    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        let op = WorkerOp::Execute {
            action: action.clone(),
            settle,
            generation: None,
        };
        match self.call(op, WORKER_TIMEOUT)? {
            WorkerValue::Outcome(outcome) => Ok(*outcome),
            // A wrong answer after a request that may have injected input.
            _ => Err(BackendError::OutcomeUnknown(
                "the remote worker answered execute with something else".into(),
            )),
        }
    }

    fn facts(&mut self) -> Result<DesktopFacts, BackendError> {
        match self.call(WorkerOp::Facts, WORKER_TIMEOUT)? {
            WorkerValue::Facts(facts) => Ok(facts),
            _ => Err(unexpected("facts")),
        }
    }

    fn release_held(&mut self) -> Result<Vec<String>, BackendError> {
        match self.call(WorkerOp::ReleaseHeld, WORKER_TIMEOUT)? {
            WorkerValue::Released { released } => Ok(released),
            _ => Err(unexpected("release_held")),
        }
    }

    fn stop_app(&mut self) -> Result<(), BackendError> {
        // The app is the worker's: the broker cannot stop it; nothing stays held meanwhile.
        self.release_held().map(|_| ())
    }

    fn shutdown(&mut self) -> Result<(), BackendError> {
        if self.shut {
            return Ok(());
        }
        // The worker and its desktop outlive the session (the broker never sends `shutdown`
        // to a remote worker); held input is released and the connection closed.
        if let Some(client) = self.client.as_mut()
            && !client.is_closed()
            && let Err(error) = client.call(WorkerOp::ReleaseHeld, WORKER_TIMEOUT)
        {
            tracing::warn!(%error, "failed to release held input on the remote worker");
        }
        self.client = None;
        self.shut = true;
        let _ = std::fs::remove_file(self.session_dir.remote_worker_file());
        release_holder(&self.holder, &self.session_id);
        Ok(())
    }

    fn process_ids(&self) -> Vec<u32> {
        Vec::new()
    }

    fn clipboard_read(&mut self, max_output_bytes: u64) -> Result<ClipboardText, BackendError> {
        match self.call(
            WorkerOp::ClipboardRead { max_output_bytes },
            CLIPBOARD_TIMEOUT,
        )? {
            WorkerValue::Clipboard(text) => Ok(text),
            _ => Err(unexpected("clipboard_read")),
        }
    }

    fn clipboard_write(&mut self, text: &str) -> Result<ClipboardWritten, BackendError> {
        let op = WorkerOp::ClipboardWrite {
            text: text.to_string(),
        };
        match self.call(op, CLIPBOARD_TIMEOUT)? {
            WorkerValue::ClipboardWritten(written) => Ok(written),
            _ => Err(BackendError::OutcomeUnknown(
                "the remote worker answered clipboard_write with something else".into(),
            )),
        }
    }

    fn accessibility(
        &mut self,
        limits: desk_contract::a11y::AxLimits,
    ) -> Result<desk_contract::a11y::AxTree, BackendError> {
        match self.call(WorkerOp::Accessibility { limits }, WORKER_TIMEOUT)? {
            WorkerValue::Accessibility(tree) => Ok(*tree),
            _ => Err(unexpected("accessibility")),
        }
    }

    fn windows(&mut self) -> Result<Vec<desk_contract::desktop::AppWindowInfo>, BackendError> {
        match self.call(WorkerOp::Windows, WORKER_TIMEOUT)? {
            WorkerValue::Windows { windows } => Ok(windows),
            _ => Err(unexpected("windows")),
        }
    }

    fn detach(&mut self) {
        // The worker keeps serving its desktop; a later broker reconnects through the record.
        self.client = None;
        release_holder(&self.holder, &self.session_id);
    }

    /// Everything is forwarded to the worker (which may refuse accessibility or windows); no
    /// Stop signal reaches a remote settle wait and the worker's host keeps no lease deadline.
    fn capabilities(&self) -> crate::BackendCapabilities {
        crate::BackendCapabilities {
            clipboard: true,
            accessibility: true,
            windows: true,
            detach: true,
            ..crate::BackendCapabilities::NONE
        }
    }

    fn control(&self) -> std::sync::Arc<dyn crate::SessionControl> {
        std::sync::Arc::new(crate::UnsignalledControl)
    }
}
