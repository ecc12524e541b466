//! Unit tests of the census over made-up process rows (`Seen`): what may run in a sandbox and
//! what is refused.

use super::*;
use crate::layout::SessionDir;

fn host(program: &str) -> String {
    resolve_program(program)
        .unwrap_or_else(|| panic!("{program} is not on this host"))
        .display()
        .to_string()
}

fn seen(pid: u32, ppid: u32, exe: &str) -> Seen {
    Seen {
        pid,
        ppid,
        start_ticks: u64::from(pid),
        exe: Some(exe.to_string()),
        identity: ExeIdentity::Host,
    }
}

const APP: &str = "/opt/app/bin/app";
const HELPER: &str = "/opt/app/bin/helper";
const WORKER: &str = "/opt/desk/deskbroker-worker";

/// A sandbox as the launcher leaves it: holder 1 (its program `holder`), the worker's
/// wrapper 10 and entry 11, the app's wrapper 20 and entry 21.
fn desktop(holder: &str) -> Snapshot {
    let wrappers = [
        (
            10,
            Wrapper {
                role: "worker".to_string(),
                program: Some(WORKER.to_string()),
            },
        ),
        (
            20,
            Wrapper {
                role: "app".to_string(),
                program: Some(APP.to_string()),
            },
        ),
    ]
    .into_iter()
    .collect();
    Snapshot {
        holder: 1,
        root: None,
        wrappers,
        launch_parents: Default::default(),
        wrapper_died: false,
        processes: vec![seen(1, 0, holder), seen(11, 10, WORKER), seen(21, 20, APP)],
    }
}

#[test]
fn a_desktop_program_of_an_unrecorded_launch_wrapper_is_the_desktops() {
    // Around a restart or stop, a window manager whose `nsenter` wrapper (pid 30) is not in
    // processes.json: the desktop's; the app or any other program there stays an intruder.
    let openbox = host("openbox");
    if !std::path::Path::new(&openbox).exists() {
        return;
    }
    let mut snapshot = desktop(WORKER);
    snapshot.processes.push(seen(31, 30, &openbox));
    snapshot.processes.push(seen(33, 32, &host("sleep")));
    assert_eq!(whys(&snapshot).len(), 2, "unknown parents: both intruders");
    snapshot.launch_parents = [30, 32].into_iter().collect();
    let whys = whys(&snapshot);
    assert_eq!(whys.len(), 1, "{whys:?}");
    assert_eq!(whys[0].0, 33);
}

#[test]
fn an_orphan_of_a_dead_wrapper_is_left_to_the_liveness_check() {
    // The worker's wrapper (pid 10) died: its program is parented by the host's init.
    let mut snapshot = desktop(WORKER);
    snapshot.wrappers.remove(&10);
    snapshot.processes[1].ppid = 999;
    assert_eq!(
        whys(&snapshot).len(),
        1,
        "with every wrapper alive, an intruder"
    );
    snapshot.wrapper_died = true;
    assert_eq!(whys(&snapshot), vec![]);
}

fn rules() -> CensusRules {
    CensusRules {
        app: vec![
            AllowedExecutable {
                path: APP.to_string(),
                max: 1,
            },
            AllowedExecutable {
                path: HELPER.to_string(),
                max: 2,
            },
        ],
    }
}

fn whys(snapshot: &Snapshot) -> Vec<(u32, String)> {
    check(snapshot, &rules())
        .into_iter()
        .map(|violation| (violation.pid, violation.why))
        .collect()
}

#[test]
fn the_desktop_and_the_apps_allowed_helpers_pass() {
    let mut snapshot = desktop(WORKER);
    snapshot.processes.push(seen(22, 21, HELPER));
    snapshot.processes.push(seen(23, 22, HELPER));
    assert_eq!(whys(&snapshot), vec![]);
}

#[test]
fn a_shell_or_interpreter_under_the_app_is_named_with_its_parent() {
    let mut snapshot = desktop(WORKER);
    snapshot.processes.push(seen(30, 21, &host("sh")));
    snapshot.processes.push(seen(31, 30, "/usr/bin/python3"));
    let violations = check(&snapshot, &rules());
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert_eq!(violations[0].pid, 30);
    assert_eq!(violations[0].exe, host("sh"));
    assert_eq!(violations[0].parent_pid, 21);
    assert_eq!(violations[0].parent_exe.as_deref(), Some(APP));
    assert!(violations[0].why.contains("profile does not allow"));
    // Its child is refused too (its parent is no allowed process).
    assert_eq!(violations[1].pid, 31);
}

