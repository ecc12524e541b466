//! `desk-escape-probe --out FILE --port N [--forbid PATH]... [--targets-file FILE]
//! [--other-display-socket PATH] [--class C]`: the escape probe, an app for the `escape-probe`
//! profile. Before it maps its window it tries, from wherever it runs (inside a session's
//! sandbox), to leave its workspace: a TCP connection to the host's loopback port `N` and to a
//! public address, name resolution, reading and listing each forbidden path, writing outside its
//! workspace, signalling and reading the memory of the broker, connecting to another display's
//! socket (by path and as the abstract socket of the same name), and reaching other sessions.
//! The targets file, which the test writes once the broker runs and again once the sessions
//! run, holds the broker's pid on its first line, then one JSON line per peer target
//! `{"for": WORKSPACE, "kind": "connect"|"read"|"signal", "target": PATH_OR_PID}`; a probe uses
//! the lines whose `for` is its own workspace (the attempt directory's parent). Each attempt is one JSON line
//! `{"attempt", "escaped", "detail", "round"}` in `--out` (the attempt file). Ctrl+S makes every
//! attempt again, now with the desktop handed off, and writes them as the next round: the file
//! differs from the one at reset, so a checkpoint's save gesture is seen to work.
//!
//! `escaped` is true when the operation succeeded; a missing path, a refused or unreachable
//! connection, a permission error or a timeout is false, with the error as detail.

use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_test_support::probe::{ProbeOptions, open_window};
use serde::Serialize;
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::ConnectionExt as _;

/// One attempt and its outcome.
#[derive(Debug, Serialize)]
struct Finding {
    attempt: String,
    escaped: bool,
    detail: String,
    /// 1 before the window is mapped, then one more per Ctrl+S.
    round: u32,
}

#[derive(Debug, Default)]
struct Args {
    out: PathBuf,
    port: u16,
    forbid: Vec<PathBuf>,
    targets_file: Option<PathBuf>,
    other_display_socket: Option<PathBuf>,
    class: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        class: "deskescape".to_string(),
        ..Args::default()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--out" => args.out = PathBuf::from(value),
            "--port" => args.port = value.parse().map_err(|e| format!("--port {value}: {e}"))?,
            "--forbid" => args.forbid.push(PathBuf::from(value)),
            "--targets-file" => args.targets_file = Some(PathBuf::from(value)),
            "--other-display-socket" => args.other_display_socket = Some(PathBuf::from(value)),
            "--class" => args.class = value,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.out.as_os_str().is_empty() || args.port == 0 {
        return Err("--out and --port are required".to_string());
    }
    Ok(args)
}

fn finding(attempt: String, result: Result<String, String>) -> Finding {
    let (escaped, detail) = match result {
        Ok(detail) => (true, detail),
        Err(detail) => (false, detail),
    };
    Finding {
        attempt,
        escaped,
        detail,
        round: 0,
    }
}

fn connect_tcp(addr: SocketAddr) -> Result<String, String> {
    TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map(|stream| format!("connected from {:?}", stream.local_addr().ok()))
        .map_err(|e| e.to_string())
}

/// Resolves `name` on a thread, giving up after `timeout` (a resolver without a route may wait).
fn resolve(name: &'static str, timeout: Duration) -> Result<String, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let answer = (name, 443)
            .to_socket_addrs()
            .map(|addrs| addrs.map(|a| a.ip().to_string()).collect::<Vec<_>>());
        let _ = tx.send(answer);
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(addrs)) if !addrs.is_empty() => Ok(format!("resolved to {addrs:?}")),
        Ok(Ok(_)) => Err("no addresses".to_string()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

/// Opens `path`: a directory is listed, a file read.
fn read_path(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        let names: Vec<String> = std::fs::read_dir(path)
            .map_err(|e| e.to_string())?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        Ok(format!("listed {} entries", names.len()))
    } else {
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|mut file| file.read_to_end(&mut bytes))
            .map_err(|e| e.to_string())?;
        Ok(format!("read {} bytes", bytes.len()))
    }
}

/// Creates a file in `dir` and removes it again at once (so a broken sandbox leaves nothing).
fn write_into(dir: &Path) -> Result<String, String> {
    let path = dir.join(format!(".desk-escape-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| file.write_all(b"escaped\n"))
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&path);
    Ok(format!("created {}", path.display()))
}

fn signal_pid(pid: i32) -> Result<String, String> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        .map(|()| format!("kill({pid}, 0) succeeded"))
        .map_err(|e| e.to_string())
}

/// Reads 16 bytes of the broker's memory through `/proc/PID/mem`, which needs ptrace-attach
/// rights over it.
fn read_broker_memory(pid: i32) -> Result<String, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| e.to_string())?;
    let start = maps
        .lines()
        .find(|line| {
            line.split_whitespace()
                .nth(1)
                .is_some_and(|p| p.starts_with('r'))
        })
        .and_then(|line| line.split('-').next())
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .ok_or_else(|| "no readable mapping".to_string())?;
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).map_err(|e| e.to_string())?;
    let mut bytes = [0u8; 16];
    mem.seek(SeekFrom::Start(start))
        .and_then(|_| mem.read_exact(&mut bytes))
        .map_err(|e| e.to_string())?;
    Ok(format!("read 16 bytes at 0x{start:x}"))
}

