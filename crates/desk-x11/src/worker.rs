//! The worker's JSONL loop: one [`WorkerRequest`] per input line, exactly one
//! [`WorkerResponse`] line per request (followed by its frame's PNG as a binary attachment when
//! it carries one), flushed each time.
//!
//! Three transports, one serve loop (`desk_worker_io::serve_connection`, shared with the Windows
//! worker): stdin/stdout ([`run_stdio`], one client for the worker's life), a private Unix socket
//! ([`run_socket`], the local broker's transport) and TCP with mutual TLS ([`run_listen`], a
//! remote broker's). On a socket the worker serves one client at a time and outlives its
//! clients: when a broker disconnects or dies, the worker releases held input and waits for the
//! next broker, so a restarted broker can reattach to a running desktop.
//!
//! Invariants: stdout carries only protocol lines in stdio mode (logs go to stderr through
//! `tracing`); an unparseable line gets id 0 and `invalid_request`; EOF and `shutdown` release
//! held inputs; a request is executed at most once, whether or not its response can be written.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use desk_contract::worker::{WorkerOp, WorkerReply, WorkerValue};
use desk_worker_io::{Ended, serve_connection};

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
pub(crate) fn run_stdio() -> Result<(), X11Error> {
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
pub(crate) fn run_socket(path: &Path) -> Result<(), X11Error> {
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
        let stream = desk_worker_io::Duplex {
            reader,
            writer: &stream,
        };
        let mut served = Served(&mut session);
        match serve_connection(stream, &mut served, None) {
            Ok(Ended::Shutdown) => {
                let _ = std::fs::remove_file(path);
                return Ok(());
            }
            Ok(Ended::Disconnected) => tracing::info!("broker disconnected"),
            Err(error) => tracing::warn!(%error, "broker connection failed"),
        }
        desk_worker_io::Handler::disconnected(&mut served);
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

/// The session as the shared serve loop drives it.
struct Served<'a>(&'a mut X11Session);

impl desk_worker_io::Handler for Served<'_> {
    fn handle(&mut self, op: WorkerOp) -> WorkerReply {
        handle(self.0, op)
    }

    fn disconnected(&mut self) {
        // Whatever the broker was doing, nothing stays held while no broker is attached.
        if let Err(error) = self.0.release_held() {
            tracing::warn!(%error, "failed to release held inputs after a disconnect");
        }
    }
}

/// Serves requests from `reader` until EOF or `shutdown`, answering on `writer`.
pub fn serve(
    reader: impl BufRead,
    writer: impl Write,
    session: &mut X11Session,
) -> Result<(), X11Error> {
    let stream = desk_worker_io::Duplex { reader, writer };
    if let Ended::Disconnected = serve_connection(stream, &mut Served(session), None)? {
        tracing::info!("worker input closed, releasing held inputs");
        session.close();
    }
    Ok(())
}

/// `deskbroker-remote-worker --listen tcp://HOST:PORT --cert --key --client-ca [--launch ...]`:
/// connects to `$DISPLAY`, launches the app when asked (its pid is `hello`'s `app_pid`), and
/// serves brokers over mutual TLS one at a time until `shutdown` (`desk_worker_io::listen`).
pub fn run_listen(args: &desk_worker_io::ListenArgs) -> Result<(), X11Error> {
    let transport =
        |error: desk_worker_io::WorkerIoError| X11Error::Io(std::io::Error::other(error));
    let (listener, config) = args.bind().map_err(transport)?;
    let mut session = X11Session::connect(None)?;
    let mut app = None;
    if let Some((program, rest)) = args.launch.split_first() {
        let child = std::process::Command::new(program).args(rest).spawn()?;
        tracing::info!(pid = child.id(), program, "app launched");
        app = Some(child);
    }
    let identity = desk_worker_io::Identity::mint(app.as_ref().map(std::process::Child::id))
        .map_err(transport)?;
    let served =
        desk_worker_io::listen::serve(listener, config, &identity, &mut Served(&mut session));
    session.close();
    if let Some(mut child) = app {
        let _ = child.kill();
        let _ = child.wait();
    }
    served.map_err(transport)
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
