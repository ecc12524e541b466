//! The judge's sandbox: headless FreeCAD (`freecadcmd`) running one of our scripts inside
//! bubblewrap with all namespaces unshared (no network), a read-only `/usr` and `/etc`, an empty
//! tmpfs home, the given files bound read-only, at most one writable output directory, a clean
//! environment, killed with its parent and after [`JUDGE_TIMEOUT`]. Used for untrusted
//! candidates (the inspector, the judge) and for trusted gold builds alike.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use crate::CadError;

/// How long one sandboxed FreeCAD run may take before it is killed.
pub const JUDGE_TIMEOUT: Duration = Duration::from_secs(60);

/// What a sandboxed run printed, and whether it was killed at [`JUDGE_TIMEOUT`].
pub(crate) struct RunOutput {
    pub(crate) stdout: String,
    pub(crate) timed_out: bool,
}

impl RunOutput {
    /// The output of a run that must finish (a timeout is an error).
    pub(crate) fn finished(self) -> Result<String, CadError> {
        if self.timed_out {
            return Err(CadError::Judge("freecadcmd timed out".to_string()));
        }
        Ok(self.stdout)
    }
}

/// Runs `script` with freecadcmd in the sandbox; `inputs` are (host file, sandbox path) pairs
/// bound read-only, `output` a host directory bound writable at `/out`. Returns what it
/// printed, also when it was killed at the deadline.
pub(crate) fn run_freecad(
    script: &str,
    inputs: &[(&Path, &str)],
    output: Option<&Path>,
) -> Result<RunOutput, CadError> {
    let work = work_dir()?;
    let result = run_in(&work, script, inputs, output);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn run_in(
    work: &Path,
    script: &str,
    inputs: &[(&Path, &str)],
    output: Option<&Path>,
) -> Result<RunOutput, CadError> {
    let script_path = work.join("script.py");
    std::fs::write(&script_path, script).map_err(|source| CadError::Io {
        op: "write",
        path: script_path.clone(),
        source,
    })?;
    let mut command = Command::new("bwrap");
    command
        .args(["--unshare-all", "--die-with-parent", "--new-session"])
        .args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"])
        .args([
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
        ])
        .args([
            "--symlink",
            "usr/bin",
            "/bin",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
        ])
        .args(["--tmpfs", "/tmp", "--dir", "/home/judge"])
        .args(["--setenv", "HOME", "/home/judge"]);
    for (host, inside) in inputs {
        command.arg("--ro-bind").arg(host).arg(inside);
    }
    if let Some(dir) = output {
        command.arg("--bind").arg(dir).arg("/out");
    }
    command
        .arg("--ro-bind")
        .arg(&script_path)
        .arg("/in/script.py")
        .args(["freecadcmd", "-c", "exec(open('/in/script.py').read())"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command
        .spawn()
        .map_err(|error| CadError::Judge(format!("cannot start bwrap: {error}")))?;
    // Read stdout on its own thread so a chatty child never blocks on a full pipe.
    let reader = child.stdout.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).map(|_| text)
        })
    });
    let deadline = Instant::now() + JUDGE_TIMEOUT;
    let timed_out = loop {
        match child.try_wait() {
            Ok(Some(_)) => break false,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                // bwrap's --die-with-parent ends the sandbox with it, closing the pipe.
                let _ = child.kill();
                let _ = child.wait();
                break true;
            }
            Err(error) => return Err(CadError::Judge(format!("wait failed: {error}"))),
        }
    };
    match reader.map(|thread| thread.join()) {
        Some(Ok(Ok(stdout))) => Ok(RunOutput { stdout, timed_out }),
        _ => Err(CadError::Judge("unreadable freecadcmd output".to_string())),
    }
}

/// Decodes the script's one `DESKJSON {...}` line.
pub(crate) fn parse_report<T: DeserializeOwned>(stdout: &str) -> Result<T, CadError> {
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("DESKJSON "))
        .ok_or_else(|| CadError::Judge("the script printed no report".to_string()))?;
    serde_json::from_str(line).map_err(|error| CadError::Judge(format!("bad report: {error}")))
}

/// A fresh private (0700) directory under the system temp directory.
pub(crate) fn work_dir() -> Result<PathBuf, CadError> {
    use std::os::unix::fs::DirBuilderExt as _;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let base = std::env::temp_dir();
    for _ in 0..100u32 {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = base.join(format!("desk-judge-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(CadError::Io {
                    op: "create directory",
                    path: dir,
                    source,
                });
            }
        }
    }
    Err(CadError::Judge("no free work directory".to_string()))
}
