//! Unit tests: the tokenizer, the doc rule, path resolution and cycles over small workspaces
//! written to a temporary directory, and the allowlist ratchet.

use std::path::Path;

use crate::tokens::{Tok, tokenize};
use crate::{Cycle, DocProblem, check_file_docs, compare_with_allowlist, parse_allowlist};

fn idents(source: &str) -> Vec<String> {
    tokenize(source)
        .into_iter()
        .filter_map(|(tok, _)| match tok {
            Tok::Ident(name) => Some(name),
            _ => None,
        })
        .collect()
}

#[test]
fn comments_strings_chars_and_lifetimes_hide_no_code_and_show_none() {
    let source = "// crate::a\n/* crate::b /* nested */ crate::c */ fn f<'a>(x: &'a str) {\n\
                  let s = \"crate::d\"; let r = r#\"crate::\"e\"#; let c = '\"'; let q = '\\''; \
                  crate::g::h(); }";
    assert_eq!(
        idents(source),
        [
            "fn", "f", "x", "str", "let", "s", "let", "r", "let", "c", "let", "q", "crate", "g",
            "h"
        ]
    );
    let lines: Vec<usize> = tokenize("a\n/* x\n y */ b\n\"1\n2\" c")
        .into_iter()
        .map(|(_, line)| line)
        .collect();
    assert_eq!(lines, [1, 3, 5, 5]);
}

#[test]
fn a_file_needs_a_module_doc_and_a_long_one_its_reason() {
    assert_eq!(check_file_docs("use x;\n"), Some(DocProblem::NoModuleDoc));
    assert_eq!(
        check_file_docs("\n//! Late.\n"),
        Some(DocProblem::NoModuleDoc)
    );
    assert_eq!(check_file_docs("//! Short.\nfn f() {}\n"), None);
    let body = "fn f() {}\n".repeat(399);
    assert_eq!(check_file_docs(&format!("//! Exactly 400.\n{body}")), None);
    let long_body = format!("{body}fn g() {{}}\n");
    assert_eq!(
        check_file_docs(&format!("//! No reason.\n{long_body}")),
        Some(DocProblem::LongWithoutReason { n_lines: 401 })
    );
    // The marker may wrap, and must be in the leading block, not a later comment.
    assert_eq!(
        check_file_docs(&format!(
            "//! One unit; that is why it is Over 400\n//! lines.\n{long_body}"
        )),
        None
    );
    assert_eq!(
        check_file_docs(&format!(
            "//! No reason.\n\n//! over 400 lines\n{long_body}"
        )),
        Some(DocProblem::LongWithoutReason { n_lines: 403 })
    );
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let workspace = tempfile::tempdir().unwrap();
    write(workspace.path(), files);
    crate::module_cycles(workspace.path())
        .unwrap()
        .into_iter()
        .map(|(cycle, _)| cycle.to_string())
        .collect()
}

#[test]
fn a_child_naming_its_parent_that_names_it_is_a_cycle() {
    let found = cycles_of(&[
        ("crates/k/src/lib.rs", "//! k\nmod a;\nmod b;\n"),
        (
            "crates/k/src/a.rs",
            "//! a\nmod inner;\npub fn f() { inner::g() }\n",
        ),
        (
            "crates/k/src/a/inner.rs",
            "//! inner\npub fn g() { super::f() }\n",
        ),
        ("crates/k/src/b.rs", "//! b\nfn h() { crate::a::f() }\n"),
    ]);
    assert_eq!(found, ["k: crates/k/src/a.rs crates/k/src/a/inner.rs"]);
}

