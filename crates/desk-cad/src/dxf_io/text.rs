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

/// Whether `bytes` is a binary DXF (its sentinel line).
pub(super) fn is_binary_dxf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"AutoCAD Binary DXF")
}

/// A binary DXF's strings as the `dxf` crate returns them (one char per byte) decoded as the
/// UTF-8 that DXF R2007 and later store; a value whose bytes are not UTF-8 stays as read.
pub(super) fn binary_utf8(value: &str) -> String {
    if value.is_ascii() {
        return value.to_owned();
    }
    let bytes: Option<Vec<u8>> = value.chars().map(|c| u8::try_from(c).ok()).collect();
    bytes
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| value.to_owned())
}

/// Decodes, in place, the strings the model reads (text and MTEXT values, layer and linetype
/// names) of a binary DXF of version R2007 or later, whose strings are UTF-8 by definition but
/// which the `dxf` crate reads one char per byte.
pub(super) fn repair_binary_utf8(drawing: &mut dxf::Drawing) {
    use dxf::entities::EntityType;
    if drawing.header.version < dxf::enums::AcadVersion::R2007 {
        return;
    }
    let fix = |value: &mut String| *value = binary_utf8(value);
    for layer in drawing.layers_mut() {
        fix(&mut layer.name);
        fix(&mut layer.line_type_name);
    }
    for entity in drawing.entities_mut() {
        fix(&mut entity.common.layer);
        fix(&mut entity.common.line_type_name);
        match &mut entity.specific {
            EntityType::Text(text) => fix(&mut text.value),
            EntityType::MText(mtext) => {
                fix(&mut mtext.text);
                mtext.extended_text.iter_mut().for_each(fix);
            }
            _ => {}
        }
    }
}
