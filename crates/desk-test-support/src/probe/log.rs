//! The probe's log: one [`ProbeEvent`] per line, and the probe's own copy of the keyboard
//! mapping that names the keys in it.

use serde::{Deserialize, Serialize};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

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

/// The keyboard mapping as the probe read it from the X server (refreshed on `MappingNotify`).
pub(super) struct KeyboardMap {
    min_keycode: u8,
    per_keycode: usize,
    syms: Vec<u32>,
}

impl KeyboardMap {
    pub(super) fn load(conn: &RustConnection) -> KeyboardMap {
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

    pub(super) fn keysym(&self, keycode: u8, state: u16) -> u32 {
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

pub(super) fn keysym_char(keysym: u32) -> Option<String> {
    let code = match keysym {
        0x20..=0x7e | 0xa0..=0xff => keysym,
        0x0100_0000..=0x0110_ffff => keysym - 0x0100_0000,
        _ => return None,
    };
    char::from_u32(code).map(String::from)
}

pub(super) fn keysym_name(keysym: u32) -> String {
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