#[test]
fn a_second_app_instance_is_refused_from_the_newest_on() {
    let mut snapshot = desktop(WORKER);
    snapshot.processes.push(seen(40, 21, APP));
    assert_eq!(
        whys(&snapshot),
        vec![(40, format!("2 instances of {APP} run at once (at most 1)"))]
    );
    // Helpers up to their max (2) pass, a third does not.
    let mut snapshot = desktop(WORKER);
    for pid in [41, 42, 43] {
        snapshot.processes.push(seen(pid, 21, HELPER));
    }
    let refused: Vec<u32> = whys(&snapshot).into_iter().map(|(pid, _)| pid).collect();
    assert_eq!(refused, vec![43]);
}

#[test]
fn a_process_entered_from_outside_by_no_recorded_wrapper_is_refused() {
    let mut snapshot = desktop(WORKER);
    snapshot.processes.push(seen(50, 999, &host("sleep")));
    let violations = whys(&snapshot);
    assert_eq!(violations.len(), 1);
    assert!(violations[0].1.contains("from outside"), "{violations:?}");
}

#[test]
fn an_entry_may_pass_through_nsenter_and_env_but_must_run_its_program() {
    for stage in ["nsenter", "env"] {
        let mut snapshot = desktop(WORKER);
        snapshot.processes[1] = seen(11, 10, &host(stage));
        assert_eq!(whys(&snapshot), vec![], "{stage}");
    }
    let mut snapshot = desktop(WORKER);
    snapshot.processes[1] = seen(11, 10, &host("sh"));
    let violations = whys(&snapshot);
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0].1.contains("another program"),
        "{violations:?}"
    );
    // The app's entry runs only an allowed program.
    let mut snapshot = desktop(WORKER);
    snapshot.processes[2] = seen(21, 20, "/usr/bin/python3");
    assert_eq!(whys(&snapshot).len(), 1);
}

#[test]
fn a_program_that_is_not_the_hosts_file_is_refused_but_a_replaced_entry_is_not() {
    let mut snapshot = desktop(WORKER);
    let mut helper = seen(22, 21, HELPER);
    helper.identity = ExeIdentity::Foreign;
    snapshot.processes.push(helper);
    let violations = whys(&snapshot);
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0].1.contains("not the host's file"),
        "{violations:?}"
    );
    // The worker's binary rebuilt on the host after it started: still the worker.
    let mut snapshot = desktop(WORKER);
    snapshot.processes[1].identity = ExeIdentity::Deleted;
    assert_eq!(whys(&snapshot), vec![]);
    let mut snapshot = desktop(WORKER);
    snapshot.processes[1].identity = ExeIdentity::Foreign;
    assert_eq!(whys(&snapshot).len(), 1);
}

#[test]
fn the_holder_is_allowed_by_pid_and_runs_nothing() {
    // A child of the holder (or an orphan it adopted) is refused, whatever the holder runs.
    let sleep = host("sleep");
    for holder in [WORKER.to_string(), host("sh")] {
        let mut snapshot = desktop(&holder);
        snapshot.processes.push(seen(60, 1, &sleep));
        assert_eq!(whys(&snapshot).len(), 1, "under {holder}");
    }
    // Any holder adopts the AT-SPI registry the accessibility bus daemonizes, once.
    let registry = "/usr/libexec/at-spi2-registryd";
    if std::path::Path::new(registry).exists() {
        let mut snapshot = desktop(WORKER);
        snapshot.processes.push(seen(63, 1, registry));
        assert_eq!(whys(&snapshot), vec![]);
        snapshot.processes.push(seen(64, 1, registry));
        assert_eq!(whys(&snapshot).len(), 1);
    }
    // A shell holder still adopts no interpreter.
    let mut snapshot = desktop(&host("sh"));
    snapshot.processes.push(seen(61, 1, "/usr/bin/python3"));
    assert_eq!(whys(&snapshot).len(), 1);
    // Any other process running the holder's program is not the holder.
    let mut snapshot = desktop(&host("sh"));
    snapshot.processes.push(seen(62, 21, &host("sh")));
    assert_eq!(whys(&snapshot).len(), 1);
}

#[test]
fn zombies_and_vanished_processes_are_not_counted() {
    let mut snapshot = desktop(WORKER);
    let mut zombie = seen(70, 21, "/usr/bin/python3");
    zombie.exe = None;
    snapshot.processes.push(zombie);
    assert_eq!(whys(&snapshot), vec![]);
}

