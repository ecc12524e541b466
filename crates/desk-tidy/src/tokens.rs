//! A small Rust tokenizer, just enough to read module paths: identifiers, string literals (for
//! `#[path = "…"]`), `::` and single punctuation characters, each with its line. Comments, char
//! literals, lifetimes and numbers are dropped, so a path written in a comment or a string is
//! never taken for code.

/// One token of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier or keyword (a raw identifier `r#x` without its `r#`).
    Ident(String),
    /// The contents of a string literal, escapes left as written.
    Str(String),
    /// `::`.
    PathSep,
    /// Any other punctuation character.
    Punct(char),
}

/// Tokenizes `source`; each token comes with its 1-based line.
pub(crate) fn tokenize(source: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut char_idx = 0;
    while let Some(&current) = chars.get(char_idx) {
        let next = chars.get(char_idx + 1).copied();
        if current == '\n' {
            line += 1;
            char_idx += 1;
        } else if current.is_whitespace() {
            char_idx += 1;
        } else if current == '/' && next == Some('/') {
            while chars.get(char_idx).is_some_and(|&c| c != '\n') {
                char_idx += 1;
            }
        } else if current == '/' && next == Some('*') {
            char_idx = skip_block_comment(&chars, char_idx, &mut line);
        } else if let Some((end, contents)) = string_literal(&chars, char_idx) {
            line += contents.matches('\n').count();
            tokens.push((Tok::Str(contents), line));
            char_idx = end;
        } else if current == '\'' {
            char_idx = skip_char_or_lifetime(&chars, char_idx);
        } else if current.is_ascii_digit() {
            while chars
                .get(char_idx)
                .is_some_and(|&c| c.is_alphanumeric() || c == '_' || c == '.')
            {
                // A range `0..n` must keep its `..`; a float keeps one dot.
                if chars.get(char_idx) == Some(&'.') && chars.get(char_idx + 1) == Some(&'.') {
                    break;
                }
                char_idx += 1;
            }
        } else if current.is_alphabetic() || current == '_' {
            let start = if current == 'r' && next == Some('#') {
                char_idx + 2
            } else {
                char_idx
            };
            let mut end = start;
            while chars
                .get(end)
                .is_some_and(|&c| c.is_alphanumeric() || c == '_')
            {
                end += 1;
            }
            let ident: String = chars.get(start..end).unwrap_or_default().iter().collect();
            tokens.push((Tok::Ident(ident), line));
            char_idx = end.max(char_idx + 1);
        } else if current == ':' && next == Some(':') {
            tokens.push((Tok::PathSep, line));
            char_idx += 2;
        } else {
            tokens.push((Tok::Punct(current), line));
            char_idx += 1;
        }
    }
    tokens
}

/// Skips a (nested) block comment starting at `start`; returns the index after it.
fn skip_block_comment(chars: &[char], start: usize, line: &mut usize) -> usize {
    let mut depth = 0usize;
    let mut char_idx = start;
    while let Some(&current) = chars.get(char_idx) {
        let next = chars.get(char_idx + 1).copied();
        if current == '/' && next == Some('*') {
            depth += 1;
            char_idx += 2;
        } else if current == '*' && next == Some('/') {
            depth = depth.saturating_sub(1);
            char_idx += 2;
            if depth == 0 {
                return char_idx;
            }
        } else {
            if current == '\n' {
                *line += 1;
            }
            char_idx += 1;
        }
    }
    char_idx
}

/// A string literal (`"…"`, `b"…"`, `c"…"`, `r#"…"#`, `br"…"`) starting at `start`: the index
/// after it and its contents. `None` when no string literal starts there.
fn string_literal(chars: &[char], start: usize) -> Option<(usize, String)> {
    // An identifier character before the prefix means the prefix is the end of a word.
    if start > 0
        && chars
            .get(start - 1)
            .is_some_and(|&c| c.is_alphanumeric() || c == '_')
    {
        return None;
    }
    let mut char_idx = start;
    if matches!(chars.get(char_idx), Some('b' | 'c')) {
        char_idx += 1;
    }
    let raw = chars.get(char_idx) == Some(&'r');
    if raw {
        char_idx += 1;
    }
    let mut n_hashes = 0;
    while raw && chars.get(char_idx) == Some(&'#') {
        n_hashes += 1;
        char_idx += 1;
    }
    if chars.get(char_idx) != Some(&'"') {
        return None;
    }
    char_idx += 1;
    let contents_start = char_idx;
    while let Some(&current) = chars.get(char_idx) {
        if !raw && current == '\\' {
            char_idx += 2;
            continue;
        }
        if current == '"'
            && (1..=n_hashes).all(|hash_idx| chars.get(char_idx + hash_idx) == Some(&'#'))
        {
            let contents = chars
                .get(contents_start..char_idx)
                .unwrap_or_default()
                .iter()
                .collect();
            return Some((char_idx + 1 + n_hashes, contents));
        }
        char_idx += 1;
    }
    Some((chars.len(), String::new()))
}

/// Skips a char literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`) at `start`.
fn skip_char_or_lifetime(chars: &[char], start: usize) -> usize {
    match (chars.get(start + 1), chars.get(start + 2)) {
        (Some('\\'), _) => {
            let mut char_idx = start + 3;
            while chars.get(char_idx).is_some_and(|&c| c != '\'') {
                char_idx += 1;
            }
            char_idx + 1
        }
        (Some(_), Some('\'')) => start + 3,
        _ => {
            // A lifetime: its name goes with it, so `'static` is not read as the keyword.
            let mut char_idx = start + 1;
            while chars
                .get(char_idx)
                .is_some_and(|&c| c.is_alphanumeric() || c == '_')
            {
                char_idx += 1;
            }
            char_idx
        }
    }
}
