//! One crate target's module tree, read from its files: `mod` declarations (with `#[path]`),
//! inline `mod x { … }` blocks, the items each module defines, its `use` imports and every path
//! its code names. Nothing is resolved here; `graph.rs` resolves the paths over the finished tree.
//!
//! Approximations (documented in `lib.rs`): items are any `fn`/`struct`/`enum`/`trait`/`type`/
//! `const`/`static`/`union` name at any depth of the module's text (methods included), every
//! `macro_rules!` name is taken as exported at the crate root, and `cfg` is ignored (every
//! declared module whose file exists is read).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::error::TidyError;
use crate::tokens::{Tok, tokenize};

/// A module: a file or an inline `mod x { … }` block inside one.
#[derive(Debug)]
pub(crate) struct Module {
    /// Index of the file that holds this module in [`Tree::files`].
    pub(crate) file: usize,
    /// The enclosing module; `None` for the crate root.
    pub(crate) parent: Option<usize>,
    /// Child modules by name.
    pub(crate) children: BTreeMap<String, usize>,
    /// Items defined here, by name, with the file that defines them.
    pub(crate) items: HashMap<String, usize>,
    /// `use` imports that bind a name: name and path as written.
    pub(crate) named_imports: Vec<(String, Vec<String>)>,
    /// `use path::*` imports: the paths as written.
    pub(crate) glob_imports: Vec<Vec<String>>,
}

/// A path named in a module's text (in a `use` or in code), as written.
#[derive(Debug)]
pub(crate) struct Reference {
    /// The module whose scope the path is written in.
    pub(crate) scope: usize,
    /// The path's segments (`crate`, `super`, `self` kept as segments).
    pub(crate) segments: Vec<String>,
}

/// One crate target (a library, the main binary or a `src/bin` binary) read from disk.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// Files as paths relative to the workspace root.
    pub(crate) files: Vec<PathBuf>,
    /// Modules; index 0 is the crate root.
    pub(crate) modules: Vec<Module>,
    /// Every path named, with the module it is written in.
    pub(crate) references: Vec<Reference>,
}

impl Tree {
    /// Reads the target whose root file is `root` (relative to `workspace`), following every
    /// `mod` declaration whose file exists.
    pub(crate) fn read(workspace: &Path, root: &Path) -> Result<Tree, TidyError> {
        let mut tree = Tree::default();
        let mut file_ids: HashMap<PathBuf, usize> = HashMap::new();
        let mut pending: Vec<(PathBuf, usize)> = Vec::new();
        tree.files.push(root.to_path_buf());
        file_ids.insert(root.to_path_buf(), 0);
        tree.modules.push(Module::new(0, None));
        pending.push((root.to_path_buf(), 0));
        while let Some((file_path, module_idx)) = pending.pop() {
            let source = std::fs::read_to_string(workspace.join(&file_path)).map_err(|source| {
                TidyError::Read {
                    path: workspace.join(&file_path),
                    source,
                }
            })?;
            let declared = tree.read_file(&source, module_idx);
            for declaration in declared {
                let child_path = declaration.file_path(workspace, &file_path);
                let Some(child_path) = child_path.filter(|path| workspace.join(path).is_file())
                else {
                    continue;
                };
                let file_idx = *file_ids.entry(child_path.clone()).or_insert_with(|| {
                    tree.files.push(child_path.clone());
                    tree.files.len() - 1
                });
                let child_idx = tree.add_module(declaration.parent, &declaration.name, file_idx);
                pending.push((child_path, child_idx));
            }
        }
        Ok(tree)
    }

    fn add_module(&mut self, parent: usize, name: &str, file: usize) -> usize {
        self.modules.push(Module::new(file, Some(parent)));
        let module_idx = self.modules.len() - 1;
        if let Some(parent_module) = self.modules.get_mut(parent) {
            parent_module.children.insert(name.to_owned(), module_idx);
        }
        module_idx
    }

