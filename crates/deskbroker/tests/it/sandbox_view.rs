//! What a live session sandbox shows of us, measured from outside through its holder's
//! `/proc/PID/root`: of our programs only `deskbroker-worker` (and the test's own app), which
//! refuses `bench` and carries no gold-making code, never the full `deskbroker`; its pid 1 is
//! that program (`hold`), and it reaps the orphans it adopts.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use desk_desktop::sandbox::Sandbox;

use crate::probe::leased_probe;
use crate::support::{Broker, deskbroker, probe_binary, worker_program, xvfb_available};
use crate::worker_program::{forbidden_code_in, run};

/// The running sandbox of the session in `session_dir`, as its `desktop.json` records it.
pub(crate) fn recorded_sandbox(session_dir: &Path) -> Sandbox {
    let path = desk_desktop::SessionDir::at(session_dir).desktop_file();
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    serde_json::from_value(record["sandbox"].clone()).expect("a sandboxed desktop")
}

/// Every executable regular file below `dir` (a path through the sandbox's root), symbolic
/// links not followed, as the path inside.
pub(crate) fn executables_below(root: &Path, dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir.strip_prefix("/").unwrap_or(dir))) else {
        return;
    };
    for entry in entries.flatten() {
        let inside = dir.join(entry.file_name());
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            executables_below(root, &inside, found);
        } else if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            found.push(inside);
        }
    }
}

/// The host system's own trees: whatever else holds an executable inside is ours.
const SYSTEM: [&str; 9] = [
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/var",
];

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_shows_only_the_worker_program_of_ours_and_it_is_pid_1() {
    if !xvfb_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let log = tmp.path().join("probe.ndjson");
    let broker = Broker::start(tmp.path(), None, &log);
    let session = leased_probe(&broker, "ours").await;
    let sandbox = recorded_sandbox(&broker.session_dir(&session));
    let root = sandbox.root_from_host();

    // Every executable outside the system's trees (the worker, the test's app), walked whole
    // but for the kernel's file systems.
    let mut ours = Vec::new();
    for top in std::fs::read_dir(&root).unwrap().flatten() {
        let inside = Path::new("/").join(top.file_name());
        if ["/proc", "/sys", "/dev"]
            .iter()
            .any(|skip| inside == Path::new(skip))
            || SYSTEM.iter().any(|system| inside == Path::new(system))
        {
            continue;
        }
        executables_below(&root, &inside, &mut ours);
    }
    let worker = std::fs::canonicalize(worker_program()).unwrap();
    let probe = std::fs::canonicalize(probe_binary()).unwrap();
    ours.sort();
    let mut expected = vec![worker.clone(), probe.clone()];
    expected.sort();
    assert_eq!(ours, expected, "our executables visible in the sandbox");
    // The worker as the sandbox shows it: refuses bench, no corpus, judge or signing code.
    let visible_worker = root.join(worker.strip_prefix("/").unwrap());
    let (code, stderr) = run(
        &visible_worker,
        &["bench", "corpus", "--gold-out", "/tmp/g"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(forbidden_code_in(&visible_worker).is_empty());
    // The full binary is not there, by any name our build gives it.
    let full = std::fs::canonicalize(deskbroker()).unwrap();
    assert!(!sandbox.can_run(&full.display().to_string()));
    assert!(!sandbox.can_run("deskbroker"));
    assert!(sandbox.can_run(&worker.display().to_string()));

    // Pid 1 is our holder, not a shell.
    let exe = std::fs::read_link(format!("/proc/{}/exe", sandbox.holder_pid)).unwrap();
    assert_eq!(exe, worker, "the sandbox's pid 1");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", sandbox.holder_pid)).unwrap();
    let argv: Vec<String> = cmdline
        .split(|byte| *byte == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    assert_eq!(argv[1], "hold", "{argv:?}");

    // An orphan (a child whose parent exited) is adopted and reaped by pid 1: no zombie stays.
    // The shell planted for it is a prohibited process the census would end the session for
    // (census.rs tests that), so the watchdog is paused meanwhile and no action is sent; both
    // the shell and its orphan are gone before it resumes.
    let watchdog = crate::census::watchdog_pid(&broker.state_dir);
    crate::census::signal(watchdog, "STOP");
    let mut orphaner = sandbox.command(
        &[
            "sh".to_string(),
            "-c".to_string(),
            "sleep 0.3 & exit 0".to_string(),
        ],
        Path::new("/"),
        &[(
            "PATH".to_string(),
            desk_desktop::sandbox::SAFE_PATH.to_string(),
        )],
    );
    assert!(orphaner.status().unwrap().success());
    let pid_ns = std::fs::read_link(format!("/proc/{}/ns/pid", sandbox.holder_pid)).unwrap();
    let in_sandbox = |state: char| -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                    .ok()
                    .as_ref()
                    == Some(&pid_ns)
            })
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|stat| stat.rsplit(") ").next()?.chars().next())
                    == Some(state)
            })
            .collect()
    };
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(600));
    let describe = |pid: &u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        format!(
            "{pid} {} ppid {} nspid {}",
            field("Name:"),
            field("PPid:"),
            field("NSpid:")
        )
    };
    // Only the holder's own children are its to reap (a process whose wrapper on the host
    // died goes to the host's init instead).
    let holder = sandbox.holder_pid.to_string();
    let zombies: Vec<String> = in_sandbox('Z')
        .iter()
        .map(describe)
        .filter(|line| line.contains(&format!(" ppid {holder} ")))
        .collect();
    crate::census::signal(watchdog, "CONT");
    assert!(zombies.is_empty(), "zombies: {zombies:?}");
    println!(
        "orphan reaped; ours visible: {ours:?}; checked in {} ms",
        started.elapsed().as_millis()
    );
    broker.client().release(&session).await.unwrap();
}
