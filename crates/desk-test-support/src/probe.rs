//! The probe window: an x11rb client that paints a known color, records every key, button and
//! motion event it receives as one NDJSON line (flushed per line), and the log's parser. It
//! also copies and pastes (`clip.rs`). Just over 400 lines: the event loop and its records
//! read best in one place.
//!
//! Invariant: the log records what the X server delivered, interpreted with the probe's own
//! copy of the keyboard mapping (refreshed on `MappingNotify`), never what a sender intended.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, Mapping, PropMode, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

mod clip;
mod unruly;

/// The probe's background color as (r, g, b).
pub const PROBE_RGB: (u8, u8, u8) = (0x33, 0x66, 0xcc);

/// One event the probe received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeEvent {
    /// `button_press`, `button_release`, `key_press`, `key_release`, `motion`, or `copy` /
    /// `paste` (the text in `char`; `clip.rs`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Pointer column in root coordinates.
    pub root_x: i32,
    /// Pointer row in root coordinates.
    pub root_y: i32,
    /// Button number, for button events.
    pub button: Option<u8>,
    /// Keysym chosen from the mapping and the shift state, for key events.
    pub keysym: Option<u32>,
    /// A readable keysym name.
    pub keysym_name: Option<String>,
    /// The character the keysym stands for.
    pub char: Option<String>,
    /// The modifier/button state mask at the event.
    pub state: u16,
}

impl ProbeEvent {
    /// Whether Shift was held.
    pub fn shift(&self) -> bool {
        self.state & 1 != 0
    }
    /// Whether Control was held.
    pub fn ctrl(&self) -> bool {
        self.state & 4 != 0
    }
    /// Whether Mod1 (Alt) was held.
    pub fn alt(&self) -> bool {
        self.state & 8 != 0
    }
    /// Whether button `n` (1..=5) was held.
    pub fn button_held(&self, n: u8) -> bool {
        self.state & (1 << (7 + n)) != 0
    }
}

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
        }
    }
}

struct KeyboardMap {
    min_keycode: u8,
    per_keycode: usize,
    syms: Vec<u32>,
}

impl KeyboardMap {
    fn load(conn: &RustConnection) -> KeyboardMap {
        let setup = conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let reply = conn
            .get_keyboard_mapping(min, max - min + 1)
            .unwrap()
            .reply()
            .unwrap();
        KeyboardMap {
            min_keycode: min,
            per_keycode: usize::from(reply.keysyms_per_keycode),
            syms: reply.keysyms,
        }
    }

    fn keysym(&self, keycode: u8, state: u16) -> u32 {
        let Some(row_idx) = usize::from(keycode).checked_sub(usize::from(self.min_keycode)) else {
            return 0;
        };
        let start = row_idx * self.per_keycode;
        let row = self
            .syms
            .get(start..start + self.per_keycode)
            .unwrap_or(&[]);
        let base = row.first().copied().unwrap_or(0);
        let shifted = row.get(1).copied().unwrap_or(0);
        if state & 1 == 0 {
            return base;
        }
        if shifted != 0 {
            return shifted;
        }
        match char::from_u32(base) {
            Some(c) if c.is_ascii_lowercase() => u32::from(c.to_ascii_uppercase()),
            _ => base,
        }
    }
}

fn keysym_char(keysym: u32) -> Option<String> {
    let code = match keysym {
        0x20..=0x7e | 0xa0..=0xff => keysym,
        0x0100_0000..=0x0110_ffff => keysym - 0x0100_0000,
        _ => return None,
    };
    char::from_u32(code).map(String::from)
}

fn keysym_name(keysym: u32) -> String {
    let name = match keysym {
        0x20 => "space",
        0xff0d => "Return",
        0xff09 => "Tab",
        0xfe20 => "ISO_Left_Tab",
        0xff08 => "BackSpace",
        0xffff => "Delete",
        0xff1b => "Escape",
        0xffe1 => "Shift_L",
        0xffe2 => "Shift_R",
        0xffe3 => "Control_L",
        0xffe4 => "Control_R",
        0xffe9 => "Alt_L",
        0xffea => "Alt_R",
        0xff51 => "Left",
        0xff52 => "Up",
        0xff53 => "Right",
        0xff54 => "Down",
        0xffbe..=0xffd5 => return format!("F{}", keysym - 0xffbd),
        0x21..=0x7e => return keysym_char(keysym).unwrap_or_default(),
        _ => return format!("0x{keysym:x}"),
    };
    name.to_string()
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
