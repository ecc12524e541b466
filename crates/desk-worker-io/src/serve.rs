//! The one JSON-line serve loop of the worker protocol (`docs/worker-protocol.md`): one request
//! per line, exactly one response line per request, in order, the frame's PNG following its line
//! as the binary attachment the line announces; an unparseable line is answered with id 0 and
//! `invalid_request`; `shutdown` ends the loop after its answer.
//!
//! Invariant: a request is handed to the [`Handler`] exactly once, before its answer is written,
//! so a client that vanishes mid-request never makes the worker run it twice or skip it.

use std::io::{BufRead, BufReader, Read, Write};

use desk_contract::worker::{
    WorkerFailure, WorkerFailureKind, WorkerOp, WorkerReply, WorkerRequest, WorkerResponse,
    WorkerValue,
};

/// A worker's operations, as the serve loop drives them.
pub trait Handler {
    /// Runs one operation and answers it.
    fn handle(&mut self, op: WorkerOp) -> WorkerReply;

    /// The client went away without `shutdown` (end of stream, a read or write failure, or a
    /// newer client took its place): nothing may stay held while no client is attached.
    fn disconnected(&mut self);
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The client closed its side.
    Disconnected,
    /// The client sent `shutdown`.
    Shutdown,
}

/// What a listening worker says about itself in every `hello`: the instance id minted at its
/// start and the app it launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `w_` and 32 hex digits from the operating system's random source.
    pub instance_id: String,
    /// The app the worker launched (`--launch`).
    pub app_pid: Option<u32>,
}

impl Identity {
    /// A fresh instance id for this worker process.
    pub fn mint(app_pid: Option<u32>) -> Result<Identity, crate::WorkerIoError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|error| {
            crate::WorkerIoError::Io(std::io::Error::other(format!(
                "no random source for the worker's instance id: {error}"
            )))
        })?;
        Ok(Identity {
            instance_id: format!("w_{}", hex::encode(bytes)),
            app_pid,
        })
    }
}

/// A reader and a writer served as one stream (stdin/stdout, or two handles of one socket).
#[derive(Debug)]
pub struct Duplex<R, W> {
    /// Where requests come from.
    pub reader: R,
    /// Where answers go.
    pub writer: W,
}

impl<R: Read, W> Read for Duplex<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reader.read(buf)
    }
}

impl<R, W: Write> Write for Duplex<R, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

/// Serves requests from `stream` until its end or `shutdown`, answering on the same stream.
/// With an `identity`, every `hello` answer carries it. Does not call
/// [`Handler::disconnected`]: the caller decides what a client's departure means.
pub fn serve_connection<S: Read + Write>(
    stream: S,
    handler: &mut impl Handler,
    identity: Option<&Identity>,
) -> std::io::Result<Ended> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(Ended::Disconnected);
        }
        if line.trim().is_empty() {
            continue;
        }
        let (response, stop) = match serde_json::from_str::<WorkerRequest>(&line) {
            Ok(request) => {
                let stop = matches!(request.op, WorkerOp::Shutdown);
                let mut reply = handler.handle(request.op);
                if let (WorkerReply::Ok(WorkerValue::Hello(hello)), Some(identity)) =
                    (&mut reply, identity)
                {
                    hello.instance_id = Some(identity.instance_id.clone());
                    hello.app_pid = identity.app_pid;
                }
                (WorkerResponse::new(request.id, reply), stop)
            }
            Err(error) => {
                tracing::warn!(%error, "unparseable worker request");
                let failure = WorkerFailure {
                    kind: WorkerFailureKind::InvalidRequest,
                    message: format!("failed to parse worker request: {error}"),
                };
                (WorkerResponse::new(0, WorkerReply::Error(failure)), false)
            }
        };
        write_response(reader.get_mut(), response)?;
        if stop {
            return Ok(Ended::Shutdown);
        }
    }
}

/// Writes the response line, then its frame's PNG as the binary attachment the line announces.
pub(crate) fn write_response(
    writer: &mut impl Write,
    mut response: WorkerResponse,
) -> std::io::Result<()> {
    let png = response.detach_png();
    let mut text = serde_json::to_vec(&response).map_err(std::io::Error::other)?;
    text.push(b'\n');
    writer.write_all(&text)?;
    writer.write_all(&png)?;
    writer.flush()
}
