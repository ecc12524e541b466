//! `deskbroker-remote-worker`: the desktop worker of `$DISPLAY` for a broker on another host,
//! over TCP with mutual TLS (`docs/worker-protocol.md`, "Transport"), optionally launching the
//! app it serves.
//!
//! A program apart from `deskbroker-worker` on purpose: the worker a session's sandbox sees
//! links no TLS stack and no signature code (`tests/it/worker_program.rs` checks its bytes),
//! while this one runs on an operator's worker host, outside any sandbox of ours.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

const USAGE: &str = "usage: deskbroker-remote-worker --listen tcp://HOST:PORT --cert PEM --key PEM \
                     --client-ca PEM [--launch PROGRAM [ARGS...]]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let listen = match desk_x11::ListenArgs::parse(&args) {
        Ok(listen) => listen,
        Err(error) => {
            // The usage first, the reason last: a log's last line says what went wrong.
            eprintln!("{USAGE}\ndeskbroker-remote-worker: {error}");
            return ExitCode::from(2);
        }
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .init();
    match desk_x11::run_listen(&listen) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("deskbroker-remote-worker: {error}");
            ExitCode::FAILURE
        }
    }
}
