//! Rule 1 of the tidy checks: module docs, and a written reason on every file over 400 lines.

/// Files longer than this many lines must say why in their leading `//!` block.
pub const MAX_LINES_WITHOUT_REASON: usize = 400;

/// The words a long file's leading `//!` block must contain (compared case-insensitively, with
/// line breaks read as spaces).
pub const REASON_MARKER: &str = "over 400 lines";

/// A file that breaks rule 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocProblem {
    /// The file's first line is not a `//!` module doc.
    NoModuleDoc,
    /// The file has more than 400 lines and its leading `//!` block gives no reason.
    LongWithoutReason {
        /// The file's number of lines.
        n_lines: usize,
    },
}

/// Checks one file's text against rule 1; `None` when it passes.
pub fn check_file_docs(source: &str) -> Option<DocProblem> {
    let mut lines = source.lines();
    if !lines.next().is_some_and(|first| first.starts_with("//!")) {
        return Some(DocProblem::NoModuleDoc);
    }
    let n_lines = source.lines().count();
    if n_lines <= MAX_LINES_WITHOUT_REASON {
        return None;
    }
    let leading_doc = source
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join(" ");
    let leading_doc = leading_doc
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    if leading_doc.contains(REASON_MARKER) {
        None
    } else {
        Some(DocProblem::LongWithoutReason { n_lines })
    }
}
