//! Key names and chords: parsing pyautogui/xdotool-style names into a closed set of keys.
//!
//! Names are case-insensitive; an element may hold a `+` chord (`"ctrl+s"`, `"shift+Tab"`).
//! Unknown names are rejected, never guessed. Chords that reach the operating system rather than
//! the application (Super, Alt+F4, Ctrl+Alt+Delete, Ctrl+Shift+Esc, X11's Ctrl+Alt+Backspace,
//! Ctrl+Alt+F1..F12 and the Ctrl+Alt+keypad grab and video-mode keys, Alt+Tab, Alt+Esc,
//! Alt+Space, Ctrl+Esc, Ctrl+Alt+arrows, Shift+Alt+arrows, Print) are refused:
//! [`REFUSED_CHORDS`] is the list. It covers what openbox's stock configuration binds, although
//! the pinned configuration (`desk-desktop/wm/openbox.xml`) binds no key at all.
//! (Over 400 lines: the closed key-name table is one unit.)

use serde::{Deserialize, Serialize};

use crate::action::Modifier;

/// A non-character, non-modifier key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NamedKey {
    /// Return / Enter.
    Return,
    /// Tab.
    Tab,
    /// Space bar.
    Space,
    /// Backspace.
    Backspace,
    /// Delete.
    Delete,
    /// Escape.
    Escape,
    /// Insert.
    Insert,
    /// Home.
    Home,
    /// End.
    End,
    /// Page Up.
    PageUp,
    /// Page Down.
    PageDown,
    /// Left arrow.
    Left,
    /// Right arrow.
    Right,
    /// Up arrow.
    Up,
    /// Down arrow.
    Down,
    /// Caps Lock.
    CapsLock,
    /// Num Lock.
    NumLock,
    /// Scroll Lock.
    ScrollLock,
    /// Print Screen.
    PrintScreen,
    /// Pause / Break.
    Pause,
    /// The context-menu key.
    Menu,
    /// Function key F1..F24.
    F(u8),
    /// Keypad digit 0..9.
    KeypadDigit(u8),
    /// Keypad `+`.
    KeypadAdd,
    /// Keypad `-`.
    KeypadSubtract,
    /// Keypad `*`.
    KeypadMultiply,
    /// Keypad `/`.
    KeypadDivide,
    /// Keypad `.`.
    KeypadDecimal,
    /// Keypad Enter.
    KeypadEnter,
}

/// One key of a chord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Key {
    /// Shift, Ctrl or Alt.
    Modifier(Modifier),
    /// A named key.
    Named(NamedKey),
    /// A printable ASCII character other than space; letters are lowercase.
    Char(char),
}

impl Key {
    /// The canonical name, as recorded in event logs.
    pub fn canonical_name(&self) -> String {
        match self {
            Key::Modifier(modifier) => modifier.as_str().to_string(),
            Key::Char(character) => character.to_string(),
            Key::Named(named) => match named {
                NamedKey::F(n) => format!("f{n}"),
                NamedKey::KeypadDigit(n) => format!("num{n}"),
                other => {
                    let text = serde_json::to_string(other).unwrap_or_default();
                    text.trim_matches('"').to_string()
                }
            },
        }
    }
}

/// Why a key name or chord was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProblem {
    /// Not a key this broker knows.
    Unknown(String),
    /// A Super/Windows/Meta/Command key.
    SystemKey(String),
    /// A chord reserved by the operating system or the X server.
    ForbiddenChord(String),
    /// Structure: empty, too long, repeated key, or modifiers after the main key.
    Malformed(String),
}

/// The most keys one chord may hold.
pub const MAX_CHORD_KEYS: usize = 5;

