//! Defence in depth (issue 24 item 8): Python planted inside a live, sandboxed FreeCAD session,
//! running in FreeCAD's own process as the app's uid as if every GUI layer had failed, records
//! what it meets: no gold and nothing that can make gold (no file of the private path, the
//! broker's state or its full binary; the only `deskbroker*` program is the worker), no network
//! (only `lo`, connects to outside addresses fail, the broker's socket is not there), no worker
//! socket, no signal to the worker, the sandbox's pid 1, Xvfb or the window manager, no write
//! outside the policy's directories (the attempt directory, checked as the control; the
//! in-memory home reaches no host file); then it starts a second instance of its own program
//! and the census ends the session with a signed `prohibited_process` receipt naming it.
//!
//! The hook is a test profile, nothing in the broker: the test writes `freecad-planted.toml`
//! (the shipped `freecad` profile, lockdown included, plus one more home file, the module
//! `Mod/DeskPlanted/InitGui.py` that FreeCAD runs at start) into the `--profiles` directory of
//! the broker it starts. The shipped profiles carry no such module and no request can add a
//! profile (`docs/security.md`, "Defence in depth"). The module waits for `planted.start` in
//! the attempt directory (after the handoff), writes what it met to `planted.json` there (read
//! before the census destroys the workspace), and on `planted.go` forks itself (the view has no
//! shell).
//!
//! Over 400 lines: the planted module is Python text (about 200 lines) that only this one test
//! reads; kept beside the assertions on what it records.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use desk_client::ClientError;
use desk_contract::ErrorCode;
use serde_json::{Value, json};

use crate::freecad::freecad_available;
use crate::freecad_entry_paths::Driver;
use crate::support::{Broker, deskbroker, xvfb_available};

/// The planted module; `@CONFIG@` becomes the test's JSON (host paths, a nonce).
const PLANTED: &str = r#"
# Planted by crates/deskbroker/tests/it/freecad_planted.rs: a test profile only.


