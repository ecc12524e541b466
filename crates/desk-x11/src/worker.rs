//! The worker's JSONL loop: one [`WorkerRequest`] per input line, exactly one
//! [`WorkerResponse`] line per request (followed by its frame's PNG as a binary attachment when
//! it carries one), flushed each time.
//!
//! Two transports: stdin/stdout ([`run_stdio`], one client for the worker's life) and a private
//! Unix socket ([`run_socket`], the broker's transport), where the worker serves one client at a
//! time and outlives its clients: when a broker disconnects or dies, the worker releases held
//! input and waits for the next broker, so a restarted broker can reattach to a running desktop.
//!
//! Invariants: stdout carries only protocol lines in stdio mode (logs go to stderr through
//! `tracing`); an unparseable line gets id 0 and `invalid_request`; EOF and `shutdown` release
//! held inputs; a request is executed at most once, whether or not its response can be written.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use desk_contract::worker::{
    WorkerFailure, WorkerFailureKind, WorkerOp, WorkerReply, WorkerRequest, WorkerResponse,
    WorkerValue,
};

use crate::error::X11Error;
use crate::session::X11Session;

pub use desk_contract::worker::WORKER_SOCKET_ENV;
use desk_contract::worker::WORKER_WAIT_WM_ENV;

/// Serves a Unix socket when [`WORKER_SOCKET_ENV`] is set, stdin/stdout otherwise.
pub fn run_from_env() -> Result<(), X11Error> {
    match std::env::var_os(WORKER_SOCKET_ENV) {
        Some(path) if !path.is_empty() => run_socket(Path::new(&path)),
        _ => run_stdio(),
    }
}

/// Connects to `$DISPLAY` and serves stdin/stdout until EOF or `shutdown`.
pub fn run_stdio() -> Result<(), X11Error> {
    let mut session = X11Session::connect(None)?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    serve(stdin.lock(), stdout.lock(), &mut session)
}

/// Connects to `$DISPLAY`, listens on `path` (mode 0600) and serves one client at a time until a
/// client sends `shutdown`. A client that disconnects, or whose response cannot be written,
/// only ends its connection: held input is released and the next client is accepted.
///
/// With [`WORKER_WAIT_WM_ENV`] set, it first waits for the window manager to take the display.
pub fn run_socket(path: &Path) -> Result<(), X11Error> {
    let mut session = X11Session::connect(None)?;
    if let Some(wait_ms) = std::env::var(WORKER_WAIT_WM_ENV)
        .ok()
        .and_then(|value| value.parse::<u64>().ok())
    {
        session.wait_for_window_manager(std::time::Duration::from_millis(wait_ms))?;
    }
    session.set_stop_file(path.with_file_name(desk_contract::worker::STOP_GENERATION_FILE));
    let listener = listen_private(path)?;
    tracing::info!(socket = %path.display(), "worker listening");
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error.into()),
        };
        tracing::info!("broker connected");
        let reader = match stream.try_clone() {
            Ok(reader) => BufReader::new(reader),
            Err(error) => {
                tracing::warn!(%error, "failed to clone the client stream");
                continue;
            }
        };
        match serve_connection(reader, &stream, &mut session) {
            Ok(Ended::Shutdown) => {
                let _ = std::fs::remove_file(path);
                return Ok(());
            }
            Ok(Ended::Disconnected) => tracing::info!("broker disconnected"),
            Err(error) => tracing::warn!(%error, "broker connection failed"),
        }
        // Whatever the broker was doing, nothing stays held while no broker is attached.
        if let Err(error) = session.release_held() {
            tracing::warn!(%error, "failed to release held inputs after a disconnect");
        }
    }
}

/// Binds `path` so that it appears only once it is private: bound under a temporary name,
/// restricted to mode 0600, then renamed into place. A stale socket at `path` is replaced.
fn listen_private(path: &Path) -> Result<UnixListener, X11Error> {
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "worker.sock".to_string());
    let temporary: PathBuf = path.with_file_name(format!(".{file_name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let listener = UnixListener::bind(&temporary)?;
    std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&temporary, path)?;
    Ok(listener)
}

