//! The probe window: an x11rb client that paints a known color, records every key, button and
//! motion event it receives as one NDJSON line (flushed per line), and the log's parser. It
//! also copies and pastes (`clip.rs`); the log's records and the keyboard mapping are in
//! `log.rs`.
//!
//! Invariant: the log records what the X server delivered, interpreted with the probe's own
//! copy of the keyboard mapping (refreshed on `MappingNotify`), never what a sender intended.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, Mapping, PropMode, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

mod clip;
mod log;
mod unruly;

pub use log::ProbeEvent;
use log::{KeyboardMap, keysym_char, keysym_name};
pub use unruly::PROBE_RGB;

/// How the probe window looks.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Window title.
    pub title: String,
    /// `WM_CLASS` class (also used as instance).
    pub class: String,
    /// Destroy the window when this keysym is pressed (to play an overlay dialog).
    pub close_on_keysym: Option<u32>,
    /// Initial size.
    pub size: (u16, u16),
    /// The largest size the window accepts (`WM_NORMAL_HINTS`): it can never cover a screen.
    pub max_size: Option<(u16, u16)>,
    /// Repaint in alternating colors every this many ms, forever: a screen that never settles.
    pub repaint_ms: Option<u64>,
    /// With `repaint_ms`: start repainting only at the first button press (a window that
    /// settles at handoff, then never again).
    pub repaint_after_press: bool,
    /// Repaint once, in the flicker color, this many ms after each button press: a timer of
    /// the event loop (the loop blocks in `ppoll` until it is due), like a click animation.
    pub paint_after_press_ms: Option<u64>,
    /// After each button press, compute on the CPU this many ms (no call, no sleep), then
    /// repaint once in the flicker color: a long operation that paints only when it ends.
    pub compute_after_press_ms: Option<u64>,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            title: "deskbroker probe".to_string(),
            class: "deskprobe".to_string(),
            close_on_keysym: None,
            size: (400, 300),
            max_size: None,
            repaint_ms: None,
            repaint_after_press: false,
            paint_after_press_ms: None,
            compute_after_press_ms: None,
        }
    }
}

/// Opens the probe window on `display` and records events to `out` until the connection
/// closes (or the window is closed by `close_on_keysym`).
pub fn run(
    display: &str,
    out: &Path,
    options: &ProbeOptions,
) -> Result<(), Box<dyn std::error::Error>> {
    let (conn, window) = open_window(display, options)?;
    let mut keyboard = KeyboardMap::load(&conn);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)?;
    let mut flicker = (std::time::Instant::now(), false);
    let mut clipboard = clip::ProbeClipboard::new(&conn, window);
    let mut pressed = false;
    let mut paint_at = None;
    loop {
        let repaint_ms = options
            .repaint_ms
            .filter(|_| pressed || !options.repaint_after_press);
        let event = match options.paint_after_press_ms {
            Some(delay) => unruly::next_event_or_paint(&conn, window, delay, &mut paint_at)?,
            None => unruly::next_event(&conn, window, repaint_ms, &mut flicker)?,
        };
        pressed |= matches!(event, Event::ButtonPress(_));
        if let (Some(ms), Event::ButtonPress(_)) = (options.compute_after_press_ms, &event) {
            unruly::compute_then_paint(&conn, window, ms)?;
        }
        let clipped = clipboard.handle(&conn, &keyboard, &event)?;
        let record = match event {
            Event::MappingNotify(notify) if notify.request == Mapping::KEYBOARD => {
                keyboard = KeyboardMap::load(&conn);
                None
            }
            Event::KeyPress(key) | Event::KeyRelease(key) => {
                let keysym = keyboard.keysym(key.detail, u16::from(key.state));
                let kind = if key.response_type & 0x7f == x11rb::protocol::xproto::KEY_PRESS_EVENT {
                    "key_press"
                } else {
                    "key_release"
                };
                if kind == "key_press" && Some(keysym) == options.close_on_keysym {
                    conn.destroy_window(window)?;
                    conn.flush()?;
                    return Ok(());
                }
                Some(ProbeEvent {
                    kind: kind.to_string(),
                    root_x: i32::from(key.root_x),
                    root_y: i32::from(key.root_y),
                    button: None,
                    keysym: Some(keysym),
                    keysym_name: Some(keysym_name(keysym)),
                    char: keysym_char(keysym),
                    state: u16::from(key.state),
                })
            }
            Event::ButtonPress(button) | Event::ButtonRelease(button) => {
                let kind =
                    if button.response_type & 0x7f == x11rb::protocol::xproto::BUTTON_PRESS_EVENT {
                        "button_press"
                    } else {
                        "button_release"
                    };
                Some(ProbeEvent {
                    kind: kind.to_string(),
                    root_x: i32::from(button.root_x),
                    root_y: i32::from(button.root_y),
                    button: Some(button.detail),
                    keysym: None,
                    keysym_name: None,
                    char: None,
                    state: u16::from(button.state),
                })
            }
            Event::MotionNotify(motion) => Some(ProbeEvent {
                kind: "motion".to_string(),
                root_x: i32::from(motion.root_x),
                root_y: i32::from(motion.root_y),
                button: None,
                keysym: None,
                keysym_name: None,
                char: None,
                state: u16::from(motion.state),
            }),
            _ => None,
        };
        for record in record.into_iter().chain(clipped) {
            let line = serde_json::to_string(&record)?;
            writeln!(file, "{line}")?;
            file.flush()?;
        }
    }
}

