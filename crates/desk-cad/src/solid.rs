//! The trusted 3D inspector: facts about a candidate or gold `.FCStd`, read by headless FreeCAD
//! (`freecadcmd`) inside a bubblewrap sandbox of its own: no network or other namespaces, a
//! read-only `/usr` and `/etc`, an empty tmpfs home, the file bound read-only at
//! `/in/candidate.FCStd`, killed with its parent and after [`JUDGE_TIMEOUT`].
//!
//! The candidate is untrusted input and its code never runs: an `.FCStd` can name Python
//! feature classes that `openDocument` would import and restore, so the inspector script
//! (`solid/inspect_fcstd.py`, ours) never opens it as a document. It reads the zip with
//! `zipfile`, refuses a `Document.xml` with a DOCTYPE (entity expansion), lists object types
//! from the XML, and loads each Part shape from its BREP member with OCCT's reader. Python
//! features, meshes and links are reported, never loaded.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::CadError;

const SCRIPT: &str = include_str!("solid/inspect_fcstd.py");

/// How long one inspection may take before the sandbox is killed.
pub const JUDGE_TIMEOUT: Duration = Duration::from_secs(60);

/// One solid found in a Part shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolidFacts {
    /// The document object holding it.
    pub object: String,
    /// That object's FreeCAD type, e.g. `PartDesign::Body`'s tip `PartDesign::Pad`.
    #[serde(rename = "type")]
    pub kind: String,
    /// OCCT's validity check.
    pub valid: bool,
    /// Volume in mm³.
    pub volume: f64,
    /// Surface area in mm².
    pub area: f64,
    /// `[xmin, ymin, zmin, xmax, ymax, zmax]` in mm.
    pub bbox: [f64; 6],
}

/// What the inspector found in one file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum FcstdFacts {
    /// Not an FCStd archive, or its document XML is unusable.
    Unreadable {
        /// Why.
        reason: String,
    },
    /// A readable document.
    Ok {
        /// Number of document objects.
        objects: usize,
        /// Solids of every Part shape, in document order.
        solids: Vec<SolidFacts>,
        /// Mesh objects (a mesh is not a solid).
        meshes: Vec<String>,
        /// Link objects and external files they name.
        linked: Vec<String>,
        /// Python feature objects (never loaded).
        python_features: Vec<String>,
    },
}

/// Inspects `path` with sandboxed headless FreeCAD.
pub fn inspect_fcstd(path: &Path) -> Result<FcstdFacts, CadError> {
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| CadError::Io { op, path, source }
    };
    let work = tempfile_dir()?;
    let script = work.join("inspect.py");
    std::fs::write(&script, SCRIPT).map_err(io("write", &script))?;
    let mut child = Command::new("bwrap")
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
        .args(["--setenv", "HOME", "/home/judge"])
        .arg("--ro-bind")
        .arg(path)
        .arg("/in/candidate.FCStd")
        .arg("--ro-bind")
        .arg(&script)
        .arg("/in/inspect.py")
        .args(["freecadcmd", "-c", "exec(open('/in/inspect.py').read())"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
    let finished = loop {
        match child.try_wait() {
            Ok(Some(_)) => break Ok(()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(CadError::Judge("inspection timed out".to_string()));
            }
            Err(error) => break Err(CadError::Judge(format!("wait failed: {error}"))),
        }
    };
    let _ = std::fs::remove_dir_all(&work);
    finished?;
    let stdout = match reader.map(|thread| thread.join()) {
        Some(Ok(Ok(text))) => text,
        _ => return Err(CadError::Judge("unreadable inspector output".to_string())),
    };
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("DESKJSON "))
        .ok_or_else(|| CadError::Judge("the inspector printed no report".to_string()))?;
    serde_json::from_str(line).map_err(|error| CadError::Judge(format!("bad report: {error}")))
}

fn tempfile_dir() -> Result<std::path::PathBuf, CadError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let dir = base.join(format!("desk-judge-{}-{attempt}", std::process::id()));
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
