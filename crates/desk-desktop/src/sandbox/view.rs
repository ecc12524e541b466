//! The filesystem a sandbox shows of the host, per profile: broad (all of `/usr` and `/etc`
//! read-only, what the `generic` profile and profiles without a `[sandbox]` table get), or an
//! allowlist: the programs the desktop runs inside (the launcher's: `env`, Xvfb with
//! `xkbcomp`, openbox, the session and AT-SPI buses, the worker; then the profile's programs and
//! its app), the data paths it names, and the shared-library closure of every ELF file among
//! them, resolved the way the ELF loader does (`DT_NEEDED` through `DT_RUNPATH`/`DT_RPATH` with
//! `$ORIGIN`, then the `ld.so.conf` directories) plus the libraries the profile says its app
//! loads at run time (`libraries`). Nothing else of `/usr` or `/etc` is there: no shell, no
//! interpreter, no compiler, no browser unless a profile names one.
//!
//! Resolving reads ELF headers only (no `ldd`, no child process; see `elf.rs`) and is cached
//! per view for the life of the process, so only a broker's first start of a profile pays for
//! it. Over 400 lines because the profile's table, its check, the desktop's base list and the
//! resolver with its tests are one piece.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;

use super::elf;
use super::policy::SAFE_PATH;
use crate::error::BackendError;

/// A profile's `[sandbox]` table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewSpec {
    /// `allowlist` or `broad`.
    #[serde(default)]
    pub view: ViewKind,
    /// Programs the app runs (names on the sandbox's `PATH`, or absolute); the app's own
    /// command is always one.
    #[serde(default)]
    pub programs: Vec<String>,
    /// Files and directories shown read-only (the app's data, plugins, fonts...); ELF files
    /// below them bring their library closure.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// Library names (sonames) the app loads at run time with `dlopen`.
    #[serde(default)]
    pub libraries: Vec<String>,
    /// Directories of the app's home (relative, plain names) the sandbox shows read-only: what
    /// the profile's `home_files` seed there and nothing the app can add (FreeCAD's module and
    /// macro directories, which it runs code from at its next start). Allowlist views only.
    #[serde(default)]
    pub read_only_home_dirs: Vec<PathBuf>,
}

impl ViewSpec {
    /// The view of a profile with `spec` whose command starts with `program`: the allowlist with
    /// the program added, or broad.
    pub fn view_for(spec: Option<&ViewSpec>, program: Option<&String>) -> FsView {
        match spec {
            Some(spec) if spec.view == ViewKind::Allowlist => {
                let mut spec = spec.clone();
                if let Some(program) = program
                    && !program.contains('{')
                    && !spec.programs.contains(program)
                {
                    spec.programs.insert(0, program.clone());
                }
                FsView::Allowlist(spec)
            }
            _ => FsView::Broad,
        }
    }

    /// Checks a profile's `[sandbox]` table: lists only with `view = "allowlist"`, absolute
    /// normal paths, plain library names.
    pub fn check(&self) -> Result<(), String> {
        let view = self;
        let listed = !(view.programs.is_empty()
            && view.paths.is_empty()
            && view.libraries.is_empty()
            && view.read_only_home_dirs.is_empty());
        if view.view == ViewKind::Broad && listed {
            return Err(
                "sandbox.programs, paths, libraries and read_only_home_dirs need view = \
                 \"allowlist\""
                    .to_string(),
            );
        }
        for dir in &view.read_only_home_dirs {
            let plain = dir
                .components()
                .all(|part| matches!(part, std::path::Component::Normal(_)));
            if !plain || dir.as_os_str().is_empty() {
                return Err(format!(
                    "sandbox.read_only_home_dirs are relative paths of plain names inside the \
                     home: {}",
                    dir.display()
                ));
            }
        }
        if view.programs.iter().any(|program| {
            program.is_empty() || (program.contains('/') && !Path::new(program).is_absolute())
        }) {
            return Err("sandbox.programs are plain names or absolute paths".to_string());
        }
        for path in &view.paths {
            let normal = path
                .components()
                .skip(1)
                .all(|part| matches!(part, std::path::Component::Normal(_)));
            if !path.is_absolute() || !normal || path.parent().is_none() {
                return Err(format!(
                    "sandbox.paths must be absolute, without `..`, and not `/`: {}",
                    path.display()
                ));
            }
        }
        if view
            .libraries
            .iter()
            .any(|name| name.is_empty() || name.contains('/'))
        {
            return Err("sandbox.libraries are plain library names (sonames)".to_string());
        }
        Ok(())
    }
}

