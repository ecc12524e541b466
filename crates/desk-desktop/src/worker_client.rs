//! The broker side of the desktop worker's JSONL connection, on the session's Unix socket or on
//! TCP with mutual TLS to a remote worker (`crate::remote`): one request line, one response
//! line (and the frame's PNG after it, as the binary attachment the line announces).
//!
//! Invariant: requests are answered strictly in order; a response whose id differs from the
//! request's, a closed connection, or a timeout poisons the client, and every later call fails
//! without writing anything (the worker's state is unknown). Dropping the client closes the
//! connection both ways, so the worker sees the disconnect and waits for the next broker.
//!
//! The socket's path is in a directory the desktop can write, so whatever answers there is not
//! trusted by its path: before the first request, [`check_peer`] asks the kernel who listens
//! (`SO_PEERCRED`, the credentials of the process that called `listen`, its pid in the
//! broker's pid namespace) and refuses anything but the recorded worker
//! ([`BackendError::WorkerPeerRefused`]).

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::time::Duration;

use desk_contract::worker::{
    MAX_ATTACHMENT_BYTES, WorkerOp, WorkerReply, WorkerRequest, WorkerResponse, WorkerValue,
};

use crate::error::BackendError;

/// A TLS connection to a remote worker (`crate::remote`).
pub(crate) type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Who must listen on the worker socket: the recorded worker process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpectedPeer {
    /// The host uid the worker runs as (the sandbox uid, or the broker's own without one).
    pub(crate) uid: u32,
    /// The recorded worker process (`processes.json`): the worker itself without a sandbox,
    /// else the `setpriv`/`nsenter` wrapper whose child is the worker.
    pub(crate) recorded_pid: u32,
    /// Its start time, against pid reuse.
    pub(crate) recorded_ticks: u64,
    /// Whether the worker is the wrapper's child (sandboxed) rather than the recorded process.
    pub(crate) wrapped: bool,
}

/// Refuses a worker socket whose listening peer is not `expected`: another uid, a process that
/// is not the recorded worker (a proxy the app put at the path), or a recorded worker that is
/// gone.
pub(crate) fn check_peer(stream: &UnixStream, expected: &ExpectedPeer) -> Result<(), BackendError> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let credentials = getsockopt(stream, PeerCredentials).map_err(|errno| {
        BackendError::WorkerPeerRefused(format!("cannot read the socket's peer ({errno})"))
    })?;
    let (uid, pid) = (credentials.uid(), credentials.pid());
    if uid != expected.uid {
        return Err(BackendError::WorkerPeerRefused(format!(
            "the socket's listener runs as uid {uid}, the worker as uid {}",
            expected.uid
        )));
    }
    let pid = u32::try_from(pid).unwrap_or(0);
    if crate::launcher::start_ticks(expected.recorded_pid) != Some(expected.recorded_ticks) {
        return Err(BackendError::WorkerPeerRefused(format!(
            "the recorded worker (pid {}) is no longer running",
            expected.recorded_pid
        )));
    }
    let is_worker = if expected.wrapped {
        // nsenter forks the worker (then `env` execs it in place): its parent is the wrapper,
        // in the wrapper's process group.
        parent_and_group(pid) == Some((expected.recorded_pid, expected.recorded_pid))
    } else {
        pid == expected.recorded_pid
    };
    if !is_worker {
        return Err(BackendError::WorkerPeerRefused(format!(
            "the socket's listener is pid {pid}, not the recorded worker (pid {}{})",
            expected.recorded_pid,
            if expected.wrapped { "'s child" } else { "" }
        )));
    }
    Ok(())
}

/// The parent pid and process group of `pid` (fields 4 and 5 of `/proc/PID/stat`).
fn parent_and_group(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace().skip(1);
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((parent, group))
}

