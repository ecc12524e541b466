//! The field checks every evidence record's validation uses: bounded text, exact values,
//! sha256 digests and single file names. Each error names the field.

pub(super) fn check_text(field: &str, text: &str) -> Result<(), String> {
    if text.is_empty() || text.len() > 256 || text.chars().any(char::is_control) {
        return Err(format!(
            "{field} must be 1 to 256 bytes without control characters"
        ));
    }
    Ok(())
}

pub(super) fn check_exact(field: &str, text: &str, expected: &str) -> Result<(), String> {
    if text == expected {
        Ok(())
    } else {
        Err(format!("{field} must be {expected:?}"))
    }
}

fn is_digest(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

pub(super) fn check_digest(field: &str, text: &str) -> Result<(), String> {
    if is_digest(text) {
        Ok(())
    } else {
        Err(format!("{field} must be 64 lowercase hex characters"))
    }
}

/// A single path component: not empty, not `.` or `..`, no `/`, NUL or control characters.
pub(crate) fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|character| character == '/' || character.is_control())
}

pub(super) fn check_file_name(field: &str, name: &str) -> Result<(), String> {
    if is_file_name(name) {
        Ok(())
    } else {
        Err(format!("{field} must be a single file name"))
    }
}