fn named(name: &str) -> Option<NamedKey> {
    use NamedKey::*;
    let key = match name {
        "return" | "enter" | "ret" => Return,
        "tab" => Tab,
        "space" | "spacebar" => Space,
        "backspace" | "back_space" | "bksp" | "bs" => Backspace,
        "delete" | "del" => Delete,
        "escape" | "esc" => Escape,
        "insert" | "ins" => Insert,
        "home" => Home,
        "end" => End,
        "pageup" | "page_up" | "pgup" | "prior" => PageUp,
        "pagedown" | "page_down" | "pgdn" | "next" => PageDown,
        "left" | "arrowleft" => Left,
        "right" | "arrowright" => Right,
        "up" | "arrowup" => Up,
        "down" | "arrowdown" => Down,
        "capslock" | "caps_lock" => CapsLock,
        "numlock" | "num_lock" => NumLock,
        "scrolllock" | "scroll_lock" => ScrollLock,
        "printscreen" | "print_screen" | "prtsc" | "prtscr" | "print" => PrintScreen,
        "pause" | "break" => Pause,
        "menu" | "apps" => Menu,
        "add" | "kp_add" => KeypadAdd,
        "subtract" | "kp_subtract" => KeypadSubtract,
        "multiply" | "kp_multiply" => KeypadMultiply,
        "divide" | "kp_divide" => KeypadDivide,
        "decimal" | "kp_decimal" => KeypadDecimal,
        "kp_enter" | "numpadenter" => KeypadEnter,
        _ => return numbered(name),
    };
    Some(key)
}

fn numbered(name: &str) -> Option<NamedKey> {
    if let Some(digits) = name.strip_prefix('f') {
        let n: u8 = digits.parse().ok()?;
        return (1..=24).contains(&n).then_some(NamedKey::F(n));
    }
    for prefix in ["num", "kp_", "numpad"] {
        if let Some(digits) = name.strip_prefix(prefix) {
            let n: u8 = digits.parse().ok()?;
            return (digits.len() == 1 && n <= 9).then_some(NamedKey::KeypadDigit(n));
        }
    }
    None
}

fn modifier(name: &str) -> Option<Modifier> {
    match name {
        "shift" | "shiftleft" | "shiftright" | "shift_l" | "shift_r" | "lshift" | "rshift" => {
            Some(Modifier::Shift)
        }
        "ctrl" | "control" | "ctrlleft" | "ctrlright" | "control_l" | "control_r" | "lctrl"
        | "rctrl" => Some(Modifier::Ctrl),
        "alt" | "altleft" | "altright" | "alt_l" | "alt_r" | "option" | "optionleft"
        | "optionright" | "lalt" | "ralt" => Some(Modifier::Alt),
        _ => None,
    }
}

fn is_system_key(name: &str) -> bool {
    matches!(
        name,
        "win"
            | "winleft"
            | "winright"
            | "lwin"
            | "rwin"
            | "windows"
            | "super"
            | "super_l"
            | "super_r"
            | "meta"
            | "meta_l"
            | "meta_r"
            | "command"
            | "cmd"
            | "hyper"
            | "hyper_l"
            | "hyper_r"
            | "altgr"
            | "iso_level3_shift"
            | "mode_switch"
            | "sysrq"
            | "sys_req"
    )
}

fn symbol(name: &str) -> Option<char> {
    let character = match name {
        "plus" => '+',
        "minus" => '-',
        "comma" => ',',
        "period" | "dot" => '.',
        "slash" => '/',
        "backslash" => '\\',
        "semicolon" => ';',
        "colon" => ':',
        "apostrophe" | "quote" => '\'',
        "quotedbl" => '"',
        "grave" | "backtick" => '`',
        "bracketleft" => '[',
        "bracketright" => ']',
        "braceleft" => '{',
        "braceright" => '}',
        "equal" | "equals" => '=',
        "less" => '<',
        "greater" => '>',
        "underscore" => '_',
        "exclam" => '!',
        "at" => '@',
        "numbersign" | "hash" => '#',
        "dollar" => '$',
        "percent" => '%',
        "asciicircum" | "caret" => '^',
        "ampersand" => '&',
        "asterisk" => '*',
        "parenleft" => '(',
        "parenright" => ')',
        "question" => '?',
        "bar" | "pipe" => '|',
        "asciitilde" | "tilde" => '~',
        _ => return None,
    };
    Some(character)
}

