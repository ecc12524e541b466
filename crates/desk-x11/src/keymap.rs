//! Keys to keysyms to keycodes: the contract's [`Key`] table, character keysyms, the server's
//! keyboard mapping, and temporary remapping of a spare keycode for keysyms the map lacks.
//!
//! Invariant: a spare keycode borrowed by [`Keymap::resolve`] is restored by
//! [`Keymap::restore`] before the action that borrowed it returns (the caller guarantees this on
//! every path, including errors).

use std::time::Duration;

use desk_contract::{Key, Modifier, NamedKey};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, Keycode, Keysym};
use x11rb::rust_connection::RustConnection;

use crate::error::X11Error;

/// `NoSymbol`.
const NO_SYMBOL: Keysym = 0;
/// Time given to clients to re-read the keyboard mapping after a change.
const REMAP_GRACE: Duration = Duration::from_millis(30);

/// `Shift_L`.
pub const XK_SHIFT_L: Keysym = 0xffe1;
/// `Control_L`.
pub(crate) const XK_CONTROL_L: Keysym = 0xffe3;
/// `Alt_L`.
pub(crate) const XK_ALT_L: Keysym = 0xffe9;

/// The keysym of a modifier.
pub(crate) fn modifier_keysym(modifier: Modifier) -> Keysym {
    match modifier {
        Modifier::Shift => XK_SHIFT_L,
        Modifier::Ctrl => XK_CONTROL_L,
        Modifier::Alt => XK_ALT_L,
    }
}

/// The keysym of a named key.
pub(crate) fn named_keysym(named: NamedKey) -> Keysym {
    match named {
        NamedKey::Return => 0xff0d,
        NamedKey::Tab => 0xff09,
        NamedKey::Space => 0x20,
        NamedKey::Backspace => 0xff08,
        NamedKey::Delete => 0xffff,
        NamedKey::Escape => 0xff1b,
        NamedKey::Insert => 0xff63,
        NamedKey::Home => 0xff50,
        NamedKey::End => 0xff57,
        NamedKey::PageUp => 0xff55,
        NamedKey::PageDown => 0xff56,
        NamedKey::Left => 0xff51,
        NamedKey::Up => 0xff52,
        NamedKey::Right => 0xff53,
        NamedKey::Down => 0xff54,
        NamedKey::CapsLock => 0xffe5,
        NamedKey::NumLock => 0xff7f,
        NamedKey::ScrollLock => 0xff14,
        NamedKey::PrintScreen => 0xff61,
        NamedKey::Pause => 0xff13,
        NamedKey::Menu => 0xff67,
        // F1 is 0xffbe and F1..F35 are contiguous; the contract allows 1..=24.
        NamedKey::F(n) => 0xffbd + u32::from(n.clamp(1, 24)),
        NamedKey::KeypadDigit(n) => 0xffb0 + u32::from(n.min(9)),
        NamedKey::KeypadAdd => 0xffab,
        NamedKey::KeypadSubtract => 0xffad,
        NamedKey::KeypadMultiply => 0xffaa,
        NamedKey::KeypadDivide => 0xffaf,
        NamedKey::KeypadDecimal => 0xffae,
        NamedKey::KeypadEnter => 0xff8d,
    }
}

/// The keysym a character types: Latin-1 characters are their own keysym, others use the
/// Unicode keysym range.
pub(crate) fn char_keysym(character: char) -> Keysym {
    let code = u32::from(character);
    if (0x20..=0x7e).contains(&code) || (0xa0..=0xff).contains(&code) {
        code
    } else {
        0x0100_0000 + code
    }
}

/// The keysym of a contract key.
pub(crate) fn key_keysym(key: Key) -> Keysym {
    match key {
        Key::Modifier(modifier) => modifier_keysym(modifier),
        Key::Named(named) => named_keysym(named),
        Key::Char(character) => char_keysym(character),
    }
}

