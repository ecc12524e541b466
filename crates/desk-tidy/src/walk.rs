//! Reading the workspace's directories: every source file under `crates/*/src`, directories in
//! sorted order, and paths written with `/` whatever the platform.

use std::path::{Path, PathBuf};

use crate::error::TidyError;

/// Every `.rs` file under `<workspace>/crates/*/src`, relative to the workspace, sorted.
pub fn source_files(workspace: &Path) -> Result<Vec<String>, TidyError> {
    let mut files = Vec::new();
    for package_dir in read_dir_sorted(&workspace.join("crates"))? {
        let source_dir = package_dir.join("src");
        if source_dir.is_dir() {
            collect_rs_files(&source_dir, &mut files)?;
        }
    }
    let mut relative: Vec<String> = files
        .iter()
        .filter_map(|path| path.strip_prefix(workspace).ok())
        .map(display_path)
        .collect();
    relative.sort();
    Ok(relative)
}

fn collect_rs_files(directory: &Path, out: &mut Vec<PathBuf>) -> Result<(), TidyError> {
    for path in read_dir_sorted(directory)? {
        if path.is_dir() {
            collect_rs_files(&path, out)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

pub(crate) fn display_path(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

pub(crate) fn read_dir_sorted(directory: &Path) -> Result<Vec<PathBuf>, TidyError> {
    let read_error = |source| TidyError::Read {
        path: directory.to_path_buf(),
        source,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(directory).map_err(read_error)? {
        entries.push(entry.map_err(read_error)?.path());
    }
    entries.sort();
    Ok(entries)
}