    /// Reads one file's tokens into module `file_module`: its inline modules, items, imports
    /// and paths. Returns its `mod x;` declarations, for the caller to load.
    fn read_file(&mut self, source: &str, file_module: usize) -> Vec<Declaration> {
        let file = self
            .modules
            .get(file_module)
            .map_or(0, |module| module.file);
        let tokens: Vec<Tok> = tokenize(source).into_iter().map(|(tok, _)| tok).collect();
        let ident = |idx: usize| match tokens.get(idx) {
            Some(Tok::Ident(name)) => Some(name.as_str()),
            _ => None,
        };
        let punct = |idx: usize, wanted: char| tokens.get(idx) == Some(&Tok::Punct(wanted));
        let mut declarations = Vec::new();
        // Open inline modules: (module, brace depth inside it, names from the file's module).
        let mut scopes: Vec<(usize, usize, Vec<String>)> = vec![(file_module, 0, Vec::new())];
        let mut depth = 0usize;
        let mut path_attribute: Option<String> = None;
        let mut tok_idx = 0;
        while tok_idx < tokens.len() {
            let (scope, _, inline_names) = scopes.last().cloned().unwrap_or_default();
            if punct(tok_idx, '{') {
                depth += 1;
            } else if punct(tok_idx, '}') {
                if scopes.len() > 1 && scopes.last().is_some_and(|(_, open, _)| *open == depth) {
                    scopes.pop();
                }
                depth = depth.saturating_sub(1);
            } else if punct(tok_idx, '#')
                && punct(tok_idx + 1, '[')
                && ident(tok_idx + 2) == Some("path")
                && punct(tok_idx + 3, '=')
            {
                if let Some(Tok::Str(value)) = tokens.get(tok_idx + 4) {
                    path_attribute = Some(value.clone());
                }
            } else if ident(tok_idx) == Some("pub") && punct(tok_idx + 1, '(') {
                // `pub(crate)`, `pub(in crate::x)`: a visibility, not a path into a module.
                while tok_idx < tokens.len() && !punct(tok_idx, ')') {
                    tok_idx += 1;
                }
            } else if let (Some("mod"), Some(name)) = (ident(tok_idx), ident(tok_idx + 1)) {
                if punct(tok_idx + 2, '{') {
                    let module_idx = self.add_module(scope, name, file);
                    depth += 1;
                    let mut names = inline_names.clone();
                    names.push(name.to_owned());
                    scopes.push((module_idx, depth, names));
                    tok_idx += 3;
                    path_attribute = None;
                    continue;
                }
                declarations.push(Declaration {
                    parent: scope,
                    name: name.to_owned(),
                    inline_names: inline_names.clone(),
                    path_attribute: path_attribute.take(),
                });
                tok_idx += 2;
                continue;
            } else if let (Some("macro_rules"), true, Some(name)) =
                (ident(tok_idx), punct(tok_idx + 1, '!'), ident(tok_idx + 2))
            {
                if let Some(root) = self.modules.get_mut(0) {
                    root.items.insert(name.to_owned(), file);
                }
            } else if let (Some(keyword), Some(name)) = (ident(tok_idx), ident(tok_idx + 1))
                && ITEM_KEYWORDS.contains(&keyword)
            {
                if let Some(module) = self.modules.get_mut(scope) {
                    module.items.insert(name.to_owned(), file);
                }
            } else if ident(tok_idx) == Some("use") {
                tok_idx += 1;
                let mut leaves = Vec::new();
                parse_use_tree(&tokens, &mut tok_idx, Vec::new(), &mut leaves);
                self.add_imports(scope, leaves);
                continue;
            } else if let Some(first) = ident(tok_idx)
                && tokens.get(tok_idx + 1) == Some(&Tok::PathSep)
                && tok_idx
                    .checked_sub(1)
                    .is_none_or(|prev| tokens.get(prev) != Some(&Tok::PathSep))
            {
                let mut segments = vec![first.to_owned()];
                tok_idx += 1;
                while tokens.get(tok_idx) == Some(&Tok::PathSep) {
                    let Some(segment) = ident(tok_idx + 1) else {
                        break;
                    };
                    segments.push(segment.to_owned());
                    tok_idx += 2;
                }
                self.references.push(Reference { scope, segments });
                continue;
            }
            tok_idx += 1;
        }
        declarations
    }

