//! Held keys and buttons: reading them (QueryKeymap, QueryPointer mask), naming them, and
//! releasing them through XTEST.
//!
//! Invariant: a release is only sent for a key or button the server reported down.

use x11rb::protocol::xproto::{
    BUTTON_RELEASE_EVENT, ConnectionExt as _, KEY_RELEASE_EVENT, Keycode, Window,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::error::X11Error;
use crate::keymap::{Keymap, keysym_name};

/// Keys and buttons the server reports held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Held {
    /// Keycodes down per QueryKeymap.
    pub(crate) keycodes: Vec<Keycode>,
    /// Buttons 1..=5 down per the QueryPointer mask.
    pub(crate) buttons: Vec<u8>,
}

/// The name of an X button, as reported in `held`/`released`.
pub(crate) fn button_name(code: u8) -> String {
    match code {
        1 => "mouse_left".to_string(),
        2 => "mouse_middle".to_string(),
        3 => "mouse_right".to_string(),
        other => format!("mouse_button{other}"),
    }
}

impl Held {
    /// Reads held keys and buttons from the server.
    pub(crate) fn query(conn: &RustConnection, root: Window) -> Result<Held, X11Error> {
        let keymap = conn
            .query_keymap()
            .map_err(X11Error::conn("query keymap"))?
            .reply()
            .map_err(X11Error::reply("query keymap"))?;
        let keycodes = keymap
            .keys
            .iter()
            .enumerate()
            .flat_map(|(byte_idx, byte)| {
                (0..8u8)
                    .filter(move |bit| byte & (1 << bit) != 0)
                    .filter_map(move |bit| u8::try_from(byte_idx * 8 + usize::from(bit)).ok())
            })
            .collect();
        let pointer = conn
            .query_pointer(root)
            .map_err(X11Error::conn("query pointer"))?
            .reply()
            .map_err(X11Error::reply("query pointer"))?;
        let mask = u16::from(pointer.mask);
        let buttons = (1..=5u8)
            .filter(|code| mask & (1 << (7 + code)) != 0)
            .collect();
        Ok(Held { keycodes, buttons })
    }

    /// Names for the held keys and buttons.
    pub(crate) fn names(&self, keymap: &Keymap) -> Vec<String> {
        let keys = self
            .keycodes
            .iter()
            .map(|keycode| match keymap.keysym_of(*keycode) {
                Some(keysym) if keysym != 0 => keysym_name(keysym),
                _ => format!("keycode_{keycode}"),
            });
        keys.chain(self.buttons.iter().map(|code| button_name(*code)))
            .collect()
    }

    /// Whether nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.keycodes.is_empty() && self.buttons.is_empty()
    }

    /// Releases everything held through XTEST and waits for the server to process it.
    pub(crate) fn release(&self, conn: &RustConnection, root: Window) -> Result<(), X11Error> {
        for code in &self.buttons {
            conn.xtest_fake_input(
                BUTTON_RELEASE_EVENT,
                *code,
                x11rb::CURRENT_TIME,
                root,
                0,
                0,
                0,
            )
            .map_err(X11Error::conn("release button"))?;
        }
        for keycode in &self.keycodes {
            conn.xtest_fake_input(
                KEY_RELEASE_EVENT,
                *keycode,
                x11rb::CURRENT_TIME,
                root,
                0,
                0,
                0,
            )
            .map_err(X11Error::conn("release key"))?;
        }
        conn.get_input_focus()
            .map_err(X11Error::conn("sync release"))?
            .reply()
            .map_err(X11Error::reply("sync release"))?;
        Ok(())
    }
}