/// Which filesystem view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewKind {
    /// All of the host's `/usr` and `/etc`, read-only.
    #[default]
    Broad,
    /// Only what the desktop and the profile name, with their library closure.
    Allowlist,
}

/// The view a sandbox is built with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum FsView {
    /// All of `/usr` and `/etc`, read-only.
    #[default]
    Broad,
    /// The allowlist: the profile's spec with its app's program added.
    Allowlist(ViewSpec),
}

impl FsView {
    /// The home directories shown read-only (the allowlist's `read_only_home_dirs`).
    pub fn read_only_home_dirs(&self) -> &[PathBuf] {
        match self {
            FsView::Broad => &[],
            FsView::Allowlist(spec) => &spec.read_only_home_dirs,
        }
    }

    /// `broad` or `allowlist`.
    pub fn name(&self) -> &'static str {
        match self {
            FsView::Broad => "broad",
            FsView::Allowlist(_) => "allowlist",
        }
    }
}

/// What every allowlisted desktop runs inside besides its worker and app (see
/// `launcher/start.rs` and `launcher/bus.rs`): `env` runs each program in its directory,
/// Xvfb compiles its keymap with `xkbcomp`.
const DESKTOP_PROGRAMS: [&str; 7] = [
    "env",
    "Xvfb",
    "xkbcomp",
    "openbox",
    "dbus-daemon",
    "/usr/libexec/at-spi-bus-launcher",
    "/usr/libexec/at-spi2-registryd",
];

/// Where the X server looks for a shell: linked to the worker program (see its `xkbcomp.rs`).
pub(crate) const SH_STAND_IN: &str = "/usr/bin/sh";

/// What those programs and any toolkit read: keymaps, locales, bus configurations, the window
/// manager's theme, fonts, cursors, the loader's cache. Missing ones are skipped.
const DESKTOP_PATHS: [&str; 19] = [
    "/etc/ld.so.cache",
    "/etc/fonts",
    "/etc/dbus-1",
    "/etc/xdg/openbox",
    "/usr/share/X11/xkb",
    "/usr/share/X11/locale",
    "/usr/share/dbus-1",
    "/usr/share/defaults/at-spi2",
    "/usr/share/glib-2.0/schemas",
    "/usr/lib/x86_64-linux-gnu/gio/modules",
    "/usr/share/themes",
    "/usr/share/fonts",
    "/usr/share/fontconfig",
    "/usr/share/icons",
    "/usr/share/mime",
    "/usr/lib/locale/C.utf8",
    "/usr/lib/x86_64-linux-gnu/gconv",
    "/usr/lib/xorg",
    "/usr/share/zoneinfo/Etc/UTC",
];

/// What an allowlisted sandbox shows of the host: `binds` read-only at the same place
/// (directories first, outermost first, then files not below one of them), and `links`, the
/// symbolic links on the way to them (`/usr/bin/freecad` → `/etc/alternatives/freecad` → ...),
/// made inside as they are on the host.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resolved {
    /// Paths to bind, in bind order.
    pub binds: Vec<PathBuf>,
    /// `(link, target)`: a symbolic link at `link` reading `target`.
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// Resolves `spec` (cached per spec and `worker` for the process's life).
pub fn resolve(spec: &ViewSpec, worker: &Path) -> Result<Arc<Resolved>, BackendError> {
    type Cache = Mutex<HashMap<(ViewSpec, PathBuf), Arc<Resolved>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (spec.clone(), worker.to_path_buf());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().ok().and_then(|map| map.get(&key).cloned()) {
        return Ok(found);
    }
    let started = std::time::Instant::now();
    let resolved = Arc::new(resolve_with(
        &DESKTOP_PROGRAMS,
        &DESKTOP_PATHS,
        spec,
        worker,
    )?);
    tracing::info!(
        binds = resolved.binds.len(),
        links = resolved.links.len(),
        ms = started.elapsed().as_millis() as u64,
        "sandbox allowlist resolved"
    );
    if let Ok(mut map) = cache.lock() {
        map.insert(key, resolved.clone());
    }
    Ok(resolved)
}

