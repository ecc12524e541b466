//! The virtual keys of the contract's keys: modifiers, named keys (with the extended-key flag
//! Win32 expects for navigation keys, keypad divide and the menu key), and the characters of a
//! chord on the US layout (a shifted symbol reports that Shift produces it).

use desk_contract::Modifier;
use desk_contract::keys::NamedKey;

/// The virtual key of a modifier.
pub fn modifier_vk(modifier: Modifier) -> u16 {
    match modifier {
        Modifier::Shift => 0x10,
        Modifier::Ctrl => 0x11,
        Modifier::Alt => 0x12,
    }
}

/// The virtual key of a named key, and whether it is an extended key.
pub fn named_vk(key: NamedKey) -> Option<(u16, bool)> {
    Some(match key {
        NamedKey::Return | NamedKey::KeypadEnter => (0x0D, key == NamedKey::KeypadEnter),
        NamedKey::Tab => (0x09, false),
        NamedKey::Space => (0x20, false),
        NamedKey::Backspace => (0x08, false),
        NamedKey::Delete => (0x2E, true),
        NamedKey::Escape => (0x1B, false),
        NamedKey::Insert => (0x2D, true),
        NamedKey::Home => (0x24, true),
        NamedKey::End => (0x23, true),
        NamedKey::PageUp => (0x21, true),
        NamedKey::PageDown => (0x22, true),
        NamedKey::Left => (0x25, true),
        NamedKey::Up => (0x26, true),
        NamedKey::Right => (0x27, true),
        NamedKey::Down => (0x28, true),
        NamedKey::CapsLock => (0x14, false),
        NamedKey::NumLock => (0x90, true),
        NamedKey::ScrollLock => (0x91, false),
        NamedKey::PrintScreen => (0x2C, true),
        NamedKey::Pause => (0x13, false),
        NamedKey::Menu => (0x5D, true),
        NamedKey::F(n) if (1..=24).contains(&n) => (0x70 + u16::from(n) - 1, false),
        NamedKey::F(_) => return None,
        NamedKey::KeypadDigit(n) if n <= 9 => (0x60 + u16::from(n), false),
        NamedKey::KeypadDigit(_) => return None,
        NamedKey::KeypadAdd => (0x6B, false),
        NamedKey::KeypadSubtract => (0x6D, false),
        NamedKey::KeypadMultiply => (0x6A, false),
        NamedKey::KeypadDivide => (0x6F, true),
        NamedKey::KeypadDecimal => (0x6E, false),
    })
}

/// The US-layout virtual key that carries `character`, and whether Shift produces it.
pub fn char_vk(character: char) -> Option<(u16, bool)> {
    let code = u16::try_from(u32::from(character)).ok()?;
    Some(match character {
        'a'..='z' => (code - u16::from(b'a') + 0x41, false),
        'A'..='Z' => (code, true),
        '0'..='9' => (code, false),
        ';' => (0xBA, false),
        ':' => (0xBA, true),
        '=' => (0xBB, false),
        '+' => (0xBB, true),
        ',' => (0xBC, false),
        '<' => (0xBC, true),
        '-' => (0xBD, false),
        '_' => (0xBD, true),
        '.' => (0xBE, false),
        '>' => (0xBE, true),
        '/' => (0xBF, false),
        '?' => (0xBF, true),
        '`' => (0xC0, false),
        '~' => (0xC0, true),
        '[' => (0xDB, false),
        '{' => (0xDB, true),
        '\\' => (0xDC, false),
        '|' => (0xDC, true),
        ']' => (0xDD, false),
        '}' => (0xDD, true),
        '\'' => (0xDE, false),
        '"' => (0xDE, true),
        '!' => (0x31, true),
        '@' => (0x32, true),
        '#' => (0x33, true),
        '$' => (0x34, true),
        '%' => (0x35, true),
        '^' => (0x36, true),
        '&' => (0x37, true),
        '*' => (0x38, true),
        '(' => (0x39, true),
        ')' => (0x30, true),
        _ => return None,
    })
}