/// Why a connection ended.
enum Ended {
    /// The client closed its side.
    Disconnected,
    /// The client sent `shutdown`.
    Shutdown,
}

/// Serves requests from `reader`, answering on `writer`, until EOF or `shutdown`.
pub fn serve(
    reader: impl BufRead,
    writer: impl Write,
    session: &mut X11Session,
) -> Result<(), X11Error> {
    if let Ended::Disconnected = serve_connection(reader, writer, session)? {
        tracing::info!("worker input closed, releasing held inputs");
        session.close();
    }
    Ok(())
}

fn serve_connection(
    reader: impl BufRead,
    mut writer: impl Write,
    session: &mut X11Session,
) -> Result<Ended, X11Error> {
    for line in reader.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (response, stop) = match serde_json::from_str::<WorkerRequest>(&line) {
            Ok(request) => {
                let stop = matches!(request.op, WorkerOp::Shutdown);
                (
                    WorkerResponse::new(request.id, handle(session, request.op)),
                    stop,
                )
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
        write_response(&mut writer, response)?;
        if stop {
            return Ok(Ended::Shutdown);
        }
    }
    Ok(Ended::Disconnected)
}

/// Writes the response line, then its frame's PNG as the binary attachment the line announces.
fn write_response(writer: &mut impl Write, mut response: WorkerResponse) -> Result<(), X11Error> {
    let png = response.detach_png();
    let mut text = serde_json::to_vec(&response).map_err(std::io::Error::other)?;
    text.push(b'\n');
    writer.write_all(&text)?;
    writer.write_all(&png)?;
    writer.flush()?;
    Ok(())
}
/// Runs one operation.
pub fn handle(session: &mut X11Session, op: WorkerOp) -> WorkerReply {
    let result = match op {
        WorkerOp::Hello => Ok(WorkerValue::Hello(session.hello())),
        WorkerOp::Capture => session
            .capture()
            .map(WorkerValue::Frame)
            .map_err(|error| error.to_failure()),
        WorkerOp::Execute {
            action,
            settle,
            generation,
        } => session
            .execute_for(&action, &settle, generation)
            .map(|outcome| WorkerValue::Outcome(Box::new(outcome))),
        WorkerOp::AwaitApp { pid, rules, settle } => session
            .invalidate_accessibility()
            .await_app(pid, &rules, &settle)
            .map(|handoff| WorkerValue::Handoff(Box::new(handoff)))
            .map_err(|error| error.to_failure()),
        WorkerOp::Facts => session
            .facts()
            .map(WorkerValue::Facts)
            .map_err(|error| error.to_failure()),
        WorkerOp::ReleaseHeld => session
            .release_held()
            .map(|released| WorkerValue::Released { released })
            .map_err(|error| error.to_failure()),
        // The clipboard has connections of its own to the worker's display (`$DISPLAY`).
        WorkerOp::ClipboardRead { max_output_bytes } => {
            crate::clipboard::read(None, max_output_bytes)
                .map(WorkerValue::Clipboard)
                .map_err(|error| error.to_failure())
        }
        WorkerOp::ClipboardWrite { text } => crate::clipboard::write(None, text)
            .map(WorkerValue::ClipboardWritten)
            .map_err(|error| error.to_failure()),
        WorkerOp::Accessibility { limits } => session
            .accessibility(limits)
            .map(|tree| WorkerValue::Accessibility(Box::new(tree)))
            .map_err(|error| error.to_failure()),
        WorkerOp::Windows => session
            .app_windows()
            .map(|windows| WorkerValue::Windows { windows })
            .map_err(|error| error.to_failure()),
        WorkerOp::Shutdown => {
            session.close();
            Ok(WorkerValue::Bye)
        }
    };
    match result {
        Ok(value) => WorkerReply::Ok(value),
        Err(failure) => {
            tracing::warn!(kind = ?failure.kind, message = %failure.message, "worker request failed");
            WorkerReply::Error(failure)
        }
    }
}