fn connect_unix_path(path: &Path) -> Result<String, String> {
    std::os::unix::net::UnixStream::connect(path)
        .map(|_| "connected".to_string())
        .map_err(|e| e.to_string())
}

fn connect_unix_abstract(name: &[u8]) -> Result<String, String> {
    use std::os::linux::net::SocketAddrExt as _;
    let addr =
        std::os::unix::net::SocketAddr::from_abstract_name(name).map_err(|e| e.to_string())?;
    std::os::unix::net::UnixStream::connect_addr(&addr)
        .map(|_| "connected".to_string())
        .map_err(|e| e.to_string())
}

fn attempts(args: &Args, round: u32) -> Vec<Finding> {
    let mut findings = attempts_unnumbered(args);
    for finding in &mut findings {
        finding.round = round;
    }
    findings
}

fn attempts_unnumbered(args: &Args) -> Vec<Finding> {
    let mut findings = Vec::new();
    let loopback = SocketAddr::from(([127, 0, 0, 1], args.port));
    findings.push(finding(
        format!("tcp_connect {loopback}"),
        connect_tcp(loopback),
    ));
    let public = SocketAddr::from(([1, 1, 1, 1], 53));
    findings.push(finding(
        format!("tcp_connect {public}"),
        connect_tcp(public),
    ));
    findings.push(finding(
        "resolve example.com".to_string(),
        resolve("example.com", Duration::from_secs(3)),
    ));
    for path in &args.forbid {
        findings.push(finding(format!("read {}", path.display()), read_path(path)));
    }
    // The workspace (home, attempt, run) is writable by design; its parent is not.
    let workspace_parent = args
        .out
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let mut write_dirs: Vec<PathBuf> = ["/", "/usr", "/etc"].iter().map(PathBuf::from).collect();
    write_dirs.extend(workspace_parent);
    write_dirs.extend(args.forbid.iter().filter(|p| p.is_dir()).cloned());
    for dir in &write_dirs {
        findings.push(finding(
            format!("write into {}", dir.display()),
            write_into(dir),
        ));
    }
    if let Some(targets) = &args.targets_file {
        let text = std::fs::read_to_string(targets).unwrap_or_default();
        match text
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .parse::<i32>()
        {
            Ok(pid) => {
                findings.push(finding(format!("signal broker {pid}"), signal_pid(pid)));
                findings.push(finding(
                    format!("read broker memory {pid}"),
                    read_broker_memory(pid),
                ));
            }
            Err(other) => findings.push(Finding {
                attempt: "signal broker".to_string(),
                escaped: false,
                detail: format!("broker pid unreadable, attempt not made: {other:?}"),
                round: 0,
            }),
        }
        findings.extend(peer_attempts(args, &text));
    }
    if let Some(socket) = &args.other_display_socket {
        findings.push(finding(
            format!("connect display socket {}", socket.display()),
            connect_unix_path(socket),
        ));
        findings.push(finding(
            format!("connect abstract display socket @{}", socket.display()),
            connect_unix_abstract(socket.as_os_str().as_encoded_bytes()),
        ));
    }
    findings
}

/// The attempts on other sessions the targets file names for this probe's workspace.
fn peer_attempts(args: &Args, targets: &str) -> Vec<Finding> {
    let own = args
        .out
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let own = own.map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir));
    let mut findings = Vec::new();
    for line in targets.lines().skip(1) {
        let Ok(target) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let field = |name: &str| target[name].as_str().unwrap_or_default().to_string();
        if own.as_deref() != Some(Path::new(&field("for"))) {
            continue;
        }
        let (kind, path) = (field("kind"), field("target"));
        let result = match kind.as_str() {
            "connect" => connect_unix_path(Path::new(&path)),
            "read" => read_path(Path::new(&path)),
            "signal" => match path.parse::<i32>() {
                Ok(pid) => signal_pid(pid),
                Err(error) => Err(format!("not a pid: {error}")),
            },
            other => Err(format!("unknown kind {other}")),
        };
        findings.push(finding(format!("peer {kind} {path}"), result));
    }
    findings
}

fn write_findings(out: &Path, findings: &[Finding]) -> Result<(), Box<dyn std::error::Error>> {
    let mut text = String::new();
    for finding in findings {
        text.push_str(&serde_json::to_string(finding)?);
        text.push('\n');
    }
    let tmp = out.with_extension("partial");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, out)?;
    Ok(())
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut round = 1;
    write_findings(&args.out, &attempts(args, round))?;
    let display = std::env::var("DISPLAY")?;
    let options = ProbeOptions {
        title: "deskbroker escape probe".to_string(),
        class: args.class.clone(),
        ..ProbeOptions::default()
    };
    let (conn, _window) = open_window(&display, &options)?;
    let setup_min = conn.setup().min_keycode;
    loop {
        if let Event::KeyPress(key) = conn.wait_for_event()? {
            let control = u16::from(key.state) & 4 != 0;
            if !control || key.detail < setup_min {
                continue;
            }
            let mapping = conn.get_keyboard_mapping(key.detail, 1)?.reply()?;
            if mapping.keysyms.first() == Some(&u32::from(b's')) {
                round += 1;
                write_findings(&args.out, &attempts(args, round))?;
            }
        }
    }
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("desk-escape-probe: {error}");
            std::process::exit(2);
        }
    };
    if let Err(error) = run(&args) {
        eprintln!("desk-escape-probe: {error}");
        std::process::exit(1);
    }
}