/// Where requests go: the Unix socket itself, or the thread that owns a TLS connection.
enum Outbound {
    /// The worker's Unix socket (a reader thread holds a second handle).
    Unix(UnixStream),
    /// Request lines for the TLS connection's thread, and a handle of its TCP socket to end the
    /// connection from here.
    Tls {
        requests: Sender<Vec<u8>>,
        control: TcpStream,
    },
}

/// A connected worker socket.
pub(crate) struct WorkerClient {
    outbound: Outbound,
    responses: Receiver<Result<WorkerResponse, ReadFailure>>,
    next_id: u64,
    // Invariant: once true, nothing more is written to the worker.
    poisoned: bool,
}

impl WorkerClient {
    /// Wraps a connected worker socket; a reader thread forwards response lines.
    pub(crate) fn new(stream: UnixStream) -> Result<WorkerClient, BackendError> {
        let stdout = stream.try_clone().map_err(|error| {
            BackendError::Worker(format!("failed to clone the worker socket: {error}"))
        })?;
        let (sender, responses) = channel();
        std::thread::Builder::new()
            .name("desk-worker-reader".to_string())
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                loop {
                    match read_response(&mut reader) {
                        Ok(None) => break,
                        Ok(Some(response)) => {
                            if sender.send(Ok(response)).is_err() {
                                break;
                            }
                        }
                        Err(failure) => {
                            let _ = sender.send(Err(failure));
                            break;
                        }
                    }
                }
            })
            .map(|_| ())
            .unwrap_or_else(|error| tracing::error!(%error, "failed to start worker reader"));
        Ok(WorkerClient {
            outbound: Outbound::Unix(stream),
            responses,
            next_id: 1,
            poisoned: false,
        })
    }

    /// Sends one request and waits up to `timeout` for its response.
    pub(crate) fn call(
        &mut self,
        op: WorkerOp,
        timeout: Duration,
    ) -> Result<WorkerValue, BackendError> {
        if self.poisoned {
            return Err(BackendError::Worker(
                "worker pipe is unusable after an earlier failure".into(),
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        let request = WorkerRequest { id, op };
        let mut line = serde_json::to_string(&request).map_err(|error| {
            BackendError::Rejected(format!("failed to encode request: {error}"))
        })?;
        line.push('\n');
        let sent = match &mut self.outbound {
            Outbound::Unix(stream) => stream
                .write_all(line.as_bytes())
                .and_then(|()| stream.flush()),
            Outbound::Tls { requests, .. } => requests
                .send(line.into_bytes())
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
        };
        if let Err(error) = sent {
            self.poisoned = true;
            return Err(BackendError::Worker(format!(
                "failed to write to worker: {error}"
            )));
        }
        let response = match self.responses.recv_timeout(timeout) {
            Ok(Ok(response)) => response,
            Ok(Err(ReadFailure::Io(error))) => {
                self.poisoned = true;
                return Err(BackendError::Worker(format!(
                    "failed to read from worker: {error}"
                )));
            }
            Ok(Err(ReadFailure::Protocol(message))) => {
                self.poisoned = true;
                return Err(BackendError::Worker(format!(
                    "worker sent an unreadable response: {message}"
                )));
            }
            Err(RecvTimeoutError::Timeout) => {
                self.poisoned = true;
                return Err(BackendError::Worker(format!(
                    "worker did not answer request {id} within {} ms",
                    timeout.as_millis()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.poisoned = true;
                return Err(BackendError::Worker("worker exited".into()));
            }
        };
        if response.id != id {
            self.poisoned = true;
            return Err(BackendError::Worker(format!(
                "worker answered request {} while {id} was pending",
                response.id
            )));
        }
        match response.reply {
            WorkerReply::Ok(value) => Ok(value),
            WorkerReply::Error(failure) => Err(BackendError::from(failure)),
        }
    }
}

impl WorkerClient {
    /// Wraps a TLS connection to a remote worker whose handshake completed; `control` is a
    /// second handle of its TCP socket. One thread owns the connection: it writes each request
    /// and reads its answer (rustls connections cannot be read and written from two threads).
    pub(crate) fn over_tls(
        stream: TlsStream,
        control: TcpStream,
    ) -> Result<WorkerClient, BackendError> {
        let (requests, pending) = channel::<Vec<u8>>();
        let (sender, responses) = channel();
        std::thread::Builder::new()
            .name("desk-worker-tls".to_string())
            .spawn(move || {
                let mut reader = BufReader::new(stream);
                while let Ok(line) = pending.recv() {
                    let written = reader
                        .get_mut()
                        .write_all(&line)
                        .and_then(|()| reader.get_mut().flush());
                    if let Err(error) = written {
                        let _ = sender.send(Err(ReadFailure::Io(error)));
                        return;
                    }
                    match read_response(&mut reader) {
                        Ok(None) => return,
                        Ok(Some(response)) => {
                            if sender.send(Ok(response)).is_err() {
                                return;
                            }
                        }
                        Err(failure) => {
                            let _ = sender.send(Err(failure));
                            return;
                        }
                    }
                }
            })
            .map_err(|error| {
                BackendError::Worker(format!(
                    "failed to start the worker connection's thread: {error}"
                ))
            })?;
        Ok(WorkerClient {
            outbound: Outbound::Tls { requests, control },
            responses,
            next_id: 1,
            poisoned: false,
        })
    }

    /// Whether the connection is known to be unusable before anything is sent on it: poisoned
    /// by an earlier failure, closed by the worker (or the network) while idle, or carrying
    /// bytes nobody asked for. Nothing is written.
    pub(crate) fn is_closed(&mut self) -> bool {
        if self.poisoned {
            return true;
        }
        let closed = match &self.outbound {
            // The reader thread ends at the end of the stream.
            Outbound::Unix(_) => !matches!(self.responses.try_recv(), Err(TryRecvError::Empty)),
            // The connection's thread waits for the next request and reads nothing meanwhile:
            // look at the socket itself without taking anything from it.
            Outbound::Tls { control, .. } => peek_closed(control),
        };
        if closed {
            self.poisoned = true;
        }
        closed
    }
}

/// Whether an idle TCP connection has ended (or holds unexpected bytes: a TLS alert or
/// close_notify), without consuming anything.
fn peek_closed(control: &TcpStream) -> bool {
    if control.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let peeked = control.peek(&mut byte);
    let restored = control.set_nonblocking(false).is_ok();
    match peeked {
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => !restored,
        _ => true,
    }
}

/// Why the reader stopped.
enum ReadFailure {
    /// The socket failed.
    Io(std::io::Error),
    /// A line or attachment broke the protocol.
    Protocol(String),
}

/// Reads one response line and its attachment; `None` at a clean end of stream.
fn read_response(reader: &mut impl BufRead) -> Result<Option<WorkerResponse>, ReadFailure> {
    let mut line = String::new();
    if reader.read_line(&mut line).map_err(ReadFailure::Io)? == 0 {
        return Ok(None);
    }
    let mut response: WorkerResponse =
        serde_json::from_str(&line).map_err(|error| ReadFailure::Protocol(error.to_string()))?;
    if response.attachment_len > MAX_ATTACHMENT_BYTES {
        return Err(ReadFailure::Protocol(format!(
            "an attachment of {} bytes is over the {MAX_ATTACHMENT_BYTES}-byte limit",
            response.attachment_len
        )));
    }
    let mut png = vec![0u8; response.attachment_len as usize];
    reader.read_exact(&mut png).map_err(ReadFailure::Io)?;
    response.attach_png(png).map_err(ReadFailure::Protocol)?;
    Ok(Some(response))
}

impl Drop for WorkerClient {
    fn drop(&mut self) {
        // Ends the reader thread and tells the worker this broker is gone.
        let _ = match &self.outbound {
            Outbound::Unix(stream) => stream.shutdown(Shutdown::Both),
            Outbound::Tls { control, .. } => control.shutdown(Shutdown::Both),
        };
    }
}
