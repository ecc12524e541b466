//! The tidy checks run over this workspace: module docs and reasons for long files, and the
//! module-cycle ratchet against `cycles.allow` (see `desk_tidy`'s crate doc for both rules).

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_source_file_has_a_module_doc_and_long_files_a_reason() {
    let workspace = workspace();
    let files = desk_tidy::source_files(&workspace).unwrap();
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(workspace.join(file)).unwrap();
        if let Some(problem) = desk_tidy::check_file_docs(&source) {
            problems.push(format!("{file}: {problem:?}"));
        }
    }
    assert!(
        problems.is_empty(),
        "files breaking the doc rule (start with `//!`; over {} lines, write \"{}\" and why in \
         the leading `//!` block):\n{}",
        desk_tidy::docs::MAX_LINES_WITHOUT_REASON,
        desk_tidy::docs::REASON_MARKER,
        problems.join("\n")
    );
}

#[test]
fn module_cycles_are_exactly_the_allowed_ones() {
    let workspace = workspace();
    let found_with_edges = desk_tidy::module_cycles(&workspace).unwrap();
    eprintln!("module cycles found ({}):", found_with_edges.len());
    for (cycle, edges) in &found_with_edges {
        eprintln!("  {cycle}");
        for edge in edges {
            eprintln!("      {edge}");
        }
    }
    let found: Vec<desk_tidy::Cycle> = found_with_edges
        .into_iter()
        .map(|(cycle, _)| cycle)
        .collect();
    let allowlist_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("cycles.allow");
    let allowed = desk_tidy::parse_allowlist(&std::fs::read_to_string(&allowlist_path).unwrap());
    let (unexpected, gone) = desk_tidy::compare_with_allowlist(&found, &allowed);
    let render = |cycles: &[desk_tidy::Cycle]| {
        cycles
            .iter()
            .map(|cycle| format!("  {cycle}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        unexpected.is_empty() && gone.is_empty(),
        "module cycles differ from {}\nnew or changed (fix them; break the cycle rather than \
         list it):\n{}\nlisted but not found (remove these lines: the ratchet only shrinks):\n{}",
        allowlist_path.display(),
        render(&unexpected),
        render(&gone)
    );
}