/// Parses one key name (no `+` splitting).
pub fn parse_key(raw: &str) -> Result<Key, KeyProblem> {
    let chars: Vec<char> = raw.chars().collect();
    if chars.len() == 1 {
        let character = chars[0];
        if character == ' ' {
            return Ok(Key::Named(NamedKey::Space));
        }
        if character.is_ascii_graphic() {
            return Ok(Key::Char(character.to_ascii_lowercase()));
        }
        return Err(KeyProblem::Unknown(raw.escape_default().to_string()));
    }
    let name = raw.to_ascii_lowercase();
    if is_system_key(&name) {
        return Err(KeyProblem::SystemKey(raw.to_string()));
    }
    if let Some(modifier) = modifier(&name) {
        return Ok(Key::Modifier(modifier));
    }
    if let Some(key) = named(&name) {
        return Ok(Key::Named(key));
    }
    if let Some(character) = symbol(&name) {
        return Ok(Key::Char(character));
    }
    Err(KeyProblem::Unknown(raw.escape_default().to_string()))
}

fn split_element(element: &str) -> Vec<&str> {
    if element == "+" || !element.contains('+') {
        return vec![element];
    }
    // "ctrl++" means ctrl and the plus key.
    if let Some(head) = element.strip_suffix("++") {
        let mut parts: Vec<&str> = head.split('+').collect();
        parts.push("+");
        return parts;
    }
    element.split('+').collect()
}

/// Parses a chord given as a list of names, each of which may itself be a `+` chord.
///
/// The result lists modifiers first (in the order given) and at most one other key last.
pub fn parse_chord(elements: &[String]) -> Result<Vec<Key>, KeyProblem> {
    let mut keys: Vec<Key> = Vec::new();
    for element in elements {
        for part in split_element(element) {
            if part.is_empty() {
                return Err(KeyProblem::Malformed(format!(
                    "empty key name in {:?}",
                    element.escape_default().to_string()
                )));
            }
            let key = parse_key(part)?;
            if keys.contains(&key) {
                return Err(KeyProblem::Malformed(format!(
                    "key {:?} appears twice in the chord",
                    key.canonical_name()
                )));
            }
            if keys
                .iter()
                .any(|earlier| !matches!(earlier, Key::Modifier(_)))
            {
                return Err(KeyProblem::Malformed(
                    "a chord holds modifiers first and at most one other key, last".to_string(),
                ));
            }
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return Err(KeyProblem::Malformed(
            "a chord needs at least one key".to_string(),
        ));
    }
    if keys.len() > MAX_CHORD_KEYS {
        return Err(KeyProblem::Malformed(format!(
            "a chord holds at most {MAX_CHORD_KEYS} keys, got {}",
            keys.len()
        )));
    }
    check_forbidden(&keys)?;
    Ok(keys)
}

/// Which main keys a refused chord covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedKey {
    /// Exactly this key.
    Is(NamedKey),
    /// F1..F12.
    FunctionKeys,
    /// Any arrow key.
    Arrows,
    /// The keypad's + - * / keys.
    KeypadOperators,
}

/// One chord the broker refuses because it reaches the operating system, the X server or the
/// window manager rather than the app: every modifier in `needs` held (others may be too) and
/// the main key matching `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusedChord {
    /// Modifiers that must all be held; empty means "with or without modifiers".
    pub needs: &'static [Modifier],
    /// The main key.
    pub key: RefusedKey,
    /// Why it is refused (documentation).
    pub why: &'static str,
}

