//! The strict parser's limits (nesting depth, integer range, quoted lengths) and how a token
//! or a path is clipped to them in an error.

/// Deepest nesting of arrays and objects the parser accepts (the top-level container is depth 1).
pub const MAX_DEPTH: usize = 64;

/// Largest integer magnitude accepted: 2^53 − 1, the largest exactly representable in a double
/// together with all its neighbours (I-JSON, RFC 7493).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Longest token, key or message (in characters) quoted in an error.
pub const MAX_QUOTED_CHARS: usize = 160;

/// Longest object key (in characters) rendered inside an error path.
const MAX_PATH_KEY_CHARS: usize = 40;

/// Longest error path (in characters).
const MAX_PATH_CHARS: usize = 200;

/// `text` when it is at most [`MAX_QUOTED_CHARS`] characters, else its start and `…`.
pub fn clip(text: &str) -> String {
    clip_to(text, MAX_QUOTED_CHARS)
}

fn clip_to(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// A path clipped to [`MAX_PATH_CHARS`], keeping its start (`$.action…`).
pub(super) fn clip_path(path: &str) -> String {
    clip_to(path, MAX_PATH_CHARS)
}

/// The path of `key` inside the object at `parent`: `$.key`, or `$["odd key"]`; long keys are
/// clipped.
pub fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || character == '_');
    let key = clip_to(key, MAX_PATH_KEY_CHARS);
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{key:?}]")
    }
}