#[test]
fn names_resolve_inside_the_sandboxs_root_and_rules_round_trip() {
    // A root of our own: `bin` -> `usr/bin`, an absolute link resolved inside the root.
    let root = tempfile::tempdir().unwrap();
    let usr_bin = root.path().join("usr/bin");
    std::fs::create_dir_all(&usr_bin).unwrap();
    std::fs::write(usr_bin.join("dash"), b"").unwrap();
    std::os::unix::fs::symlink("dash", usr_bin.join("sh")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/dash", usr_bin.join("shell")).unwrap();
    std::os::unix::fs::symlink("usr/bin", root.path().join("bin")).unwrap();
    let inside = |program: &str| resolve_in(Some(root.path()), program);
    assert_eq!(inside("sh").as_deref(), Some("/usr/bin/dash"));
    assert_eq!(inside("/bin/shell").as_deref(), Some("/usr/bin/dash"));
    assert_eq!(inside("/bin/../bin/sh").as_deref(), Some("/usr/bin/dash"));
    assert_eq!(inside("python3"), None, "not in this root");
    std::os::unix::fs::symlink("loop", usr_bin.join("loop")).unwrap();
    assert_eq!(inside("loop"), None);

    let rules = CensusRules {
        app: vec![AllowedExecutable {
            path: "sh".to_string(),
            max: 1,
        }],
    };
    let dir = tempfile::tempdir().unwrap();
    let session = SessionDir::at(dir.path());
    assert_eq!(CensusRules::read(&session), None);
    rules.write(&session).unwrap();
    assert_eq!(CensusRules::read(&session), Some(rules));
}

#[test]
fn profiles_name_their_allowed_executables_or_default_to_their_command() {
    let profile = |extra: &str| {
        let text = format!(
            "name = \"p\"\ncommand = [\"sh\", \"{{attempt}}\"]\n{extra}\n\
             [attempt]\nfilename = \"a.txt\"\n[window]\n"
        );
        crate::profile::AppProfile::from_toml("p", &text)
    };
    let default = CensusRules::for_profile(&profile("").unwrap());
    assert_eq!(
        default.app,
        vec![AllowedExecutable {
            path: "sh".to_string(),
            max: 1
        }]
    );
    let listed = profile("allowed_executables = [{ path = \"sleep\", max = 3 }]").unwrap();
    let rules = CensusRules::for_profile(&listed);
    assert_eq!(
        rules.app,
        vec![AllowedExecutable {
            path: "sleep".to_string(),
            max: 3
        }]
    );
    for bad in [
        "allowed_executables = [{ path = \"sleep\", max = 0 }]",
        "allowed_executables = [{ path = \"bin/sleep\" }]",
        "allowed_executables = [{ path = \"/usr/../bin/sh\" }]",
        "allowed_executables = [{ path = \"\" }]",
        "allowed_executables = [{ path = \"sh\", extra = 1 }]",
    ] {
        assert!(profile(bad).is_err(), "{bad}");
    }
    // The built-in app profiles list their app alone.
    let builtin = crate::profile::ProfileSet::builtin().unwrap();
    for name in ["librecad", "freecad"] {
        let allowed = &builtin.get(name).unwrap().allowed_executables;
        assert_eq!(allowed.len(), 1, "{name}");
        assert_eq!(allowed[0].path, name);
    }
}

#[test]
fn the_accessibility_bus_forking_before_it_execs_is_the_desktops_once() {
    // at-spi-bus-launcher (a desktop wrapper's entry) forks before it execs dbus-daemon; under
    // load the fork is seen still running the launcher. One such fork passes, a second does not,
    // and a fork of the launcher running anything else (a shell) is refused.
    let launcher = "/usr/libexec/at-spi-bus-launcher";
    if !std::path::Path::new(launcher).exists() {
        return;
    }
    let mut snapshot = desktop(WORKER);
    snapshot.wrappers.insert(
        40,
        Wrapper {
            role: "accessibility bus".to_string(),
            program: Some(launcher.to_string()),
        },
    );
    snapshot.processes.push(seen(41, 40, launcher));
    snapshot.processes.push(seen(42, 41, launcher));
    assert_eq!(whys(&snapshot), vec![]);
    snapshot.processes.push(seen(43, 41, launcher));
    assert_eq!(whys(&snapshot).len(), 1, "{:?}", whys(&snapshot));
    snapshot.processes.pop();
    snapshot.processes.push(seen(44, 41, &host("sh")));
    assert_eq!(whys(&snapshot).len(), 1);
}

#[test]
fn the_worker_confining_the_apps_launch_is_a_stage_of_the_app_alone() {
    // `deskbroker-worker confine` runs for an instant between `env` and the app under the app's
    // wrapper; the worker's program under the app's own tree is refused.
    let mut snapshot = desktop(WORKER);
    snapshot.processes.retain(|seen| seen.pid != 21);
    snapshot.processes.push(seen(21, 20, WORKER));
    assert_eq!(whys(&snapshot), vec![]);
    snapshot.processes.retain(|seen| seen.pid != 21);
    snapshot.processes.push(seen(21, 20, APP));
    snapshot.processes.push(seen(22, 21, WORKER));
    assert_eq!(whys(&snapshot).len(), 1);
}