/// The allowlist being gathered.
#[derive(Default)]
struct Gather {
    files: BTreeSet<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    links: BTreeSet<(PathBuf, PathBuf)>,
    elves: Vec<PathBuf>,
}

impl Gather {
    /// Adds the host path `path` (a file or a directory), the links on the way to it, and
    /// (for a directory) every ELF file and outward link below it.
    fn add(&mut self, path: &Path) {
        let (links, real) = follow(path);
        self.links.extend(links);
        let Ok(meta) = std::fs::metadata(&real) else {
            return;
        };
        if meta.is_dir() {
            if self.dirs.insert(real.clone()) {
                self.walk(&real, &real);
            }
        } else if meta.is_file() {
            self.files.insert(real.clone());
            self.elves.push(real);
        }
    }

    /// Walks `dir`, below the bound directory `top`.
    fn walk(&mut self, dir: &Path, top: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                if let Ok(target) = std::fs::canonicalize(&path)
                    && !target.starts_with(top)
                {
                    self.add(&path);
                }
            } else if kind.is_dir() {
                self.walk(&path, top);
            } else if kind.is_file() && elf::is_elf(&path) {
                self.elves.push(path);
            }
        }
    }

    fn into_resolved(self) -> Resolved {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for dir in &self.dirs {
            // Sorted: an outer directory comes before the ones below it.
            if !dirs.iter().any(|outer| dir.starts_with(outer)) {
                dirs.push(dir.clone());
            }
        }
        let below = |path: &Path| dirs.iter().any(|dir| path.starts_with(dir));
        let links = self
            .links
            .into_iter()
            .filter(|(link, _)| !below(link))
            .collect();
        let files: Vec<PathBuf> = self.files.into_iter().filter(|file| !below(file)).collect();
        let mut binds = dirs.clone();
        binds.extend(files);
        Resolved { binds, links }
    }
}

/// The allowlist of `base_programs` and `base_paths` (the desktop's), `spec` and `worker`.
fn resolve_with(
    base_programs: &[&str],
    base_paths: &[&str],
    spec: &ViewSpec,
    worker: &Path,
) -> Result<Resolved, BackendError> {
    let search = library_dirs();
    let mut gather = Gather::default();
    let programs = base_programs
        .iter()
        .map(|name| name.to_string())
        .chain(spec.programs.iter().cloned());
    for program in programs {
        let path = find_program(&program).ok_or_else(|| {
            BackendError::SandboxUnavailable(format!(
                "the sandbox's allowlist names {program:?}, which is not installed"
            ))
        })?;
        gather.add(&path);
    }
    gather.elves.push(worker.to_path_buf());
    // Xvfb compiles its keymap through `/bin/sh -c xkbcomp ...`: `sh` is the worker program,
    // which runs that and refuses anything else. No shell is ever shown.
    gather
        .links
        .insert((PathBuf::from(SH_STAND_IN), worker.to_path_buf()));
    for path in base_paths
        .iter()
        .map(PathBuf::from)
        .chain(spec.paths.clone())
    {
        if path.exists() {
            gather.add(&path);
        }
    }
    for name in &spec.libraries {
        if let Some(found) = find_library(name, &[], &search) {
            gather.files.insert(at_real_dir(&found));
            gather.elves.push(found);
        }
    }
    // The closure over every ELF file met; a library is bound under the name the loader
    // opens (its soname link), with the file's contents.
    let mut seen = BTreeSet::new();
    while let Some(path) = gather.elves.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let Some(deps) = elf::deps(&path) else {
            continue;
        };
        let origin = std::fs::canonicalize(&path)
            .ok()
            .and_then(|real| real.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        if let Some(interp) = deps.interp {
            gather.files.insert(at_real_dir(&interp));
        }
        let runpath: Vec<PathBuf> = deps
            .runpath
            .iter()
            .flat_map(|list| list.split(':'))
            .map(|dir| PathBuf::from(dir.replace("$ORIGIN", &origin.display().to_string())))
            .collect();
        for name in deps.needed {
            if let Some(found) = find_library(&name, &runpath, &search) {
                gather.files.insert(at_real_dir(&found));
                gather.elves.push(found);
            }
        }
    }
    Ok(gather.into_resolved())
}

