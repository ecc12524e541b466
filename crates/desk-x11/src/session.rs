//! [`X11Session`]: one connection to one display and the implementation of every worker
//! operation except `await_app` (see `handoff.rs`) and `execute` (see `execute.rs`).
//!
//! Invariant: held keys and buttons are released on request and at shutdown; the session
//! stays usable for capture after `close`.

use desk_contract::desktop::{DesktopFacts, Frame};
use desk_contract::geometry::DisplaySize;
use desk_contract::worker::{HelloInfo, WORKER_PROTOCOL_VERSION};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::Window;
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::capture::{CapturedPng, Capturer, RawFrame};
use crate::error::X11Error;
use crate::fault::WorkerFault;
use crate::held::Held;
use crate::keymap::Keymap;
use crate::window::{Atoms, Windows};

/// How long a non-empty held set is re-read before what is still held is released: XTEST input
/// is queued, so the release an action just sent may not show in the first read.
const HELD_RECHECK_BUDGET: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest pause between those re-reads. The first re-read follows at once (a read is a
/// round trip, before which the server has usually processed the queued input), then the
/// pauses double from 100 µs up to this.
const HELD_RECHECK_MAX_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// The app whose window `await_app` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AppWindow {
    pub(crate) pid: u32,
    pub(crate) window: Window,
}

/// A live session on one X display.
pub struct X11Session {
    pub(crate) conn: RustConnection,
    pub(crate) root: Window,
    pub(crate) display: DisplaySize,
    pub(crate) atoms: Atoms,
    pub(crate) capturer: Capturer,
    pub(crate) keymap: Keymap,
    pub(crate) app: Option<AppWindow>,
    /// The bound profile's prohibited destinations (`destination.rs`), from `await_app`.
    pub(crate) prohibited: Vec<desk_contract::desktop::ProhibitedDestination>,
    vendor: String,
    /// Test-only: the observation the next `execute` fails (`DESKBROKER_WORKER_FAULT`).
    pub(crate) fault: WorkerFault,
    /// The app's accessibility (AT-SPI), opened on first use (`a11y.rs`).
    pub(crate) a11y: Option<desk_a11y::Accessibility>,
    /// The scan of the prohibited accessibles started after the last settle
    /// (`destination/accessible.rs`).
    pub(crate) guard: Option<crate::destination::GuardSnapshot>,
    /// The background scan's own accessibility connection while no scan runs (a running scan
    /// holds it).
    pub(crate) guard_a11y: Option<desk_a11y::Accessibility>,
    /// Where the broker signals a Stop (`STOP_GENERATION_FILE` beside the socket).
    pub(crate) stop_file: Option<std::path::PathBuf>,
    /// Damage and the desktop's idle signals for the settle after input; `None` without
    /// DAMAGE (the settle then samples frames).
    pub(crate) idle: Option<crate::idle::IdleWatch>,
}

impl X11Session {
    /// Makes settle waits of `execute_for` interruptible through `path`, the file in which the
    /// broker writes the control generation after a Stop.
    pub fn set_stop_file(&mut self, path: std::path::PathBuf) {
        self.stop_file = Some(path);
    }

    /// Connects to `display` (or `$DISPLAY` when `None`) and checks for XTEST.
    pub fn connect(display: Option<&str>) -> Result<X11Session, X11Error> {
        let name = display
            .map(str::to_string)
            .or_else(|| std::env::var("DISPLAY").ok())
            .unwrap_or_default();
        let (conn, screen_idx) =
            RustConnection::connect(display).map_err(|source| X11Error::Connect {
                display: name,
                source,
            })?;
        X11Session::new(conn, screen_idx)
    }

    /// Connects to the display whose Unix socket is `socket` with the MIT-MAGIC-COOKIE-1
    /// `cookie` (a session display started with `-auth`), and checks for XTEST.
    pub fn connect_with_cookie(
        socket: &std::path::Path,
        cookie: &[u8],
    ) -> Result<X11Session, X11Error> {
        let connect_error = |source| X11Error::Connect {
            display: socket.display().to_string(),
            source,
        };
        let stream = std::os::unix::net::UnixStream::connect(socket)
            .and_then(x11rb::rust_connection::DefaultStream::from_unix_stream)
            .map_err(|error| connect_error(error.into()))?;
        let conn = RustConnection::connect_to_stream_with_auth_info(
            stream.0,
            0,
            b"MIT-MAGIC-COOKIE-1".to_vec(),
            cookie.to_vec(),
        )
        .map_err(connect_error)?;
        X11Session::new(conn, 0)
    }

    /// Wraps an open connection.
    pub fn new(conn: RustConnection, screen_idx: usize) -> Result<X11Session, X11Error> {
        let screen = conn.setup().roots.get(screen_idx).cloned().ok_or_else(|| {
            X11Error::InvalidRequest(format!("screen {screen_idx} does not exist"))
        })?;
        let vendor = String::from_utf8_lossy(&conn.setup().vendor).into_owned();
        conn.xtest_get_version(2, 2)
            .map_err(X11Error::conn("query xtest"))?
            .reply()
            .map_err(|_| X11Error::MissingExtension {
                name: "XTEST",
                major: 2,
                minor: 2,
            })?;
        let atoms = Atoms::new(&conn)
            .map_err(X11Error::conn("intern atoms"))?
            .reply()
            .map_err(X11Error::reply("intern atoms"))?;
        let root = screen.root;
        let (width, height) = (screen.width_in_pixels, screen.height_in_pixels);
        let capturer = Capturer::new(&conn, root, width, height)?;
        let keymap = Keymap::load(&conn)?;
        let idle = crate::idle::IdleWatch::new(&conn, root);
        let display = DisplaySize {
            width: u32::from(width),
            height: u32::from(height),
        };
        Ok(X11Session {
            conn,
            root,
            display,
            atoms,
            capturer,
            keymap,
            app: None,
            prohibited: Vec::new(),
            vendor,
            fault: WorkerFault::from_env(),
            stop_file: None,
            a11y: None,
            guard: None,
            guard_a11y: None,
            idle,
        })
    }

