//! Tidy checks that keep the workspace's shape, run by `cargo test` (`tests/it/main.rs`):
//!
//! 1. Module docs ([`check_file_docs`]): every `.rs` file under `crates/*/src` starts with a
//!    `//!` line, and a file of more than 400 lines says why in that leading `//!` block with the
//!    words "over 400 lines" (case-insensitive, line breaks read as spaces), in the sentence
//!    that gives the reason.
//! 2. Module cycles ([`module_cycles`]), ratcheted against `cycles.allow`: the cycles found must
//!    be exactly the ones listed, so a new or grown cycle fails, and so does a listed one that
//!    is gone (the list shrinks as cycles are fixed).
//!
//! The module graph is an approximation, read with a small tokenizer instead of a compiler:
//! a node is a file (inline `mod x { … }` blocks belong to their file); each crate target (the
//! library, `src/main.rs`, each `src/bin` program) is a graph of its own, built from its `mod`
//! declarations (`#[path]` followed, `cfg` ignored). Every path a file names, in a `use` or in
//! code, starting with `crate`, `super`, `self`, a child module or a name a `use` bound, is
//! resolved through the tree, imports and re-exports (`pub use`, globs) to the file that
//! defines the item (or, for a name the tracker does not know, the last module named), and
//! gives an edge from the naming file to that file. A `mod` declaration alone is no edge. A
//! cycle is a strongly connected component of two or more files.

pub mod docs;
mod error;
mod graph;
mod modules;
mod tokens;
mod walk;

use std::path::{Path, PathBuf};

pub use docs::{DocProblem, check_file_docs};
pub use error::TidyError;
pub use walk::source_files;
use walk::{display_path, read_dir_sorted};

/// One cycle of a crate target: its files (relative to the workspace, `/`-separated, sorted).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cycle {
    /// The target: the package's name, or `package/bin/name` for a `src/bin` program.
    pub target: String,
    /// The files in the cycle.
    pub files: Vec<String>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.target, self.files.join(" "))
    }
}

/// The crate targets under `<workspace>/crates`: (target name, root file relative to the
/// workspace), sorted.
pub fn crate_targets(workspace: &Path) -> Result<Vec<(String, PathBuf)>, TidyError> {
    let mut targets = Vec::new();
    for package_dir in read_dir_sorted(&workspace.join("crates"))? {
        let Some(package) = package_dir.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        let relative = Path::new("crates").join(package).join("src");
        for root in ["lib.rs", "main.rs"] {
            if workspace.join(&relative).join(root).is_file() {
                targets.push((package.to_owned(), relative.join(root)));
            }
        }
        let bin_dir = workspace.join(&relative).join("bin");
        if !bin_dir.is_dir() {
            continue;
        }
        for entry in read_dir_sorted(&bin_dir)? {
            let Some(name) = entry.file_name().and_then(|name| name.to_str()) else {
                continue;
            };
            let (bin_name, root) = if entry.is_dir() {
                (
                    name.to_owned(),
                    relative.join("bin").join(name).join("main.rs"),
                )
            } else if let Some(stem) = name.strip_suffix(".rs") {
                (stem.to_owned(), relative.join("bin").join(name))
            } else {
                continue;
            };
            if workspace.join(&root).is_file() {
                targets.push((format!("{package}/bin/{bin_name}"), root));
            }
        }
    }
    Ok(targets)
}

/// Every module cycle of every crate target under `<workspace>/crates`, sorted, each with the
/// edges between its files (`from -> to`), which say why it is a cycle.
pub fn module_cycles(workspace: &Path) -> Result<Vec<(Cycle, Vec<String>)>, TidyError> {
    let mut found = Vec::new();
    for (target, root) in crate_targets(workspace)? {
        found.extend(target_cycles(workspace, &target, &root)?);
    }
    found.sort();
    Ok(found)
}

/// The cycles of one crate target whose root file is `root` (relative to `workspace`), sorted,
/// each with the edges between its files.
pub fn target_cycles(
    workspace: &Path,
    target: &str,
    root: &Path,
) -> Result<Vec<(Cycle, Vec<String>)>, TidyError> {
    let tree = modules::Tree::read(workspace, root)?;
    let edges = tree.edges();
    let file_name = |file_idx: usize| tree.files.get(file_idx).map(|path| display_path(path));
    let mut found: Vec<(Cycle, Vec<String>)> = graph::cycles(tree.files.len(), &edges)
        .into_iter()
        .map(|component| {
            let mut files: Vec<String> =
                component.iter().filter_map(|&idx| file_name(idx)).collect();
            files.sort();
            let mut inner_edges: Vec<String> = edges
                .iter()
                .filter(|(from, to)| component.contains(from) && component.contains(to))
                .filter_map(|&(from, to)| {
                    Some(format!("{} -> {}", file_name(from)?, file_name(to)?))
                })
                .collect();
            inner_edges.sort();
            let cycle = Cycle {
                target: target.to_owned(),
                files,
            };
            (cycle, inner_edges)
        })
        .collect();
    found.sort();
    Ok(found)
}

/// Reads an allowlist: one cycle per line as [`Cycle`]'s `Display` writes it; `#` starts a
/// comment, blank lines are skipped. Files on a line may come in any order.
pub fn parse_allowlist(text: &str) -> Vec<Cycle> {
    let mut allowed: Vec<Cycle> = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .filter_map(|line| {
            let (target, files) = line.split_once(':')?;
            let mut files: Vec<String> = files.split_whitespace().map(str::to_owned).collect();
            files.sort();
            Some(Cycle {
                target: target.trim().to_owned(),
                files,
            })
        })
        .collect();
    allowed.sort();
    allowed
}

/// The ratchet: `(cycles found but not allowed, allowed cycles not found)`. A grown or shrunk
/// cycle appears on both sides; both empty means the allowlist is exactly today's cycles.
pub fn compare_with_allowlist(found: &[Cycle], allowed: &[Cycle]) -> (Vec<Cycle>, Vec<Cycle>) {
    let unexpected = found
        .iter()
        .filter(|cycle| !allowed.contains(cycle))
        .cloned()
        .collect();
    let gone = allowed
        .iter()
        .filter(|cycle| !found.contains(cycle))
        .cloned()
        .collect();
    (unexpected, gone)
}

#[cfg(test)]
mod tests;