def _desk_planted():
    import errno
    import json
    import os
    import signal
    import socket
    import sys
    import time
    import traceback

    import FreeCAD
    from PySide2 import QtCore

    config = json.loads(r"""@CONFIG@""")
    state = {"phase": "wait"}

    def errname(error):
        if error.errno:
            return errno.errorcode.get(error.errno, "errno %d" % error.errno)
        return type(error).__name__

    def attempt(out, name, fn):
        try:
            value = fn()
            out[name] = "ok" if value is None else value
        except OSError as error:
            out[name] = errname(error)
        except Exception as error:
            out[name] = "%s: %s" % (type(error).__name__, error)

    def attempt_dir():
        document = FreeCAD.ActiveDocument
        if document is None or not document.FileName:
            return None
        return os.path.dirname(document.FileName)

    def visible():
        # Every name the sandbox shows (but /proc, /sys, /dev), the files flagged by word.
        flagged = {"deskbroker": [], "gold": [], "evidence": [], "key": []}
        count = 0
        for root, dirs, files in os.walk("/"):
            if root == "/":
                dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
            count += len(dirs) + len(files)
            for name in files:
                for word in ("deskbroker", "gold", "evidence"):
                    if word in name.lower():
                        flagged[word].append(os.path.join(root, name))
                for word in ("signing.key", "policy.key", "watchdog.key"):
                    if name == word:
                        flagged["key"].append(os.path.join(root, name))
        flagged["names"] = count
        return flagged

    def connect(family, kind, address):
        s = socket.socket(family, kind)
        s.settimeout(3)
        try:
            s.connect(address)
        finally:
            s.close()

    def write(path):
        with open(path, "w") as f:
            f.write("planted")

    def targets():
        found = {"holder": 1}
        roles = {"Xvfb": "xvfb", "openbox": "window_manager", "deskbroker-work": "worker"}
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or entry == "1":
                continue
            try:
                with open("/proc/%s/comm" % entry) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if comm in roles:
                found[roles[comm]] = int(entry)
        return found

    def probe(attempt_path):
        out = {"uid": os.getuid(), "euid": os.geteuid(), "pid": os.getpid()}
        with open("/proc/self/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        out["cap_eff"] = status["CapEff"].strip()
        out["programs"] = sorted(
            p for p in ("/bin/sh", "/usr/bin/sh", "/bin/bash", "/usr/bin/bash",
                        "/usr/bin/python3", "/usr/bin/perl", "/usr/bin/env", "/usr/bin/gcc",
                        "/usr/bin/cc", "/usr/bin/curl", "/usr/bin/wget", "/usr/bin/chromium",
                        "/usr/bin/freecadcmd", "/usr/bin/nc", "/usr/bin/busybox")
            if os.access(p, os.X_OK))

        out["visible"] = visible()
        # `sh` in the view: the worker program (Xvfb's keymap compiler's `sh -c`), or a shell.
        workers = [p for p in out["visible"]["deskbroker"] if p.endswith("/deskbroker-worker")]
        if os.path.exists("/bin/sh") and workers:
            sh, worker = os.stat("/bin/sh"), os.stat(workers[0])
            out["sh is the worker"] = (sh.st_dev, sh.st_ino) == (worker.st_dev, worker.st_ino)
        # Landlock (`sandbox/confine.rs`): the app may execute only its own program.
        def spawn_exec(path):
            pid = os.posix_spawn(path, [path, "--help"], {})
            os.waitpid(pid, 0)
        execs = {}
        for path in out["programs"] + workers:
            attempt(execs, path, lambda: spawn_exec(path))
        out["exec"] = execs
        host = {}
        for path in config["host_paths"]:
            attempt(host, path, lambda: os.stat(path) and None)
        out["host_paths"] = host

        net = {"interfaces": sorted(name for _, name in socket.if_nameindex())}
        attempt(net, "tcp 1.1.1.1:443",
                lambda: connect(socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 443)))
        attempt(net, "tcp 10.0.2.2:80",
                lambda: connect(socket.AF_INET, socket.SOCK_STREAM, ("10.0.2.2", 80)))
        attempt(net, "udp 8.8.8.8:53",
                lambda: connect(socket.AF_INET, socket.SOCK_DGRAM, ("8.8.8.8", 53)))
        attempt(net, "broker socket",
                lambda: connect(socket.AF_UNIX, socket.SOCK_STREAM, config["broker_socket"]))
        out["network"] = net

        worker = {}
        attempt(worker, "connect worker socket",
                lambda: connect(socket.AF_UNIX, socket.SOCK_STREAM, "/run/desk/worker.sock"))
        attempt(worker, "list run", lambda: os.listdir("/run/desk") and None)
        out["worker"] = worker

        signals = {}
        found = targets()
        out["targets"] = found
        for role, pid in sorted(found.items()):
            for name, number in (("probe", 0), ("term", signal.SIGTERM),
                                 ("kill", signal.SIGKILL), ("stop", signal.SIGSTOP)):
                attempt(signals, "%s %s" % (name, role),
                        lambda: os.kill(pid, number))
        out["signals"] = signals

        workspace = os.path.dirname(attempt_path)
        home_mod = os.path.expanduser("~/.local/share/FreeCAD/Mod/DeskPlanted2")
        places = {
            "usr": "/usr/desk-planted",
            "freecad Mod": "/usr/lib/freecad/Mod/desk-planted",
            "freecad lib": "/usr/lib/freecad/lib/desk-planted.so",
            "python stdlib": "/usr/lib/python3.11/desk_planted.py",
            "etc": "/etc/desk-planted",
            "root": "/desk-planted",
            "run": "/run/desk/desk-planted",
            "home seed": "/run/desk-home-seed/desk-planted",
            "workspace": workspace + "/desk-planted",
            "workspace host": workspace + "/host/desk-planted",
            "host root": config["host_root"] + "/desk-planted",
            "tmp": "/tmp/desk-planted-" + config["nonce"],
            "attempt": attempt_path + "/desk-planted",
            "home Mod file": os.path.expanduser("~/.local/share/FreeCAD/Mod/desk_planted.py"),
            "home Macro": os.path.expanduser("~/.local/share/FreeCAD/Macro/desk_planted.FCMacro"),
        }
        writes = {}
        for name, path in places.items():
            attempt(writes, name, lambda: write(path))

        def plant_module():
            os.makedirs(home_mod, exist_ok=True)
            write(home_mod + "/desk_planted_payload.py")
        attempt(writes, "home Mod", plant_module)
        out["writes"] = writes
        out["places"] = places
        out["home dirs"] = {
            name: sorted(os.listdir(os.path.expanduser("~/.local/share/FreeCAD/" + name)))
            for name in ("Mod", "Macro")
        }

        def import_planted():
            sys.path.insert(0, home_mod)
            try:
                __import__("desk_planted_payload")
            finally:
                sys.path.remove(home_mod)
        imports = {}
        attempt(imports, "import from home Mod", import_planted)
        out["imports"] = imports
        return out

    def spawn():
        # A second instance of the app's own program (its interpreter): the view has no shell.
        pid = os.fork()
        if pid == 0:
            try:
                time.sleep(60)
            finally:
                os._exit(0)
        return pid

    def tick():
        attempt_path = attempt_dir()
        if attempt_path is None:
            return
        if state["phase"] == "wait" and os.path.exists(attempt_path + "/planted.start"):
            state["phase"] = "probed"
            try:
                out = probe(attempt_path)
            except Exception:
                out = {"error": traceback.format_exc()}
            with open(attempt_path + "/planted.json.part", "w") as f:
                json.dump(out, f)
            os.rename(attempt_path + "/planted.json.part", attempt_path + "/planted.json")
        elif state["phase"] == "probed" and os.path.exists(attempt_path + "/planted.go"):
            state["phase"] = "spawned"
            spawned = {}
            attempt(spawned, "spawn", spawn)
            with open(attempt_path + "/planted.spawned", "w") as f:
                json.dump(spawned, f)

    timer = QtCore.QTimer()
    timer.setInterval(200)
    timer.timeout.connect(tick)
    timer.start()
    import FreeCADGui
    FreeCADGui.desk_planted = timer