/// Opens the probe's window on `display` (background color, `WM_CLASS`, titles and
/// `_NET_WM_PID` set, key/button/motion events selected) and maps it until a running window
/// manager adopted it.
pub fn open_window(
    display: &str,
    options: &ProbeOptions,
) -> Result<(RustConnection, u32), Box<dyn std::error::Error>> {
    let (conn, screen_idx) = RustConnection::connect(Some(display))?;
    let screen = &conn.setup().roots[screen_idx];
    let window = conn.generate_id()?;
    let pixel = unruly::probe_pixel();
    let mask = EventMask::KEY_PRESS
        | EventMask::KEY_RELEASE
        | EventMask::BUTTON_PRESS
        | EventMask::BUTTON_RELEASE
        | EventMask::POINTER_MOTION
        | EventMask::EXPOSURE
        | EventMask::STRUCTURE_NOTIFY;
    conn.create_window(
        screen.root_depth,
        window,
        screen.root,
        0,
        0,
        options.size.0,
        options.size.1,
        0,
        WindowClass::INPUT_OUTPUT,
        screen.root_visual,
        &CreateWindowAux::new()
            .background_pixel(pixel)
            .event_mask(mask),
    )?;
    let intern = |name: &[u8]| -> Result<u32, Box<dyn std::error::Error>> {
        Ok(conn.intern_atom(false, name)?.reply()?.atom)
    };
    let (net_wm_pid, net_wm_name, utf8) = (
        intern(b"_NET_WM_PID")?,
        intern(b"_NET_WM_NAME")?,
        intern(b"UTF8_STRING")?,
    );
    let class = format!("{0}\0{0}\0", options.class);
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_CLASS,
        AtomEnum::STRING,
        class.as_bytes(),
    )?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        options.title.as_bytes(),
    )?;
    conn.change_property8(
        PropMode::REPLACE,
        window,
        net_wm_name,
        utf8,
        options.title.as_bytes(),
    )?;
    conn.change_property32(
        PropMode::REPLACE,
        window,
        net_wm_pid,
        AtomEnum::CARDINAL,
        &[std::process::id()],
    )?;
    unruly::limit_size(&conn, window, options.max_size)?;
    map_until_managed(&conn, window)?;
    Ok((conn, window))
}

/// Maps `window` and, when a window manager is running, maps it again until the manager
/// adopted it (sets `WM_STATE`): openbox drops map requests that arrive while it starts up.
fn map_until_managed(conn: &RustConnection, window: u32) -> Result<(), Box<dyn std::error::Error>> {
    let root = conn.setup().roots[0].root;
    let wm_check = conn
        .intern_atom(false, b"_NET_SUPPORTING_WM_CHECK")?
        .reply()?
        .atom;
    let wm_state = conn.intern_atom(false, b"WM_STATE")?.reply()?.atom;
    let has_wm = conn
        .get_property(false, root, wm_check, AtomEnum::ANY, 0, 1)?
        .reply()?
        .value_len
        > 0;
    for _ in 0..50 {
        conn.map_window(window)?;
        conn.flush()?;
        if !has_wm {
            return Ok(());
        }
        for _ in 0..10 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let state = conn
                .get_property(false, window, wm_state, AtomEnum::ANY, 0, 2)?
                .reply()?;
            if state.value_len > 0 {
                return Ok(());
            }
        }
        conn.unmap_window(window)?;
    }
    Ok(())
}

/// Runs the probe on a background thread and returns its log path once the window is mapped
/// (the thread ends when the display goes away).
pub fn spawn_probe(display: &str, log_dir: &Path, options: ProbeOptions) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = log_dir.join(format!("probe-{}-{n}.ndjson", std::process::id()));
    std::fs::write(&out, b"").unwrap();
    let (display, path) = (display.to_string(), out.clone());
    std::thread::spawn(move || {
        if let Err(error) = run(&display, &path, &options) {
            eprintln!("probe on {display} ended: {error}");
        }
    });
    out
}

/// Reads a probe log.
pub fn read_probe_log(path: &Path) -> Vec<ProbeEvent> {
    let file = std::fs::File::open(path).unwrap();
    std::io::BufReader::new(file)
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
        .collect()
}

/// The text typed, reconstructed from `key_press` characters.
pub fn typed_text(events: &[ProbeEvent]) -> String {
    events
        .iter()
        .filter(|event| event.kind == "key_press")
        .filter_map(|event| event.char.as_deref())
        .collect()
}