    fn add_imports(&mut self, scope: usize, leaves: Vec<UseLeaf>) {
        for leaf in leaves {
            self.references.push(Reference {
                scope,
                segments: leaf.path.clone(),
            });
            let Some(module) = self.modules.get_mut(scope) else {
                continue;
            };
            match leaf.name {
                None => module.glob_imports.push(leaf.path),
                Some(name) if name == "_" => {}
                Some(name) => module.named_imports.push((name, leaf.path)),
            }
        }
    }
}

const ITEM_KEYWORDS: [&str; 8] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

impl Module {
    fn new(file: usize, parent: Option<usize>) -> Module {
        Module {
            file,
            parent,
            children: BTreeMap::new(),
            items: HashMap::new(),
            named_imports: Vec::new(),
            glob_imports: Vec::new(),
        }
    }
}

/// A `mod x;` declaration, to be loaded from its file.
struct Declaration {
    parent: usize,
    name: String,
    /// Inline modules between the declaring file's module and the declaration.
    inline_names: Vec<String>,
    path_attribute: Option<String>,
}

impl Declaration {
    /// The declared module's file, relative to the workspace, from the declaring file's path.
    fn file_path(&self, workspace: &Path, declaring_file: &Path) -> Option<PathBuf> {
        let directory = declaring_file.parent()?;
        if let Some(path_attribute) = &self.path_attribute {
            return Some(normalize(&directory.join(path_attribute)));
        }
        let file_name = declaring_file.file_name()?.to_str()?;
        let mut module_directory = directory.to_path_buf();
        if !matches!(file_name, "lib.rs" | "main.rs" | "mod.rs") {
            module_directory.push(declaring_file.file_stem()?);
        }
        for inline_name in &self.inline_names {
            module_directory.push(inline_name);
        }
        let flat = module_directory.join(format!("{}.rs", self.name));
        let nested = module_directory.join(&self.name).join("mod.rs");
        if workspace.join(&flat).exists() || !workspace.join(&nested).exists() {
            return Some(flat);
        }
        Some(nested)
    }
}

/// Removes `..` and `.` components lexically (`src/bin/x/../../a.rs` → `src/a.rs`).
fn normalize(path: &Path) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                normalized.pop();
            }
            std::path::Component::CurDir => {}
            other => normalized.push(other),
        }
    }
    normalized
}

/// One leaf of a `use` tree: the full path, and the name it binds (`None` for a glob).
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
}

/// Parses the `use` tree at `tok_idx` under `prefix`, leaving `tok_idx` after it.
fn parse_use_tree(
    tokens: &[Tok],
    tok_idx: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<UseLeaf>,
) {
    let mut path = prefix;
    loop {
        match tokens.get(*tok_idx) {
            Some(Tok::PathSep) => *tok_idx += 1,
            Some(Tok::Ident(segment)) => {
                path.push(segment.clone());
                *tok_idx += 1;
                if tokens.get(*tok_idx) == Some(&Tok::PathSep) {
                    *tok_idx += 1;
                    continue;
                }
                let mut name = path.last().cloned();
                if path.last().is_some_and(|last| last == "self") {
                    path.pop();
                    name = path.last().cloned();
                }
                if tokens.get(*tok_idx) == Some(&Tok::Ident("as".to_owned())) {
                    if let Some(Tok::Ident(alias)) = tokens.get(*tok_idx + 1) {
                        name = Some(alias.clone());
                    }
                    *tok_idx += 2;
                }
                out.push(UseLeaf { path, name });
                return;
            }
            Some(Tok::Punct('*')) => {
                *tok_idx += 1;
                out.push(UseLeaf { path, name: None });
                return;
            }
            Some(Tok::Punct('{')) => {
                *tok_idx += 1;
                while let Some(tok) = tokens.get(*tok_idx) {
                    match tok {
                        Tok::Punct('}') => {
                            *tok_idx += 1;
                            return;
                        }
                        Tok::Punct(',') => *tok_idx += 1,
                        _ => {
                            let before = *tok_idx;
                            parse_use_tree(tokens, tok_idx, path.clone(), out);
                            if *tok_idx == before {
                                *tok_idx += 1;
                            }
                        }
                    }
                }
                return;
            }
            _ => return,
        }
    }
}