#[test]
fn re_exports_lead_to_the_defining_file_and_other_crates_to_no_edge() {
    // `crate::Thing` goes through lib.rs's re-export to b.rs, so lib.rs is in no cycle; in b.rs,
    // a path in a comment or string, the inline test module's `super`, a path through
    // `pub use serde;` and `pub(in crate::a)` give no edge (any would close a cycle).
    let found = cycles_of(&[
        (
            "crates/k/src/lib.rs",
            "//! k\nmod a;\nmod b;\npub use b::Thing;\npub use serde;\n",
        ),
        (
            "crates/k/src/a.rs",
            "//! a\nuse crate::Thing;\npub fn f() {}\n",
        ),
        (
            "crates/k/src/b.rs",
            "//! b\npub struct Thing;\n// crate::a::f\nconst S: &str = \"crate::a::f\";\n\
             pub(in crate::a) fn z() { crate::serde::x() }\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
    // The same shape with b.rs naming a.rs is a cycle of the two, lib.rs still outside it.
    let found = cycles_of(&[
        (
            "crates/k/src/lib.rs",
            "//! k\nmod a;\nmod b;\npub use b::Thing;\n",
        ),
        (
            "crates/k/src/a.rs",
            "//! a\nuse crate::Thing;\npub fn f() {}\n",
        ),
        (
            "crates/k/src/b.rs",
            "//! b\npub struct Thing;\nfn g() { crate::a::f() }\n",
        ),
    ]);
    assert_eq!(found, ["k: crates/k/src/a.rs crates/k/src/b.rs"]);
}

#[test]
fn use_trees_globs_path_attributes_and_binaries_are_followed() {
    let found = cycles_of(&[
        (
            "crates/k/src/lib.rs",
            "//! k\nmod a;\n#[path = \"other.rs\"]\nmod b;\n",
        ),
        // A grouped use with `self` and a rename names both modules.
        (
            "crates/k/src/a.rs",
            "//! a\nuse crate::{b::{self as bee}, lib_item as _};\n",
        ),
        // A glob import of a's items.
        ("crates/k/src/other.rs", "//! b\nuse crate::a::*;\n"),
        // A binary is a crate of its own: its `crate::` is its own root.
        (
            "crates/k/src/bin/tool/main.rs",
            "//! tool\nmod x;\nmod y;\n",
        ),
        (
            "crates/k/src/bin/tool/x.rs",
            "//! x\nuse crate::y::Y;\npub struct X;\n",
        ),
        (
            "crates/k/src/bin/tool/y.rs",
            "//! y\npub struct Y(crate::x::X);\n",
        ),
    ]);
    assert_eq!(
        found,
        [
            "k: crates/k/src/a.rs crates/k/src/other.rs",
            "k/bin/tool: crates/k/src/bin/tool/x.rs crates/k/src/bin/tool/y.rs",
        ]
    );
}

#[test]
fn the_ratchet_fails_on_new_grown_and_gone_cycles() {
    let allowed = parse_allowlist("# comment\nk: b.rs a.rs\n\nk: c.rs d.rs # trailing\n");
    let cycle = |files: &[&str]| Cycle {
        target: "k".to_owned(),
        files: files.iter().map(|file| (*file).to_owned()).collect(),
    };
    assert_eq!(
        allowed,
        [cycle(&["a.rs", "b.rs"]), cycle(&["c.rs", "d.rs"])]
    );
    let same = [cycle(&["a.rs", "b.rs"]), cycle(&["c.rs", "d.rs"])];
    assert_eq!(compare_with_allowlist(&same, &allowed), (vec![], vec![]));
    let grown_and_new = [
        cycle(&["a.rs", "b.rs", "e.rs"]),
        cycle(&["c.rs", "d.rs"]),
        cycle(&["f.rs", "g.rs"]),
    ];
    assert_eq!(
        compare_with_allowlist(&grown_and_new, &allowed),
        (
            vec![cycle(&["a.rs", "b.rs", "e.rs"]), cycle(&["f.rs", "g.rs"])],
            vec![cycle(&["a.rs", "b.rs"])]
        )
    );
    let one_fixed = [cycle(&["c.rs", "d.rs"])];
    assert_eq!(
        compare_with_allowlist(&one_fixed, &allowed),
        (vec![], vec![cycle(&["a.rs", "b.rs"])])
    );
}