    pub(crate) fn windows(&self) -> Windows<'_> {
        Windows {
            conn: &self.conn,
            atoms: &self.atoms,
            root: self.root,
        }
    }

    /// Waits until a window manager has taken the display, at most `timeout`.
    pub fn wait_for_window_manager(&self, timeout: std::time::Duration) -> Result<(), X11Error> {
        let started = std::time::Instant::now();
        while !self.windows().manager_present()? {
            if started.elapsed() >= timeout {
                return Err(X11Error::NoWindowManager {
                    waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(())
    }

    /// The display size.
    pub fn display(&self) -> DisplaySize {
        self.display
    }

    /// The connection, for tests and benchmarks.
    pub fn connection(&self) -> &RustConnection {
        &self.conn
    }

    /// The app's pid, once `await_app` found it.
    pub fn app_pid(&self) -> Option<u32> {
        self.app.map(|app| app.pid)
    }

    /// Answers `hello`.
    pub fn hello(&self) -> HelloInfo {
        HelloInfo {
            protocol_version: WORKER_PROTOCOL_VERSION,
            display: self.display,
            capture_path: self.capturer.path_name().to_string(),
            server_vendor: self.vendor.clone(),
            instance_id: None,
            app_pid: None,
        }
    }

    /// Captures one raw frame.
    pub fn capture_raw(&mut self) -> Result<RawFrame, X11Error> {
        self.capturer.capture_raw(&self.conn)
    }

    /// Encodes a raw frame into a contract [`Frame`], reading the app's maximized state; the
    /// bands unchanged since the last frame this worker encoded reuse their deflate segments
    /// (the same bytes as a cold encode), and the PNG is hashed during its encode.
    pub fn encode(&mut self, raw: &RawFrame) -> Result<Frame, X11Error> {
        let png = self.capturer.encode_png(raw)?;
        Ok(self.frame(png, raw.width(), raw.height()))
    }

    /// The contract [`Frame`] of a `width` x `height` PNG hashed during its encode (its
    /// SHA-256 is taken as it is, never computed again), reading the app's maximized state.
    pub(crate) fn frame(&self, png: CapturedPng, width: u32, height: u32) -> Frame {
        let app_maximized = match self.app {
            Some(app) => self.windows().maximized(app.window).unwrap_or(false),
            None => false,
        };
        Frame {
            sha256: png.sha256,
            png: png.png,
            width,
            height,
            captured_at_ms: png.captured_at_ms,
            app_maximized,
        }
    }

    /// Answers `capture`: encodes straight from the capture buffer.
    pub fn capture(&mut self) -> Result<Frame, X11Error> {
        let captured = self.capturer.capture_png(&self.conn)?;
        let (width, height) = (self.display.width, self.display.height);
        Ok(self.frame(captured, width, height))
    }

    /// Answers `facts`.
    pub fn facts(&self) -> Result<DesktopFacts, X11Error> {
        let app_pid = self.app_pid();
        let windows = self.windows();
        let app_window = match self.app {
            Some(app) => windows.facts(app.window, app_pid).ok(),
            None => None,
        };
        Ok(DesktopFacts {
            display: self.display,
            focus: windows.focus(app_pid)?,
            app_window,
            held: Held::query(&self.conn, self.root)?.names(&self.keymap),
        })
    }

    /// Answers `release_held`: releases every held key and button and names them.
    ///
    /// A window manager's synchronous button grab can hold back our own release for a moment,
    /// so a non-empty answer is re-read a few times before anything is released.
    pub fn release_held(&mut self) -> Result<Vec<String>, X11Error> {
        let mut held = Held::query(&self.conn, self.root)?;
        let deadline = std::time::Instant::now() + HELD_RECHECK_BUDGET;
        let mut pause = std::time::Duration::ZERO;
        while !held.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(pause);
            held = Held::query(&self.conn, self.root)?;
            pause = (pause * 2).clamp(
                std::time::Duration::from_micros(100),
                HELD_RECHECK_MAX_PAUSE,
            );
        }
        let names = held.names(&self.keymap);
        if !held.is_empty() {
            tracing::info!(?names, "releasing held keys and buttons");
            held.release(&self.conn, self.root)?;
        }
        Ok(names)
    }

    /// Releases held inputs and detaches shared memory; the session stays usable for capture
    /// through core `GetImage`.
    pub fn close(&mut self) {
        if let Err(error) = self.release_held() {
            tracing::warn!(%error, "failed to release held inputs at shutdown");
        }
        let _ = self.keymap.restore(&self.conn);
        self.capturer.close(&self.conn);
        let _ = self.conn.flush();
    }
}
