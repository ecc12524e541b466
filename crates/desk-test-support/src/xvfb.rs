//! The Xvfb and openbox fixtures.
//!
//! Invariant: each [`Xvfb`] owns one server process started with `-displayfd`; its display
//! number is the one the server wrote, never a guess.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, CreateWindowAux, WindowClass};
use x11rb::rust_connection::RustConnection;

/// How long a server or window manager may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Prints `skipped: <what> not found`, or panics when `DESK_REQUIRE_XVFB=1`.
pub fn skip_unless_required(what: &str) {
    assert!(
        std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
        "{what} not found but DESK_REQUIRE_XVFB=1"
    );
    println!("skipped: {what} not found");
}

/// An Xvfb server owned by one test.
pub struct Xvfb {
    child: Child,
    display: String,
    width: u32,
    height: u32,
}

impl Xvfb {
    /// Starts `Xvfb -displayfd <fd> -screen 0 WxHx24 -nolisten tcp -noreset`.
    ///
    /// Returns `None` (after printing `skipped: Xvfb not found`) when Xvfb is not installed,
    /// unless `DESK_REQUIRE_XVFB=1`, in which case it panics.
    pub fn start(width: u32, height: u32) -> Option<Xvfb> {
        let (read_end, write_end) = nix::unistd::pipe().expect("create displayfd pipe");
        let spawned = Command::new("Xvfb")
            .arg("-displayfd")
            .arg(write_end.as_raw_fd().to_string())
            .args(["-screen", "0", &format!("{width}x{height}x24")])
            .args(["-nolisten", "tcp", "-noreset"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        drop(write_end);
        let mut child = match spawned {
            Ok(child) => child,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                skip_unless_required("Xvfb");
                return None;
            }
            Err(error) => panic!("failed to spawn Xvfb: {error}"),
        };
        // Read "N\n" on a helper thread: the write end may have leaked into processes other
        // tests spawned at the same time, so EOF is not a reliable end marker.
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut file = std::fs::File::from(read_end);
            let mut text = String::new();
            let mut byte = [0u8; 1];
            while let Ok(1) = file.read(&mut byte) {
                if byte[0] == b'\n' {
                    break;
                }
                text.push(char::from(byte[0]));
            }
            let _ = sender.send(text);
        });
        let number = match receiver.recv_timeout(START_TIMEOUT) {
            Ok(text) if !text.trim().is_empty() => text.trim().to_string(),
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("Xvfb did not report a display number: {other:?}");
            }
        };
        Some(Xvfb {
            child,
            display: format!(":{number}"),
            width,
            height,
        })
    }

    /// The display name, `:N`.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The screen size.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Opens a client connection.
    pub fn connect(&self) -> RustConnection {
        RustConnection::connect(Some(&self.display))
            .expect("connect to Xvfb")
            .0
    }

    /// Starts openbox on this display and waits until it is managing the screen.
    pub fn start_openbox(&self) -> Openbox {
        Openbox::start(self)
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An openbox window manager, killed on drop.
pub struct Openbox {
    child: Child,
}

impl Openbox {
    /// Starts `openbox --sm-disable` and waits for `_NET_SUPPORTING_WM_CHECK` on the root.
    pub fn start(xvfb: &Xvfb) -> Openbox {
        Openbox::start_with_args(xvfb, &[])
    }

    /// Like [`Openbox::start`], with extra arguments (e.g. `--config-file PATH`).
    pub fn start_with_args(xvfb: &Xvfb, args: &[&str]) -> Openbox {
        let child = Command::new("openbox")
            .arg("--sm-disable")
            .args(args)
            .env("DISPLAY", xvfb.display())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn openbox");
        let openbox = Openbox { child };
        let conn = xvfb.connect();
        let root = conn.setup().roots[0].root;
        let check = conn
            .intern_atom(false, b"_NET_SUPPORTING_WM_CHECK")
            .unwrap()
            .reply()
            .unwrap()
            .atom;
        let started = Instant::now();
        loop {
            let reply = conn
                .get_property(false, root, check, AtomEnum::WINDOW, 0, 1)
                .unwrap()
                .reply()
                .unwrap();
            if reply
                .value32()
                .is_some_and(|mut values| values.next().is_some())
            {
                break;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "openbox did not start in time"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        wait_until_managing(&conn, root);
        openbox
    }
}

impl Drop for Openbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Openbox sets `_NET_SUPPORTING_WM_CHECK` before it handles map requests, and drops requests
/// that arrive in between; a window mapped before it redirects is adopted at startup instead.
/// Map scratch windows until two in a row were listed in `_NET_CLIENT_LIST`: the second one
/// was created after startup adoption, so it proves map requests are handled.
fn wait_until_managing(conn: &RustConnection, root: u32) {
    let screen = &conn.setup().roots[0];
    let client_list = conn
        .intern_atom(false, b"_NET_CLIENT_LIST")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    let started = Instant::now();
    let mut n_managed = 0;
    while n_managed < 2 {
        let window = conn.generate_id().unwrap();
        conn.create_window(
            screen.root_depth,
            window,
            root,
            0,
            0,
            10,
            10,
            0,
            WindowClass::INPUT_OUTPUT,
            screen.root_visual,
            &CreateWindowAux::new(),
        )
        .unwrap();
        conn.map_window(window).unwrap();
        conn.flush().unwrap();
        let attempt = Instant::now();
        while attempt.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(20));
            let reply = conn
                .get_property(false, root, client_list, AtomEnum::WINDOW, 0, 1024)
                .unwrap()
                .reply()
                .unwrap();
            if reply
                .value32()
                .is_some_and(|mut values| values.any(|listed| listed == window))
            {
                n_managed += 1;
                break;
            }
        }
        conn.destroy_window(window).unwrap();
        conn.flush().unwrap();
        assert!(
            started.elapsed() < START_TIMEOUT,
            "openbox never managed a window"
        );
    }
}
