//! Unit tests for keysym tables and keymap lookup.

use super::*;

fn sample() -> Keymap {
    // Keycodes 10.. with two columns: a/A, 1/!, comma/less, Shift_L, then an empty row.
    Keymap::from_parts(
        10,
        2,
        vec![
            0x61, 0x41, 0x31, 0x21, 0x2c, 0x3c, XK_SHIFT_L, 0, 0x62, 0, 0, 0,
        ],
    )
}

#[test]
fn lookup_prefers_unshifted_column() {
    let keymap = sample();
    assert_eq!(
        keymap.lookup(0x61),
        Some(Resolved {
            keycode: 10,
            shift: false
        })
    );
    assert_eq!(
        keymap.lookup(0x21),
        Some(Resolved {
            keycode: 11,
            shift: true
        })
    );
    assert_eq!(
        keymap.lookup(u32::from('<')),
        Some(Resolved {
            keycode: 12,
            shift: true
        })
    );
    assert_eq!(
        keymap.lookup(XK_SHIFT_L),
        Some(Resolved {
            keycode: 13,
            shift: false
        })
    );
}

#[test]
fn uppercase_is_implied_by_lowercase_only_row() {
    assert_eq!(
        sample().lookup(u32::from('B')),
        Some(Resolved {
            keycode: 14,
            shift: true
        })
    );
}

#[test]
fn missing_keysym_has_no_keycode() {
    assert_eq!(sample().lookup(u32::from('~')), None);
    assert_eq!(sample().spare_keycode(), Some(15));
}

#[test]
fn named_keysyms_match_x11() {
    assert_eq!(named_keysym(NamedKey::F(1)), 0xffbe);
    assert_eq!(named_keysym(NamedKey::F(24)), 0xffd5);
    assert_eq!(named_keysym(NamedKey::KeypadDigit(7)), 0xffb7);
    assert_eq!(key_keysym(Key::Char('~')), 0x7e);
    assert_eq!(char_keysym('é'), 0xe9);
    assert_eq!(char_keysym('€'), 0x0100_20ac);
}

#[test]
fn keysym_names_use_canonical_key_names() {
    assert_eq!(keysym_name(XK_CONTROL_L), "ctrl");
    assert_eq!(keysym_name(0xff0d), "return");
    assert_eq!(keysym_name(0xffc0), "f3");
    assert_eq!(keysym_name(u32::from('a')), "a");
    assert_eq!(keysym_name(0x1234), "keysym_0x1234");
}