/// Every refused chord, as data (docs/security.md lists them). Super/Meta/Hyper/SysRq keys are
/// refused by name (`KeyProblem::SystemKey`).
pub const REFUSED_CHORDS: &[RefusedChord] = {
    use Modifier::{Alt, Ctrl, Shift};
    use NamedKey::{Backspace, Delete, Escape, F, PrintScreen, Space, Tab};
    &[
        RefusedChord {
            needs: &[Alt],
            key: RefusedKey::Is(F(4)),
            why: "closes the window",
        },
        RefusedChord {
            needs: &[Ctrl, Alt],
            key: RefusedKey::Is(Delete),
            why: "system attention",
        },
        RefusedChord {
            needs: &[Ctrl, Shift],
            key: RefusedKey::Is(Escape),
            why: "task manager",
        },
        RefusedChord {
            needs: &[Ctrl, Alt],
            key: RefusedKey::Is(Backspace),
            why: "kills the X server",
        },
        RefusedChord {
            needs: &[Ctrl, Alt],
            key: RefusedKey::FunctionKeys,
            why: "switches virtual terminal",
        },
        RefusedChord {
            needs: &[Ctrl, Alt],
            key: RefusedKey::KeypadOperators,
            why: "X grab and video-mode keys",
        },
        RefusedChord {
            needs: &[Alt],
            key: RefusedKey::Is(Tab),
            why: "cycles windows",
        },
        RefusedChord {
            needs: &[Alt],
            key: RefusedKey::Is(Escape),
            why: "cycles or lowers windows",
        },
        RefusedChord {
            needs: &[Alt],
            key: RefusedKey::Is(Space),
            why: "opens the window menu",
        },
        RefusedChord {
            needs: &[Ctrl],
            key: RefusedKey::Is(Escape),
            why: "opens the start menu",
        },
        RefusedChord {
            needs: &[Ctrl, Alt],
            key: RefusedKey::Arrows,
            why: "switches or moves desktops",
        },
        RefusedChord {
            needs: &[Shift, Alt],
            key: RefusedKey::Arrows,
            why: "sends the window to another desktop",
        },
        RefusedChord {
            needs: &[],
            key: RefusedKey::Is(PrintScreen),
            why: "runs a screenshot tool",
        },
    ]
};

impl RefusedKey {
    fn covers(self, key: &NamedKey) -> bool {
        match self {
            RefusedKey::Is(named) => named == *key,
            RefusedKey::FunctionKeys => matches!(key, NamedKey::F(n) if *n <= 12),
            RefusedKey::Arrows => matches!(
                key,
                NamedKey::Left | NamedKey::Right | NamedKey::Up | NamedKey::Down
            ),
            RefusedKey::KeypadOperators => matches!(
                key,
                NamedKey::KeypadAdd
                    | NamedKey::KeypadSubtract
                    | NamedKey::KeypadMultiply
                    | NamedKey::KeypadDivide
            ),
        }
    }
}

/// The chord of [`REFUSED_CHORDS`] that `keys` would press, if any: its main key (the first
/// that is not a modifier) covered and every modifier it needs held. Validation refuses such a
/// chord; a worker checks again with this before any input.
pub fn refused_chord(keys: &[Key]) -> Option<&'static RefusedChord> {
    let held = |modifier: &Modifier| keys.contains(&Key::Modifier(*modifier));
    let Some(Key::Named(main)) = keys.iter().find(|key| !matches!(key, Key::Modifier(_))) else {
        return None;
    };
    REFUSED_CHORDS
        .iter()
        .find(|chord| chord.key.covers(main) && chord.needs.iter().all(held))
}

fn check_forbidden(keys: &[Key]) -> Result<(), KeyProblem> {
    if refused_chord(keys).is_some() {
        let name = keys
            .iter()
            .map(Key::canonical_name)
            .collect::<Vec<_>>()
            .join("+");
        Err(KeyProblem::ForbiddenChord(name))
    } else {
        Ok(())
    }
}
