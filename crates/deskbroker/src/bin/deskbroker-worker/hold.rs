//! The sandbox's first process (pid 1 of its pid namespace): `deskbroker-worker hold`.
//!
//! Every `--every` seconds it reads the lease deadline (Unix seconds, the file's first line)
//! and exits once the clock has passed it; a file that is missing, unreadable or not a number
//! for `--missing` seconds in a row ends it too. When it exits the kernel kills every process
//! in the namespace, so a desktop whose broker never comes back stops by itself.
//!
//! As the namespace's init it adopts every orphan, and a thread reaps them as they exit (no
//! zombies pile up). It installs no signal handler: the kernel then drops every signal sent to
//! it from inside the namespace (only SIGKILL and SIGSTOP from an ancestor namespace reach it).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, waitpid};

/// The holder's settings.
pub(crate) struct Hold {
    file: PathBuf,
    every: Duration,
    missing: Duration,
}

impl Hold {
    /// Parses `[--every SECS] [--missing SECS] FILE` (defaults 2 s and 120 s).
    pub(crate) fn parse(args: &[String]) -> Result<Hold, String> {
        let mut every = 2u64;
        let mut missing = 120u64;
        let mut file = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut seconds = |name: &str| -> Result<u64, String> {
                let value = args.next().ok_or(format!("{name} needs a value"))?;
                match value.parse::<u64>() {
                    Ok(seconds) if (1..=86_400).contains(&seconds) => Ok(seconds),
                    _ => Err(format!("{name} must be 1 to 86400 seconds, not {value:?}")),
                }
            };
            match arg.as_str() {
                "--every" => every = seconds("--every")?,
                "--missing" => missing = seconds("--missing")?,
                path if file.is_none() && path.starts_with('/') => file = Some(PathBuf::from(path)),
                other => return Err(format!("unexpected argument {other:?}")),
            }
        }
        Ok(Hold {
            file: file.ok_or("the deadline FILE (an absolute path) is required")?,
            every: Duration::from_secs(every),
            missing: Duration::from_secs(missing),
        })
    }

    /// Holds until the deadline passes or the file stays missing too long; never fails.
    pub(crate) fn run(self) -> ExitCode {
        std::thread::spawn(reap_forever);
        let mut missing = Duration::ZERO;
        loop {
            match read_deadline(&self.file) {
                Some(deadline) => {
                    missing = Duration::ZERO;
                    if now_secs() > deadline {
                        return ExitCode::SUCCESS;
                    }
                }
                None => {
                    missing += self.every;
                    if missing >= self.missing {
                        return ExitCode::SUCCESS;
                    }
                }
            }
            std::thread::sleep(self.every);
        }
    }
}

/// The deadline in `file`, when it holds a number on its first line.
fn read_deadline(file: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().next()?.trim().parse().ok()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Waits for any child (orphans adopted by init) and reaps it; with none, looks again shortly.
fn reap_forever() {
    loop {
        match waitpid(None, Some(WaitPidFlag::__WALL)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
