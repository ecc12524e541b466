//! Text values as they are shown: control codes decoded, MTEXT formatting stripped.

/// Text as drawn: AutoCAD's control codes (`%%c` Ø, `%%d` °, `%%p` ±, `%%%` %), `\U+XXXX`
/// escapes and the diameter sign U+2300 become the characters they show (Ø for a diameter).
pub(super) fn decode_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(c) = rest.chars().next() {
        let lower = rest.get(..3).map(str::to_ascii_lowercase);
        let shown = match lower.as_deref() {
            Some("%%c") => Some('Ø'),
            Some("%%d") => Some('°'),
            Some("%%p") => Some('±'),
            Some("%%%") => Some('%'),
            _ => None,
        };
        if let Some(shown) = shown {
            out.push(shown);
            rest = &rest[3..];
            continue;
        }
        let escaped = rest
            .strip_prefix("\\U+")
            .or_else(|| rest.strip_prefix("\\u+"))
            .and_then(|hex| hex.get(..4))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .and_then(char::from_u32);
        if let Some(escaped) = escaped {
            out.push(if escaped == '\u{2300}' { 'Ø' } else { escaped });
            rest = &rest[7..];
            continue;
        }
        out.push(if c == '\u{2300}' { 'Ø' } else { c });
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Removes MTEXT formatting codes: `\P` becomes a line break, `{`/`}` vanish, `\X...;`
/// codes go.
pub(super) fn strip_mtext(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' => {}
            '\\' => match chars.next() {
                Some('P') => out.push('\n'),
                Some('~') => out.push(' '),
                Some('\\') => out.push('\\'),
                Some('{') => out.push('{'),
                Some('}') => out.push('}'),
                Some(code) if "ACcFfHQTWp".contains(code) => {
                    for skipped in chars.by_ref() {
                        if skipped == ';' {
                            break;
                        }
                    }
                }
                // One-letter toggles such as \L, \O, \K carry no payload.
                Some(toggle) if "LlOoKk".contains(toggle) => {}
                Some(other) => out.push(other),
                None => {}
            },
            _ => out.push(c),
        }
    }
    out.trim().to_owned()
}