_desk_planted()
"#;

/// The `freecad` profile plus the planted module, named `freecad-planted`.
fn planted_profile(config: &Value) -> String {
    let profile = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../desk-desktop/profiles/freecad.toml"),
    )
    .unwrap();
    let module = PLANTED.replace("@CONFIG@", &config.to_string());
    assert!(
        !module.contains("'''"),
        "the module is a TOML literal string"
    );
    let entry = format!("\".local/share/FreeCAD/Mod/DeskPlanted/InitGui.py\" = '''{module}'''\n");
    let planted = profile.replacen("[home_files]\n", &format!("[home_files]\n{entry}"), 1);
    assert_ne!(planted, profile, "no [home_files] table");
    planted.replacen("name = \"freecad\"", "name = \"freecad-planted\"", 1)
}

/// Whether `said` is an errno's name the kernel gives for a refusal or an absence.
fn refused(said: &Value) -> bool {
    matches!(
        said.as_str(),
        Some("EACCES" | "EPERM" | "EROFS" | "ENOENT" | "ENETUNREACH" | "EHOSTUNREACH")
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn python_planted_in_freecad_meets_the_sandbox_and_the_census_ends_the_session() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        // App and worker share one identity without root (`identity.rs`): the signals would land.
        println!("skipped: one identity without root (the sandbox's user namespace)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let gold = root.path().join("private");
    std::fs::create_dir_all(&gold).unwrap();
    let gold_file = gold.join("task-planted-gold.FCStd");
    std::fs::write(&gold_file, b"the gold").unwrap();
    let nonce = format!("{}-{}", std::process::id(), rand_suffix());
    let state_dir = root.path().join("state");
    let host_paths: Vec<String> = [
        gold.clone(),
        gold_file.clone(),
        state_dir.clone(),
        state_dir.join("evidence"),
        deskbroker(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../desk-cad"),
    ]
    .iter()
    .map(|path| path.display().to_string())
    .collect();
    let config = json!({
        "host_root": root.path().display().to_string(),
        "host_paths": host_paths,
        "broker_socket": root.path().join("broker.sock").display().to_string(),
        "nonce": nonce,
    });
    std::fs::create_dir_all(root.path().join("profiles")).unwrap();
    std::fs::write(
        root.path().join("profiles/freecad-planted.toml"),
        planted_profile(&config),
    )
    .unwrap();
    let gold_arg = gold.display().to_string();
    let broker = Broker::start_with(
        root.path(),
        None,
        &root.path().join("probe.ndjson"),
        &["--private-path", &gold_arg],
    );
    let driver = Driver::lease(&broker, "freecad-planted").await;
    let session_dir = broker.session_dir(&driver.session);
    let identities =
        desk_desktop::sandbox::identity::load(&desk_desktop::SessionDir::at(session_dir.clone()))
            .unwrap();
    let attempt_dir = session_dir.join("workspace/attempt");
    let workspace = std::fs::canonicalize(session_dir.join("workspace")).unwrap();

    // Run the planted probe (after the handoff) and read what it met.
    let started = Instant::now();
    std::fs::write(attempt_dir.join("planted.start"), b"").unwrap();
    let report = attempt_dir.join("planted.json");
    while !report.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the planted module never reported"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let met: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    println!(
        "planted probe ({} ms): {}",
        started.elapsed().as_millis(),
        serde_json::to_string_pretty(&met).unwrap()
    );
    assert!(met.get("error").is_none(), "the probe failed: {met}");

    // It ran in FreeCAD's process as the app's uid, with no capability.
    assert_eq!(met["uid"], identities.app.uid, "{met}");
    assert_eq!(met["euid"], identities.app.uid, "{met}");
    assert_eq!(met["cap_eff"], "0000000000000000", "{met}");
    // No shell, interpreter, compiler or network tool: `/bin/sh` is the worker program (it
    // runs Xvfb's `sh -c xkbcomp` and refuses anything else), `env` the launch stage (which
    // can run only what the view shows; the census refuses it as the app's child).
    let programs: Vec<&str> = met["programs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|program| program.as_str().unwrap())
        .collect();
    for program in &programs {
        assert!(
            ["/bin/sh", "/usr/bin/sh", "/usr/bin/env"].contains(program),
            "{program} is in the app's view: {programs:?}"
        );
    }

    // Nothing in the view but the app's own program can be executed by the app (Landlock, its
    // domain entered by `deskbroker-worker confine`): not the worker file `sh` is, not `env`.
    let execs = met["exec"].as_object().unwrap();
    assert!(
        execs.contains_key("/bin/sh") || execs.contains_key("/usr/bin/sh"),
        "{execs:?}"
    );
    for (program, said) in execs {
        assert_eq!(
            said, "EACCES",
            "{program} was executed by the app: {execs:?}"
        );
    }

    // No gold, nothing that makes gold: the worker is the only deskbroker program.
    if programs.contains(&"/bin/sh") {
        assert_eq!(met["sh is the worker"], true, "a shell in the view: {met}");
    }
    let seen = &met["visible"];
    assert!(
        seen["names"].as_u64().unwrap() > 1000,
        "a blind walk: {seen}"
    );
    assert!(
        !seen["deskbroker"].as_array().unwrap().is_empty(),
        "the worker must be visible (the walk sees /usr): {seen}"
    );
    for program in seen["deskbroker"].as_array().unwrap() {
        let name = Path::new(program.as_str().unwrap()).file_name().unwrap();
        assert_eq!(name, "deskbroker-worker", "{program}");
    }
    // The private path's file by name anywhere; of names with "gold", only icons (Adwaita's
    // trophy-gold.png) are in the view.
    for name in seen["gold"].as_array().unwrap() {
        let name = name.as_str().unwrap();
        assert!(
            name.starts_with("/usr/share/icons/") && !name.contains("task-planted-gold"),
            "{name}"
        );
    }
    assert_eq!(seen["evidence"], json!([]), "{seen}");
    assert_eq!(seen["key"], json!([]), "signing keys in view: {seen}");
    for (path, said) in met["host_paths"].as_object().unwrap() {
        assert_eq!(said, "ENOENT", "host path {path} visible: {said}");
    }

    // No network.
    let network = &met["network"];
    assert_eq!(network["interfaces"], json!(["lo"]), "{network}");
    for (what, said) in network.as_object().unwrap() {
        if what != "interfaces" {
            assert!(refused(said), "{what}: {said}");
        }
    }

    // No worker socket, no signal to the desktop's processes.
    for (what, said) in met["worker"].as_object().unwrap() {
        assert_eq!(said, "EACCES", "{what}: {said}");
    }
    let targets = met["targets"].as_object().unwrap();
    for role in ["holder", "worker", "xvfb", "window_manager"] {
        assert!(targets.contains_key(role), "{role} not found: {targets:?}");
    }
    let signals = met["signals"].as_object().unwrap();
    assert_eq!(signals.len(), targets.len() * 4);
    for (what, said) in signals {
        assert_eq!(said, "EPERM", "{what}: {said}");
    }

    // No write outside the policy's directories; the attempt directory, the control, takes one.
    let writes = &met["writes"];
    for place in [
        "usr",
        "freecad Mod",
        "freecad lib",
        "python stdlib",
        "etc",
        "root",
        "run",
        "home seed",
        "workspace",
        "workspace host",
        "host root",
    ] {
        assert!(refused(&writes[place]), "write into {place}: {writes}");
    }
    assert_eq!(writes["attempt"], "ok", "{writes}");
    // FreeCAD's module and macro directories in its home are read-only (the profile's
    // `read_only_home_dirs`): the sandbox refuses the write, not FreeCAD. They show what the
    // profile seeded (its lockdown and this test's module) and nothing else.
    for place in ["home Mod file", "home Macro", "home Mod"] {
        assert_eq!(writes[place], "EROFS", "write into {place}: {writes}");
    }
    assert_eq!(
        met["home dirs"],
        serde_json::json!({"Mod": ["DeskLockdown", "DeskPlanted"], "Macro": []}),
        "{}",
        met["home dirs"]
    );
    assert_eq!(
        std::fs::read_to_string(attempt_dir.join("desk-planted")).unwrap(),
        "planted",
        "the control write reaches the host"
    );
    // What the sandbox lets the app write besides (its private /tmp, the rest of its in-memory
    // home) reaches no host file, and nothing it tried to plant in Mod can be imported.
    println!(
        "tmp: {}, home Mod: {}, import: {}",
        writes["tmp"], writes["home Mod"], met["imports"]["import from home Mod"]
    );
    assert!(!Path::new(&format!("/tmp/desk-planted-{nonce}")).exists());
    assert!(!root.path().join("desk-planted").exists());
    assert!(
        !workspace
            .join("home/.local/share/FreeCAD/Mod/DeskPlanted2")
            .exists()
    );
    assert!(!workspace.join("desk-planted").exists());
    let import = met["imports"]["import from home Mod"].as_str().unwrap();
    assert!(
        import.starts_with("ImportError") || import.starts_with("ModuleNotFoundError"),
        "{import}"
    );

    // Untouched: the session still acts.
    let status = driver.client.status(&driver.session).await.unwrap();
    assert_eq!(status.state, desk_contract::api::SessionState::Ready);

    // A second instance of its own program: the census ends the session.
    let spawned = Instant::now();
    std::fs::write(attempt_dir.join("planted.go"), b"").unwrap();
    let killed =
        crate::census::receipt(&broker.state_dir, &driver.session, Duration::from_secs(15))
            .unwrap_or_else(|| {
                let spawned = std::fs::read_to_string(attempt_dir.join("planted.spawned"));
                let dir = desk_desktop::SessionDir::at(session_dir.clone());
                let census = desk_desktop::census::CensusRules::read(&dir)
                    .map(|rules| desk_desktop::census::scan(&dir, &rules));
                let states: Vec<String> = census
                    .iter()
                    .flatten()
                    .flat_map(|census| census.processes.iter())
                    .filter(|seen| seen.exe.is_none())
                    .map(|seen| {
                        std::fs::read_to_string(format!("/proc/{}/status", seen.pid))
                            .unwrap_or_default()
                            .lines()
                            .take(8)
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .collect();
                panic!(
                    "the census did not kill the session; the module's spawn: {spawned:?}; a \
                 census now: {census:?}; without exe: {states:?}"
                )
            });
    println!(
        "census kill {} ms after planted.go: {}",
        spawned.elapsed().as_millis(),
        killed.reason
    );
    assert_eq!(killed.limit.as_deref(), Some("prohibited_process"));
    assert_eq!(killed.outcome, "contained");
    let process = killed.process.as_ref().expect("the process is recorded");
    let freecad = desk_desktop::census::resolve_program("freecad")
        .unwrap()
        .display()
        .to_string();
    assert_eq!(process.parent_exe.as_deref(), Some(freecad.as_str()));
    assert_eq!(process.exe, freecad, "{process:?}");
    assert!(process.why.contains("instances"), "{process:?}");
    let mut driver = driver;
    match driver
        .send(json!({"type": "wait", "milliseconds": 100, "intent": "after the kill"}))
        .await
    {
        Err(ClientError::Api(body)) => assert_eq!(body.code, ErrorCode::SessionKilled),
        other => panic!("expected session_killed, got {other:?}"),
    }
}

/// A few random hex digits (a name no other run uses).
fn rand_suffix() -> String {
    let bytes = std::fs::read("/proc/sys/kernel/random/uuid").unwrap();
    String::from_utf8_lossy(&bytes[..8]).into_owned()
}
