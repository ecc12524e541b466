//! `desk-win-worker`: the Windows desktop worker, serving the worker protocol on stdin/stdout
//! (`docs/worker-protocol.md`, `docs/windows.md`).
//!
//! `desk-win-worker [--launch PROGRAM [ARGS...]]` serves until EOF or `shutdown`; with
//! `--launch` it first starts the app itself and binds its process (the pid is printed on
//! stderr as `launched pid N`), so `windows` works before `await_app`.
//! `desk-win-worker text CLASS` prints the text (`WM_GETTEXT`) of the first `Edit` child of the
//! first top-level window of that class: a witness for tests, not part of the protocol.
#![allow(clippy::print_stdout)]

#[cfg(windows)]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match desk_win::win32::main(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("desk-win-worker: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(not(windows))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "desk-win-worker runs on Windows only: build it with \
         `cargo build --target x86_64-pc-windows-gnu -p desk-win` (docs/windows.md)"
    );
    std::process::ExitCode::FAILURE
}