/// A human name for a keysym, used in `held`/`released` lists: the contract's canonical key
/// names where one exists, the character for Latin-1, `keysym_0x...` otherwise.
pub fn keysym_name(keysym: Keysym) -> String {
    match keysym {
        0xffe1 | 0xffe2 => return "shift".to_string(),
        0xffe3 | 0xffe4 => return "ctrl".to_string(),
        0xffe9 | 0xffea => return "alt".to_string(),
        _ => {}
    }
    if let Some(named) = NAMED_KEYS
        .iter()
        .find(|named| named_keysym(**named) == keysym)
    {
        return Key::Named(*named).canonical_name();
    }
    if let Some(n) = (1..=24u8).find(|n| named_keysym(NamedKey::F(*n)) == keysym) {
        return format!("f{n}");
    }
    if let Some(n) = (0..=9u8).find(|n| named_keysym(NamedKey::KeypadDigit(*n)) == keysym) {
        return format!("num{n}");
    }
    match char::from_u32(keysym) {
        Some(character) if (0x21..=0x7e).contains(&keysym) => character.to_string(),
        _ => format!("keysym_0x{keysym:x}"),
    }
}

const NAMED_KEYS: [NamedKey; 27] = [
    NamedKey::Return,
    NamedKey::Tab,
    NamedKey::Space,
    NamedKey::Backspace,
    NamedKey::Delete,
    NamedKey::Escape,
    NamedKey::Insert,
    NamedKey::Home,
    NamedKey::End,
    NamedKey::PageUp,
    NamedKey::PageDown,
    NamedKey::Left,
    NamedKey::Right,
    NamedKey::Up,
    NamedKey::Down,
    NamedKey::CapsLock,
    NamedKey::NumLock,
    NamedKey::ScrollLock,
    NamedKey::PrintScreen,
    NamedKey::Pause,
    NamedKey::Menu,
    NamedKey::KeypadAdd,
    NamedKey::KeypadSubtract,
    NamedKey::KeypadMultiply,
    NamedKey::KeypadDivide,
    NamedKey::KeypadDecimal,
    NamedKey::KeypadEnter,
];

/// How to produce one keysym.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The keycode to press.
    pub keycode: Keycode,
    /// Whether Shift must be held to get the keysym.
    pub shift: bool,
}

/// A copy of the server's keyboard mapping.
#[derive(Debug, Clone)]
pub struct Keymap {
    // Invariant: `syms.len() == n_keycodes * per_keycode` starting at `min_keycode`.
    min_keycode: Keycode,
    per_keycode: usize,
    syms: Vec<Keysym>,
    // The spare keycode currently remapped, and the keysym it carries.
    borrowed: Option<(Keycode, Keysym)>,
}

impl Keymap {
    /// Builds a keymap from a `GetKeyboardMapping` answer (for tests and [`Keymap::load`]).
    pub fn from_parts(min_keycode: Keycode, per_keycode: u8, syms: Vec<Keysym>) -> Keymap {
        Keymap {
            min_keycode,
            per_keycode: usize::from(per_keycode.max(1)),
            syms,
            borrowed: None,
        }
    }

    /// Reads the server's mapping.
    pub fn load(conn: &RustConnection) -> Result<Keymap, X11Error> {
        let setup = conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let reply = conn
            .get_keyboard_mapping(min, max.saturating_sub(min).saturating_add(1))
            .map_err(X11Error::conn("get keyboard mapping"))?
            .reply()
            .map_err(X11Error::reply("get keyboard mapping"))?;
        Ok(Keymap::from_parts(
            min,
            reply.keysyms_per_keycode,
            reply.keysyms,
        ))
    }

    fn rows(&self) -> impl Iterator<Item = (Keycode, &[Keysym])> {
        self.syms
            .chunks(self.per_keycode)
            .enumerate()
            .filter_map(|(row_idx, row)| {
                let keycode = u8::try_from(usize::from(self.min_keycode) + row_idx).ok()?;
                Some((keycode, row))
            })
    }

