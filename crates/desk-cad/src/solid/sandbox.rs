//! The judge's sandbox: headless FreeCAD (`freecadcmd`) running one of our scripts inside
//! bubblewrap with all namespaces unshared (no network), a read-only `/usr` and `/etc`, an empty
//! tmpfs home, the given files bound read-only, at most one writable output directory, a clean
//! environment, killed with its parent and after [`JUDGE_TIMEOUT`]. Used for untrusted
//! candidates (the inspector, the judge) and for trusted gold builds alike.
//!
//! Resource limits: FreeCAD runs under `prlimit` inside the sandbox with [`MEMORY_LIMIT`] of
//! address space (`RLIMIT_AS`), [`CPU_SECONDS`] of CPU time (`RLIMIT_CPU`, then `SIGXCPU`),
//! [`FILE_SIZE_LIMIT`] per written file (`RLIMIT_FSIZE`, then `SIGXFSZ`) and [`PROCESS_LIMIT`]
//! tasks (`RLIMIT_NPROC`, threads included; not enforced for root), and its `/tmp` is a tmpfs of
//! [`TMP_SIZE`]. A run that dies of one of these is reported as such ([`RunOutput::limit`]):
//! by its exit signal, or by an allocation failure on its standard error.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use crate::CadError;

/// How long one sandboxed FreeCAD run may take before it is killed.
pub const JUDGE_TIMEOUT: Duration = Duration::from_secs(60);

/// Address space of the sandboxed FreeCAD (`RLIMIT_AS`).
pub const MEMORY_LIMIT: u64 = 2 << 30;
/// CPU seconds of the sandboxed FreeCAD (`RLIMIT_CPU` soft limit; the hard one is 5 s more).
pub const CPU_SECONDS: u64 = 60;
/// Largest file the sandboxed FreeCAD may write (`RLIMIT_FSIZE`).
pub const FILE_SIZE_LIMIT: u64 = 256 << 20;
/// Tasks (processes and threads) of the sandbox's user (`RLIMIT_NPROC`).
pub const PROCESS_LIMIT: u64 = 512;
/// Size of the sandbox's `/tmp` tmpfs.
pub const TMP_SIZE: u64 = 256 << 20;
/// How much of the run's standard error is kept to tell an allocation failure from a crash.
const STDERR_TAIL: usize = 64 * 1024;
/// What an allocation failure prints on standard error (Python, C++, OCCT, glibc).
const OUT_OF_MEMORY: [&str; 5] = [
    "MemoryError",
    "bad_alloc",
    "Cannot allocate memory",
    "Standard_OutOfMemory",
    "out of memory",
];

/// What a sandboxed run printed, whether it was killed at [`JUDGE_TIMEOUT`], and which
/// resource limit ended it, if one did.
pub(crate) struct RunOutput {
    pub(crate) stdout: String,
    pub(crate) timed_out: bool,
    /// `memory limit`, `CPU time limit` or `file size limit`.
    pub(crate) limit: Option<&'static str>,
}

impl RunOutput {
    /// The output of a run that must finish (a timeout is an error).
    pub(crate) fn finished(self) -> Result<String, CadError> {
        if self.timed_out {
            return Err(CadError::Judge("freecadcmd timed out".to_string()));
        }
        if let Some(limit) = self.limit {
            return Err(CadError::Judge(format!("freecadcmd hit the {limit}")));
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
        .arg("--size")
        .arg(TMP_SIZE.to_string())
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
        .arg("prlimit")
        .arg(format!("--as={MEMORY_LIMIT}"))
        .arg(format!("--cpu={CPU_SECONDS}:{}", CPU_SECONDS + 5))
        .arg(format!("--fsize={FILE_SIZE_LIMIT}"))
        .arg(format!("--nproc={PROCESS_LIMIT}"))
        .args([
            "--",
            "freecadcmd",
            "-c",
            "exec(open('/in/script.py').read())",
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
    let errors = child
        .stderr
        .take()
        .map(|pipe| std::thread::spawn(move || tail(pipe)));
    let deadline = Instant::now() + JUDGE_TIMEOUT;
    let mut status = None;
    let timed_out = loop {
        match child.try_wait() {
            Ok(Some(exit)) => {
                status = exit.code();
                break false;
            }
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
    let errors = errors
        .and_then(|thread| thread.join().ok())
        .unwrap_or_default();
    let limit = if timed_out {
        None
    } else {
        limit_hit(status, &errors)
    };
    match reader.map(|thread| thread.join()) {
        Some(Ok(Ok(stdout))) => Ok(RunOutput {
            stdout,
            timed_out,
            limit,
        }),
        _ => Err(CadError::Judge("unreadable freecadcmd output".to_string())),
    }
}

/// The last [`STDERR_TAIL`] bytes of a pipe, read to its end.
fn tail(mut pipe: impl std::io::Read) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer) {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(buffer.get(..n).unwrap_or_default());
        if kept.len() > 2 * STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Which resource limit ended a run, from bwrap's exit code (128 + the signal that ended
/// FreeCAD) or an allocation failure on standard error.
pub(crate) fn limit_hit(status: Option<i32>, stderr: &str) -> Option<&'static str> {
    const SIGXCPU: i32 = 24;
    const SIGXFSZ: i32 = 25;
    match status {
        Some(code) if code == 128 + SIGXCPU => Some("CPU time limit"),
        Some(code) if code == 128 + SIGXFSZ => Some("file size limit"),
        _ if OUT_OF_MEMORY.iter().any(|text| stderr.contains(text)) => Some("memory limit"),
        _ => None,
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
