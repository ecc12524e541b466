//! `deskbroker-worker`: the only program of ours a session's sandbox sees.
//!
//! It links the worker side alone (desk-x11 with desk-a11y and desk-contract: input, capture,
//! settle, accessibility, the worker protocol), never the corpus, generators, judges, oracle,
//! harness, models or evidence signing, so nothing that runs inside a desktop can make or read
//! a gold (`docs/security.md`, "The session sandbox"), and no TLS stack: the worker for a
//! remote broker is `deskbroker-remote-worker`. Its jobs:
//!
//! - no arguments: the per-session desktop worker, serving the Unix socket named by
//!   `DESKBROKER_WORKER_SOCKET` (or stdin/stdout without it); `--as UID:GID` first: started as
//!   root, it drops to those ids keeping `CAP_SYS_PTRACE` alone (see `identity.rs`);
//! - `hold [--every SECS] [--missing SECS] FILE`: the sandbox's pid 1, enforcing the lease
//!   deadline in `FILE` and reaping orphans (see `hold.rs`).
//!
//! - `seed-home HOME SEED`: fills the app's in-memory home from its seed (see `seed.rs`);
//! - `confine --exec PATH... -- PROGRAM ARGS...`: runs the app's launch chain where only the
//!   listed files can be executed (Landlock, see `confine.rs`).
//!
//! Anything else is refused with status 2. Called as `sh` (the allowlisted view links
//! `/usr/bin/sh` here), it runs Xvfb's keymap compiler and nothing else (see `xkbcomp.rs`).
#![forbid(unsafe_code)]

mod confine;
mod hold;
mod identity;
mod seed;
mod xkbcomp;

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

const USAGE: &str = "usage: deskbroker-worker [--as UID:GID] (the desktop worker)\n       \
                     deskbroker-worker hold [--every SECS] [--missing SECS] FILE\n       \
                     deskbroker-worker seed-home HOME SEED\n       \
                     deskbroker-worker confine --exec PATH... -- PROGRAM ARGS...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let called = std::env::args_os().next().unwrap_or_default();
    if std::path::Path::new(&called).file_name() == Some(std::ffi::OsStr::new("sh")) {
        return xkbcomp::run(&args);
    }
    let mut args = args;
    if args.first().map(String::as_str) == Some("--as") {
        let Some(ids) = args.get(1).cloned() else {
            eprintln!("{USAGE}\ndeskbroker-worker: --as needs UID:GID");
            return ExitCode::from(2);
        };
        if let Err(message) = identity::drop_to(&ids) {
            eprintln!("deskbroker-worker: cannot drop to {ids}: {message}");
            return ExitCode::FAILURE;
        }
        args.drain(..2);
        // Only the desktop worker drops this way; any other mode is refused below, by name.
        if matches!(
            args.first().map(String::as_str),
            Some("hold" | "seed-home" | "confine")
        ) {
            eprintln!("{USAGE}\ndeskbroker-worker: --as runs the desktop worker alone");
            return ExitCode::from(2);
        }
    }
    match args.first().map(String::as_str) {
        None => {
            init_logs();
            match desk_x11::run_from_env() {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("hold") => match hold::Hold::parse(&args[1..]) {
            Ok(hold) => hold.run(),
            Err(message) => {
                eprintln!("{USAGE}\ndeskbroker-worker hold: {message}");
                ExitCode::from(2)
            }
        },
        Some("seed-home") => seed::run(&args[1..]),
        Some("confine") => confine::run(&args[1..]),
        Some(other) => {
            // The usage first, the reason last: the broker quotes a worker log's last lines.
            eprintln!(
                "{USAGE}\ndeskbroker-worker: refusing {other:?}: this program only runs the \
                 desktop worker or the sandbox holder"
            );
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr at `info` unless `RUST_LOG` says otherwise.
fn init_logs() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // A log destination that cannot be written must cost log lines, not the worker.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .init();
}