    /// Finds a keycode producing `keysym`, preferring the unshifted column.
    pub fn lookup(&self, keysym: Keysym) -> Option<Resolved> {
        if keysym == NO_SYMBOL {
            return None;
        }
        if let Some((keycode, _)) = self.rows().find(|(_, row)| row.first() == Some(&keysym)) {
            return Some(Resolved {
                keycode,
                shift: false,
            });
        }
        if let Some((keycode, _)) = self.rows().find(|(_, row)| row.get(1) == Some(&keysym)) {
            return Some(Resolved {
                keycode,
                shift: true,
            });
        }
        // An uppercase Latin letter is implied by a lowercase one with an empty shifted column.
        let lower = char::from_u32(keysym)
            .filter(char::is_ascii_uppercase)?
            .to_ascii_lowercase();
        self.rows()
            .find(|(_, row)| {
                row.first() == Some(&u32::from(lower))
                    && row.get(1).is_none_or(|shifted| *shifted == NO_SYMBOL)
            })
            .map(|(keycode, _)| Resolved {
                keycode,
                shift: true,
            })
    }

    /// The first keysym of `keycode`, if any.
    pub fn keysym_of(&self, keycode: Keycode) -> Option<Keysym> {
        self.rows()
            .find(|(code, _)| *code == keycode)
            .and_then(|(_, row)| row.first().copied())
    }

    fn spare_keycode(&self) -> Option<Keycode> {
        // Use the highest keycode with no symbols at all; low ones may be physical keys.
        self.rows()
            .filter(|(_, row)| row.iter().all(|sym| *sym == NO_SYMBOL))
            .map(|(keycode, _)| keycode)
            .last()
    }

    /// Finds or creates a keycode for `keysym`, remapping a spare keycode when needed.
    pub fn resolve(&mut self, conn: &RustConnection, keysym: Keysym) -> Result<Resolved, X11Error> {
        if let Some(resolved) = self.lookup(keysym) {
            return Ok(resolved);
        }
        if let Some((keycode, carried)) = self.borrowed
            && carried == keysym
        {
            return Ok(Resolved {
                keycode,
                shift: false,
            });
        }
        let keycode = match self.borrowed {
            Some((keycode, _)) => keycode,
            None => self.spare_keycode().ok_or_else(|| {
                X11Error::InvalidRequest(format!("no keycode for keysym 0x{keysym:x}"))
            })?,
        };
        self.map_keycode(conn, keycode, keysym)?;
        self.borrowed = Some((keycode, keysym));
        Ok(Resolved {
            keycode,
            shift: false,
        })
    }

    fn map_keycode(
        &self,
        conn: &RustConnection,
        keycode: Keycode,
        keysym: Keysym,
    ) -> Result<(), X11Error> {
        let mut row = vec![NO_SYMBOL; self.per_keycode];
        if keysym != NO_SYMBOL {
            for slot in row.iter_mut().take(2) {
                *slot = keysym;
            }
        }
        let per_keycode = u8::try_from(self.per_keycode).unwrap_or(u8::MAX);
        conn.change_keyboard_mapping(1, keycode, per_keycode, &row)
            .map_err(X11Error::conn("change keyboard mapping"))?
            .check()
            .map_err(X11Error::reply("change keyboard mapping"))?;
        // Clients re-read the mapping when they see MappingNotify; give them time before the
        // key is pressed (or the mapping changes again), as xdotool does.
        std::thread::sleep(REMAP_GRACE);
        Ok(())
    }

    /// Restores a borrowed spare keycode to no symbols.
    pub fn restore(&mut self, conn: &RustConnection) -> Result<(), X11Error> {
        if let Some((keycode, _)) = self.borrowed.take() {
            self.map_keycode(conn, keycode, NO_SYMBOL)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
