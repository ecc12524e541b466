//! The X11 desktop worker: the only code in deskbroker that connects to an X server.
//!
//! It speaks the JSONL worker protocol of `desk_contract::worker` over a private Unix socket
//! (`run_socket`, surviving broker restarts) or stdin/stdout
//! (`run_stdio`, [`serve`]) and implements every operation on an [`X11Session`]: capture through
//! MIT-SHM (core `GetImage` as fallback) with fast PNG encoding, input through XTEST with a
//! record of every low-level event, EWMH window facts, app handoff and the settle wait.
//!
//! Invariants: stdout is the protocol and nothing else writes to it; `unsafe` code lives only in
//! `shm.rs`; input is injected exactly once per `execute` and never retried; keys and buttons
//! left held are released after every action.

mod a11y;
mod app_windows;
mod capture;
pub mod clipboard;
mod cover;
mod destination;
mod error;
mod execute;
mod fault;
mod handoff;
mod held;
mod idle;
mod input;
mod keymap;
mod session;
mod settle;
mod shm;
mod window;
mod worker;

pub use capture::measure::CaptureStats;
pub use capture::{CapturedPng, Capturer, RawFrame, epoch_ms, sha256_hex};
pub use desk_worker_io::ListenArgs;
pub use error::X11Error;
pub use fault::WORKER_FAULT_ENV;
pub use handoff::HANDOFF_SETTLE_ATTEMPTS;
pub use keymap::{Keymap, Resolved, XK_SHIFT_L, keysym_name};
pub use session::X11Session;
pub use settle::SAMPLE_INTERVAL;
pub use worker::{WORKER_SOCKET_ENV, handle, run_from_env, run_listen, serve};

/// Connects to `display` (or `$DISPLAY`) and measures capture+encode over `n_frames` frames.
pub fn bench_capture(display: Option<&str>, n_frames: usize) -> Result<CaptureStats, X11Error> {
    bench_session(X11Session::connect(display)?, n_frames)
}

/// [`bench_capture`] on the display at Unix socket `socket`, opened with `cookie`.
pub fn bench_capture_with_cookie(
    socket: &std::path::Path,
    cookie: &[u8],
    n_frames: usize,
) -> Result<CaptureStats, X11Error> {
    bench_session(X11Session::connect_with_cookie(socket, cookie)?, n_frames)
}

fn bench_session(mut session: X11Session, n_frames: usize) -> Result<CaptureStats, X11Error> {
    let stats = session.bench(n_frames);
    session.close();
    stats
}

impl X11Session {
    /// Measures capture+encode on this session's display.
    pub fn bench(&mut self, n_frames: usize) -> Result<CaptureStats, X11Error> {
        capture::measure::measure_capture(&self.conn, &mut self.capturer, n_frames)
    }
}
