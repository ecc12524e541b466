//! The seam's two small types beside [`crate::DesktopBackend`]: [`SessionControl`], the handle
//! a backend hands out for what the broker signals without the session's turn (Stop's new
//! generation, the lease deadline), and [`BackendCapabilities`], what a backend or a factory's
//! desktops declare they offer. The broker names neither a sandbox function nor a file for
//! either.
//!
//! Implementations: [`WorkspaceControl`] (a local desktop's: files in the session's workspace
//! that its worker and its sandbox's first process read), [`RecordedControl`] (an in-process
//! desktop's, the fake's: it remembers what it was told) and [`UnsignalledControl`] (a desktop
//! with neither, a remote worker's: nothing to write, said so by its capabilities).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::layout::SessionDir;

/// Out-of-band control of one session's desktop, shared (`Arc`) and kept by the broker beside
/// the session, outside the lock its backend is behind: calling it never waits for a step in
/// progress, and it stays usable while one runs. Each call is one small write and never blocks
/// on the desktop.
pub trait SessionControl: Send + Sync + std::fmt::Debug {
    /// The control generation is now `generation` (a Stop, or a claim that replaced the
    /// owner): a step of an older generation settling in the desktop ends `interrupted`
    /// (see [`crate::DesktopBackend::execute_for`]). A desktop that cannot be interrupted
    /// ([`BackendCapabilities::interrupt`] false) has nothing to do.
    fn signal_stop(&self, generation: u64) -> std::io::Result<()>;

    /// The desktop may run until `deadline_unix_secs` (its lease expiry plus grace) if no
    /// broker releases it; called at every renewal. A desktop without a backstop of its own
    /// ([`BackendCapabilities::lease_deadline`] false) has nothing to do.
    fn set_lease_deadline(&self, deadline_unix_secs: u64) -> std::io::Result<()>;
}

/// What a desktop offers beyond the methods every backend has (display, start, capture,
/// execute, facts, release, stop, shutdown). Declared by [`crate::DesktopBackend::capabilities`]
/// for one desktop and by [`crate::BackendFactory::capabilities`] for every desktop a factory
/// makes (asked before any exists: the broker's capabilities document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BackendCapabilities {
    /// `clipboard_read` and `clipboard_write` reach a clipboard.
    pub clipboard: bool,
    /// `accessibility` reads the app's tree (a private AT-SPI bus), so semantic steps work.
    pub accessibility: bool,
    /// `windows` lists the app's top-level windows.
    pub windows: bool,
    /// A Stop ([`SessionControl::signal_stop`]) ends a settle wait of an older generation.
    pub interrupt: bool,
    /// The desktop stops by itself past the deadline [`SessionControl::set_lease_deadline`]
    /// records.
    pub lease_deadline: bool,
    /// `detach` leaves the desktop running for a later broker to reattach.
    pub detach: bool,
}

impl BackendCapabilities {
    /// Nothing beyond the common methods.
    pub const NONE: BackendCapabilities = BackendCapabilities {
        clipboard: false,
        accessibility: false,
        windows: false,
        interrupt: false,
        lease_deadline: false,
        detach: false,
    };
}

/// A local desktop's control: the files in the session's workspace its worker
/// (`stop-generation`, beside its socket) and its sandbox's first process (`host/deadline`)
/// read. Before the workspace exists (or without a sandbox, for the deadline) each call writes
/// nothing.
#[derive(Debug, Clone)]
pub struct WorkspaceControl {
    session_dir: SessionDir,
}

impl WorkspaceControl {
    /// The control of the desktop in `session_dir`.
    pub fn new(session_dir: SessionDir) -> WorkspaceControl {
        WorkspaceControl { session_dir }
    }
}

impl SessionControl for WorkspaceControl {
    fn signal_stop(&self, generation: u64) -> std::io::Result<()> {
        crate::sandbox::workspace::signal_stop(&self.session_dir, generation)
    }

    fn set_lease_deadline(&self, deadline_unix_secs: u64) -> std::io::Result<()> {
        crate::sandbox::set_lease_deadline(self.session_dir.path(), deadline_unix_secs)
    }
}

/// An in-process desktop's control: it remembers the last generation and deadline it was
/// told, for the desktop (and a test) to read.
#[derive(Debug, Default)]
pub struct RecordedControl {
    stop_generation: AtomicU64,
    deadline_unix_secs: AtomicU64,
}

impl RecordedControl {
    /// The last generation signalled; 0 before any.
    pub fn stop_generation(&self) -> u64 {
        self.stop_generation.load(Ordering::SeqCst)
    }

    /// The last deadline recorded; 0 before any.
    pub fn deadline_unix_secs(&self) -> u64 {
        self.deadline_unix_secs.load(Ordering::SeqCst)
    }
}

impl SessionControl for RecordedControl {
    fn signal_stop(&self, generation: u64) -> std::io::Result<()> {
        self.stop_generation.fetch_max(generation, Ordering::SeqCst);
        Ok(())
    }

    fn set_lease_deadline(&self, deadline_unix_secs: u64) -> std::io::Result<()> {
        self.deadline_unix_secs
            .store(deadline_unix_secs, Ordering::SeqCst);
        Ok(())
    }
}

/// The control of a desktop that can be neither interrupted nor given a deadline (a remote
/// worker's: its settle runs in full and its own host stops it): every call writes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnsignalledControl;

impl SessionControl for UnsignalledControl {
    fn signal_stop(&self, _generation: u64) -> std::io::Result<()> {
        Ok(())
    }

    fn set_lease_deadline(&self, _deadline_unix_secs: u64) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_control_writes_the_stop_generation_only_once_the_run_directory_exists() {
        let root = tempfile::tempdir().unwrap();
        let session_dir = SessionDir::at(root.path());
        let control = WorkspaceControl::new(session_dir.clone());
        control.signal_stop(3).unwrap();
        let run = session_dir
            .workspace()
            .join(crate::sandbox::workspace::RUN_DIR);
        assert!(!run.exists(), "no desktop: nothing is written");
        std::fs::create_dir_all(&run).unwrap();
        control.signal_stop(4).unwrap();
        let written =
            std::fs::read_to_string(run.join(desk_contract::worker::STOP_GENERATION_FILE)).unwrap();
        assert_eq!(written, "4\n");
    }

    #[test]
    fn a_recorded_control_keeps_the_highest_generation_and_the_last_deadline() {
        let control = RecordedControl::default();
        control.signal_stop(5).unwrap();
        control.signal_stop(4).unwrap();
        control.set_lease_deadline(100).unwrap();
        control.set_lease_deadline(90).unwrap();
        assert_eq!(control.stop_generation(), 5);
        assert_eq!(control.deadline_unix_secs(), 90);
    }
}
