//! The app's launch confined to the programs its profile allows: with split identities (a root
//! broker) the app's entry runs `deskbroker-worker confine` inside the sandbox (see its
//! `confine.rs`) after `nsenter` and `env`, as the app's uid: a Landlock domain in which
//! `execve` reaches only the app's allowed executables (the census's rules, `census.json`) and
//! their interpreters, then the app. The census still watches what runs; this makes the kernel
//! refuse what it could only see afterwards (a shell run for a few milliseconds). (Entered on
//! the host instead, the domain would also forbid `nsenter` to open the holder's namespaces:
//! Landlock denies a confined process ptrace-mode access to processes outside its domain.)
//!
//! With one identity (a broker that is not root) the app is not confined this way (see
//! `docs/security.md`).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Role, Sandbox};
use crate::census::{below, resolve_in};
use crate::error::BackendError;

impl Sandbox {
    /// [`Sandbox::command_as`] for the app, confined (split identities) to executing `allowed`
    /// (program names or paths, as the profile's `allowed_executables` name them) and `argv[0]`.
    pub fn app_command(
        &self,
        argv: &[String],
        cwd: &Path,
        env: &[(String, String)],
        allowed: &[String],
    ) -> Result<Command, BackendError> {
        if self.app.is_none() {
            return Ok(self.command_as(Role::App, argv, cwd, env));
        }
        let Some(worker) = &self.holder else {
            return Err(BackendError::SandboxUnavailable(
                "the sandbox record names no worker program to confine the app with".to_string(),
            ));
        };
        let root = self.root_from_host();
        let mut files = Vec::new();
        for program in allowed.iter().chain(argv.first()) {
            let Some(path) = resolve_in(Some(&root), program) else {
                return Err(BackendError::DesktopFailed(format!(
                    "the allowed program {program} is not a file inside the desktop's sandbox"
                )));
            };
            add_with_interpreter(&mut files, PathBuf::from(path), &root);
        }
        let mut confined = vec![worker.display().to_string(), "confine".to_string()];
        for file in &files {
            confined.push("--exec".to_string());
            confined.push(file.display().to_string());
        }
        confined.push("--".to_string());
        confined.extend(argv.iter().cloned());
        Ok(self.command_as(Role::App, &confined, cwd, env))
    }
}

/// Adds `file` (a path inside the sandbox) and, when it is ELF, its interpreter (or, for a `#!`
/// script, its interpreter and that one's), each read through `root` (the sandbox's root as the
/// host reaches it).
fn add_with_interpreter(files: &mut Vec<PathBuf>, file: PathBuf, root: &Path) {
    let mut next = Some(file);
    for _ in 0..4 {
        let Some(file) = next.take() else {
            break;
        };
        let interpreter = interpreter_of(&below(root, &file));
        if !files.contains(&file) {
            files.push(file);
        }
        next = interpreter
            .and_then(|path| resolve_in(Some(root), &path.to_string_lossy()))
            .map(PathBuf::from);
    }
}

/// The program the kernel runs to load `file`: its ELF `PT_INTERP`, or a script's `#!` line.
fn interpreter_of(file: &Path) -> Option<PathBuf> {
    if super::elf::is_elf(file) {
        return super::elf::deps(file).and_then(|deps| deps.interp);
    }
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(file).ok()?, &mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|byte| *byte == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?.trim();
    let program = text.split_whitespace().next()?;
    program.starts_with('/').then(|| PathBuf::from(program))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_programs_bring_their_loader_and_scripts_their_interpreter() {
        let mut files = Vec::new();
        let sleep = crate::census::resolve_program("sleep").unwrap_or_else(|| panic!("no sleep"));
        add_with_interpreter(&mut files, sleep.clone(), Path::new("/"));
        assert_eq!(files[0], sleep);
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(files[1].to_string_lossy().contains("ld-linux"), "{files:?}");
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let script = dir.path().join("run");
        std::fs::write(&script, "#!/bin/sh -e\necho\n").unwrap_or_else(|error| panic!("{error}"));
        let mut files = Vec::new();
        add_with_interpreter(&mut files, script.clone(), Path::new("/"));
        assert_eq!(files[0], script);
        assert!(files.len() >= 2, "{files:?}");
        assert!(files[1].to_string_lossy().ends_with("sh"), "{files:?}");
    }
}