/// The symbolic links met on the way to `path` (each as `(link, what it reads)`, directories
/// resolved) and the real path at the end.
fn follow(path: &Path) -> (Vec<(PathBuf, PathBuf)>, PathBuf) {
    let mut links = Vec::new();
    let mut current = at_real_dir(path);
    for _ in 0..16 {
        let Ok(target) = std::fs::read_link(&current) else {
            break;
        };
        let next = match current.parent() {
            Some(dir) if target.is_relative() => dir.join(&target),
            _ => target.clone(),
        };
        links.push((current.clone(), target));
        current = at_real_dir(&next);
    }
    (links, current)
}

/// `path` with its directory's symbolic links resolved (the file name kept: a library's soname
/// link is what the loader opens).
fn at_real_dir(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|dir| dir.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

fn find_program(program: &str) -> Option<PathBuf> {
    let is_file = |path: &Path| path.is_file();
    if program.contains('/') {
        return Some(PathBuf::from(program)).filter(|path| is_file(path));
    }
    SAFE_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|path| is_file(path))
}

/// The directories the loader searches after a file's own run path: `/etc/ld.so.conf`'s
/// (one level of `include`), then the system's defaults.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let read_conf = |text: &str, dirs: &mut Vec<PathBuf>| {
        for line in text.lines().map(str::trim) {
            if line.starts_with('/') {
                dirs.push(PathBuf::from(line));
            }
        }
    };
    if let Ok(entries) = std::fs::read_dir("/etc/ld.so.conf.d") {
        let mut confs: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
        confs.sort();
        for conf in confs {
            if let Ok(text) = std::fs::read_to_string(conf) {
                read_conf(&text, &mut dirs);
            }
        }
    }
    for dir in [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib64",
    ] {
        dirs.push(PathBuf::from(dir));
    }
    dirs.extend([PathBuf::from("/lib"), PathBuf::from("/usr/lib")]);
    dirs
}

fn find_library(name: &str, runpath: &[PathBuf], system: &[PathBuf]) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name)).filter(|path| path.is_file());
    }
    runpath
        .iter()
        .chain(system)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_home_dirs_are_plain_relative_paths_of_an_allowlist() {
        let spec = |view: ViewKind, dir: &str| ViewSpec {
            view,
            read_only_home_dirs: vec![PathBuf::from(dir)],
            ..ViewSpec::default()
        };
        assert!(
            spec(ViewKind::Allowlist, ".local/share/FreeCAD/Mod")
                .check()
                .is_ok()
        );
        for bad in ["/abs", "../up", "a/../b", "./a", ""] {
            assert!(spec(ViewKind::Allowlist, bad).check().is_err(), "{bad}");
        }
        assert!(spec(ViewKind::Broad, "Mod").check().is_err());
        let view = ViewSpec::view_for(Some(&spec(ViewKind::Allowlist, "Mod")), None);
        assert_eq!(view.read_only_home_dirs(), [PathBuf::from("Mod")]);
        assert!(FsView::Broad.read_only_home_dirs().is_empty());
    }

    #[test]
    fn the_closure_of_env_holds_the_loader_and_libc_and_no_shell() {
        let resolved = resolve_with(
            &["env"],
            &[],
            &ViewSpec::default(),
            Path::new("/usr/bin/env"),
        )
        .unwrap();
        let names: Vec<String> = resolved
            .binds
            .iter()
            .filter_map(|path| path.file_name()?.to_str().map(str::to_string))
            .collect();
        assert!(
            names.iter().any(|name| name.starts_with("libc.so")),
            "{names:?}"
        );
        assert!(
            names.iter().any(|name| name.starts_with("ld-linux")),
            "{names:?}"
        );
        for shell in ["sh", "bash", "dash", "python3"] {
            assert!(
                !names.iter().any(|name| name == shell),
                "{shell} in {names:?}"
            );
        }
        // Binds never go through a symbolic link on the way.
        for bind in &resolved.binds {
            let dir = bind.parent().unwrap();
            assert_eq!(
                std::fs::canonicalize(dir).unwrap(),
                dir,
                "{}",
                bind.display()
            );
        }
    }

    #[test]
    fn a_missing_program_is_refused_by_name() {
        let spec = ViewSpec {
            view: ViewKind::Allowlist,
            programs: vec!["no-such-program-42".to_string()],
            ..ViewSpec::default()
        };
        let error = resolve_with(&["env"], &[], &spec, Path::new("/usr/bin/env")).unwrap_err();
        assert!(error.to_string().contains("no-such-program-42"), "{error}");
    }
}
