//! The module graph of one crate target and its cycles: every path a file names is resolved over
//! the module tree (through `use` imports and re-exports, to the file that defines the item) and
//! becomes an edge from that file to the target file; cycles are the strongly connected
//! components (Tarjan) of two or more files.

use std::collections::BTreeSet;

use crate::modules::Tree;

/// Where a name leads: a module (to walk further), the file of an item, or another crate
/// (through an import of it: `use serde_json;`, `pub use schemars;`).
#[derive(Clone, Copy)]
enum Target {
    Module(usize),
    File(usize),
    External,
}

/// How many imports a resolution follows before it gives up (re-export chains are short).
const MAX_IMPORT_DEPTH: usize = 16;

impl Tree {
    /// The file-to-file edges: for each path named, from its file to the file it resolves to.
    /// Paths into other crates, and a file's paths into itself, give no edge.
    pub(crate) fn edges(&self) -> BTreeSet<(usize, usize)> {
        let mut edges = BTreeSet::new();
        for reference in &self.references {
            let Some(from) = self.modules.get(reference.scope).map(|module| module.file) else {
                continue;
            };
            let to = match self.resolve(reference.scope, &reference.segments, 0) {
                Some(Target::File(file)) => file,
                Some(Target::Module(module_idx)) => match self.modules.get(module_idx) {
                    Some(module) => module.file,
                    None => continue,
                },
                Some(Target::External) | None => continue,
            };
            if from != to {
                edges.insert((from, to));
            }
        }
        edges
    }

    /// Resolves `segments` written in module `scope`; `None` for a path outside this crate.
    fn resolve(&self, scope: usize, segments: &[String], depth: usize) -> Option<Target> {
        if depth > MAX_IMPORT_DEPTH {
            return None;
        }
        let (first, rest) = segments.split_first()?;
        let mut current = match first.as_str() {
            "crate" => 0,
            "self" => scope,
            "super" => self.modules.get(scope)?.parent?,
            name => match self.lookup(scope, name, depth)? {
                Target::Module(module_idx) => module_idx,
                file @ Target::File(_) => return Some(file),
                Target::External => return None,
            },
        };
        for segment in rest {
            if segment == "super" {
                current = self.modules.get(current)?.parent?;
                continue;
            }
            match self.lookup(current, segment, depth) {
                Some(Target::Module(module_idx)) => current = module_idx,
                Some(file @ Target::File(_)) => return Some(file),
                Some(Target::External) => return None,
                // A name the module neither defines nor imports (a variant, a macro's output):
                // the path still names this module.
                None => return Some(Target::File(self.modules.get(current)?.file)),
            }
        }
        Some(Target::Module(current))
    }

    /// What `name` means in `module`: a child module, an item it defines, or what an import
    /// (named, then glob) binds it to.
    fn lookup(&self, module_idx: usize, name: &str, depth: usize) -> Option<Target> {
        let module = self.modules.get(module_idx)?;
        if let Some(&child) = module.children.get(name) {
            return Some(Target::Module(child));
        }
        if let Some(&file) = module.items.get(name) {
            return Some(Target::File(file));
        }
        for (import_name, path) in &module.named_imports {
            if import_name == name {
                // An import resolves in the scope it is written in, which is this module; one
                // that leads nowhere in this crate imports another crate.
                let own_name = path.len() == 1;
                let target = if own_name {
                    None
                } else {
                    self.resolve(module_idx, path, depth + 1)
                };
                return Some(target.unwrap_or(Target::External));
            }
        }
        for path in &module.glob_imports {
            if let Some(Target::Module(source)) = self.resolve(module_idx, path, depth + 1)
                && source != module_idx
                && let Some(target) = self.lookup(source, name, depth + 1)
            {
                return Some(target);
            }
        }
        None
    }
}

/// The strongly connected components of two or more nodes of a graph of `n_nodes` nodes, each
/// sorted, in the order Tarjan's algorithm closes them.
pub(crate) fn cycles(n_nodes: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    let mut successors = vec![Vec::new(); n_nodes];
    for &(from, to) in edges {
        if let Some(list) = successors.get_mut(from) {
            list.push(to);
        }
    }
    let mut state = Tarjan {
        successors,
        index: vec![None; n_nodes],
        low_link: vec![0; n_nodes],
        on_stack: vec![false; n_nodes],
        stack: Vec::new(),
        next_index: 0,
        components: Vec::new(),
    };
    for node in 0..n_nodes {
        if state.index.get(node).is_some_and(Option::is_none) {
            state.visit(node);
        }
    }
    state.components
}

struct Tarjan {
    successors: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low_link: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next_index: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, node: usize) {
        self.set_index(node);
        let successors = self.successors.get(node).cloned().unwrap_or_default();
        for successor in successors {
            match self.index.get(successor).copied().flatten() {
                None => {
                    self.visit(successor);
                    let low = self.low(node).min(self.low(successor));
                    self.set_low(node, low);
                }
                Some(successor_index) if self.on_stack.get(successor).copied() == Some(true) => {
                    let low = self.low(node).min(successor_index);
                    self.set_low(node, low);
                }
                Some(_) => {}
            }
        }
        if self.index.get(node).copied().flatten() == Some(self.low(node)) {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                if let Some(flag) = self.on_stack.get_mut(member) {
                    *flag = false;
                }
                component.push(member);
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                self.components.push(component);
            }
        }
    }

    fn set_index(&mut self, node: usize) {
        if let Some(slot) = self.index.get_mut(node) {
            *slot = Some(self.next_index);
        }
        self.set_low(node, self.next_index);
        self.next_index += 1;
        self.stack.push(node);
        if let Some(flag) = self.on_stack.get_mut(node) {
            *flag = true;
        }
    }

    fn low(&self, node: usize) -> usize {
        self.low_link.get(node).copied().unwrap_or(0)
    }

    fn set_low(&mut self, node: usize, value: usize) {
        if let Some(slot) = self.low_link.get_mut(node) {
            *slot = value;
        }
    }
}
