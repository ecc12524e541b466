//! The desktop's idle signals, read from outside the app for the idle-aware settle
//! (`settle.rs`, `docs/settle.md`):
//!
//! - damage: an XDamage object on the root window reports any drawing on the screen;
//! - sockets: every Unix socket held by the X server or one of its clients has nothing unread
//!   (`idle/diag.rs`): no request waits for the server and no event or reply for a client;
//! - threads: every thread of those processes is blocked in a call whose timeout is known
//!   (`idle/thread.rs`), and across a quiet window ([`QuietWindow`]) none ran except to fire a timer
//!   that was due within [`TIMER_HORIZON_MS`] at the window's start (each such timer must have
//!   fired: a periodic tick that draws nothing does not hold the settle, a one-shot repaint
//!   does) and the X server serving it. A relative timeout counts from its call's start, which
//!   the samples date (`calls::CallClock`); one they could not date is judged as before and
//!   marked ([`QuietWindow::undated`]).
//!
//! The processes are the X server (the peer of our connection) and every client the server
//! names through X-Resource, except this worker. They are listed when the watch is armed,
//! before each action's input.
//!
//! Invariant: any signal that cannot be read makes the watch unavailable for the wait with a
//! reason; the settle then falls back to its quiet-time rule, never to a guess.
//!
//! Over 400 lines: the idle signals and the quiet window judged over them belong together (socket
//! diagnostics and thread states are already apart).

mod calls;
#[cfg(test)]
mod calls_tests;
mod diag;
mod thread;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use x11rb::connection::{Connection, RequestConnection as _};
use x11rb::protocol::Event;
use x11rb::protocol::damage::{self, ConnectionExt as _, ReportLevel};
use x11rb::protocol::res::{self, ClientIdMask, ClientIdSpec};
use x11rb::protocol::xproto::{ConnectionExt as _, Window};
use x11rb::rust_connection::RustConnection;

use crate::error::X11Error;
use calls::{CallClock, Slept, TimerDue};
use diag::SockDiag;
use thread::{Timeout, Wake, parse_status, parse_syscall};

/// A thread blocked with a timer due within this many milliseconds of its call is not idle:
/// the event loop has work scheduled (a click animation, a deferred repaint). Longer timers
/// (a caret's blink, housekeeping) do not hold the settle.
pub(crate) const TIMER_HORIZON_MS: u64 = 300;

/// The damage object and the processes of one display.
pub(crate) struct IdleWatch {
    damage: damage::Damage,
    diag: Option<SockDiag>,
    /// The X server's pid, when the peer of our connection could be read.
    server: Option<u32>,
    /// The processes watched during the current wait.
    pids: Vec<u32>,
    /// Why the idle rule cannot decide the current wait (the quiet-time rule does).
    unavailable: Option<String>,
    /// How long each thread has been in its call, across waits.
    calls: CallClock,
}

/// A thread no sample saw for this long is forgotten by the call clock.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// One sample of the processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Every thread blocked in a call with a known timeout, every socket read.
    pub(crate) asleep: bool,
    /// Every thread, by tid.
    pub(crate) threads: Vec<ThreadSample>,
    /// What kept the desktop busy, for the debug log.
    pub(crate) busy: Option<String>,
    /// A thread of an app (not of the X server) was on a CPU or runnable (state `R`, or in
    /// no call): the app is computing, and the quiet-time rule waits for it (`settle.rs`).
    pub(crate) running: bool,
}

/// One thread in a [`Sample`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadSample {
    pub(crate) tid: u32,
    /// Context switches so far.
    pub(crate) switches: u64,
    /// Blocked with a timer due within [`TIMER_HORIZON_MS`].
    pub(crate) timer_soon: bool,
    /// A thread of the X server (its timers draw nothing by themselves).
    pub(crate) server: bool,
    /// Blocked with a relative timeout the call clock could not date: it may be due within
    /// [`TIMER_HORIZON_MS`] (judged not, as before the clock).
    pub(crate) undated: bool,
}

/// A quiet window: the threads as they were when the desktop was last seen asleep.
#[derive(Debug, Clone)]
pub(crate) struct QuietWindow {
    start: Vec<ThreadSample>,
}

/// What a later asleep sample says of a [`QuietWindow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judgement {
    /// Nothing ran but the server, and no timer was due at the start.
    Quiet,
    /// Nothing ran but the server and timers due at the start, each of which fired: the
    /// window must last [`crate::settle::TICKING_QUIET`], so that a periodic timer that draws
    /// only on some ticks is seen drawing.
    QuietTicking,
    /// A timer due at the start has not fired yet.
    TimerPending,
    /// Something else ran, or threads came or went: start a new window.
    Disturbed,
}

impl QuietWindow {
    /// A window starting at the asleep `sample`.
    pub(crate) fn start(sample: &Sample) -> QuietWindow {
        QuietWindow {
            start: sample.threads.clone(),
        }
    }

    /// Whether an app thread at the window's start had a timer the call clock could not date
    /// (the settle's rule is then `app_idle_undated_timer`).
    pub(crate) fn undated(&self) -> bool {
        self.start
            .iter()
            .any(|thread| thread.undated && !thread.server)
    }

    /// Judges the asleep `sample` against the window's start (both sorted by tid).
    pub(crate) fn judge(&self, sample: &Sample) -> Judgement {
        if self.start.len() != sample.threads.len() {
            return Judgement::Disturbed;
        }
        let mut pending = false;
        let mut ticking = false;
        for (then, now) in self.start.iter().zip(&sample.threads) {
            if then.tid != now.tid {
                return Judgement::Disturbed;
            }
            let ran = now.switches != then.switches;
            if ran && !then.timer_soon && !then.server {
                return Judgement::Disturbed;
            }
            pending |= then.timer_soon && !then.server && !ran;
            ticking |= then.timer_soon && !then.server;
        }
        match (pending, ticking) {
            (true, _) => Judgement::TimerPending,
            (false, true) => Judgement::QuietTicking,
            (false, false) => Judgement::Quiet,
        }
    }
}

impl IdleWatch {
    /// Creates the damage object on `root`; `None` when the server has no DAMAGE extension (the
    /// settle then samples frames, as at the handoff).
    pub(crate) fn new(conn: &RustConnection, root: Window) -> Option<IdleWatch> {
        let create = || -> Result<damage::Damage, String> {
            conn.extension_information(damage::X11_EXTENSION_NAME)
                .map_err(|error| error.to_string())?
                .ok_or("the X server has no DAMAGE extension")?;
            conn.damage_query_version(1, 1)
                .map_err(|error| error.to_string())?
                .reply()
                .map_err(|error| error.to_string())?;
            let damage = conn.generate_id().map_err(|error| error.to_string())?;
            conn.damage_create(damage, root, ReportLevel::NON_EMPTY)
                .map_err(|error| error.to_string())?
                .check()
                .map_err(|error| error.to_string())?;
            Ok(damage)
        };
        let damage = match create() {
            Ok(damage) => damage,
            Err(reason) => {
                tracing::warn!(%reason, "no damage signal: settle waits sample frames");
                return None;
            }
        };
        let server = rustix::net::sockopt::socket_peercred(conn.stream())
            .ok()
            .and_then(|cred| u32::try_from(cred.pid.as_raw_nonzero().get()).ok());
        let diag = SockDiag::open()
            .map_err(|reason| tracing::warn!(%reason, "no socket-queue signal"))
            .ok();
        Some(IdleWatch {
            damage,
            diag,
            server,
            pids: Vec::new(),
            unavailable: None,
            calls: CallClock::default(),
        })
    }

    /// Before an action's input: forgets damage so far and lists the processes to watch.
    pub(crate) fn arm(&mut self, conn: &RustConnection) -> Result<(), X11Error> {
        conn.damage_subtract(self.damage, x11rb::NONE, x11rb::NONE)
            .map_err(X11Error::conn("reset the damage object"))?;
        self.unavailable = None;
        self.calls.forget_older_than(FORGET_AFTER, Instant::now());
        self.pids = match (self.server, self.diag.is_some()) {
            (None, _) => {
                self.unavailable = Some("the X server's pid is unknown".into());
                Vec::new()
            }
            (Some(_), false) => {
                self.unavailable = Some("socket queues cannot be read".into());
                Vec::new()
            }
            (Some(server), true) => match client_pids(conn) {
                Ok(mut pids) => {
                    let me = std::process::id();
                    pids.retain(|pid| *pid != me && *pid != server);
                    pids.push(server);
                    pids.sort_unstable();
                    pids.dedup();
                    pids
                }
                Err(reason) => {
                    self.unavailable = Some(reason);
                    Vec::new()
                }
            },
        };
        // The round trip above (or this one) orders the subtract before what we drain.
        conn.get_input_focus()
            .map_err(X11Error::conn("arm the settle"))?
            .reply()
            .map_err(X11Error::reply("arm the settle"))?;
        self.drain(conn)?;
        Ok(())
    }

    /// Why the idle rule cannot decide this wait.
    pub(crate) fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Marks the idle rule unavailable for this wait.
    pub(crate) fn give_up(&mut self, reason: String) {
        self.unavailable = Some(reason);
    }

    /// Whether damage arrived since the last call (events already received; no round trip).
    pub(crate) fn damaged(&mut self, conn: &RustConnection) -> Result<bool, X11Error> {
        let damaged = self.drain(conn)?;
        if damaged {
            conn.damage_subtract(self.damage, x11rb::NONE, x11rb::NONE)
                .map_err(X11Error::conn("reset the damage object"))?;
            conn.flush()
                .map_err(X11Error::conn("reset the damage object"))?;
        }
        Ok(damaged)
    }

    /// Whether damage arrived up to now, after a round trip: every drawing the server did
    /// before this call is counted.
    pub(crate) fn damaged_until_now(&mut self, conn: &RustConnection) -> Result<bool, X11Error> {
        conn.get_input_focus()
            .map_err(X11Error::conn("confirm the settled frame"))?
            .reply()
            .map_err(X11Error::reply("confirm the settled frame"))?;
        self.damaged(conn)
    }

    /// Reads every received event; true when one was this watch's damage.
    fn drain(&self, conn: &RustConnection) -> Result<bool, X11Error> {
        let mut damaged = false;
        while let Some(event) = conn
            .poll_for_event()
            .map_err(X11Error::conn("read damage events"))?
        {
            if let Event::DamageNotify(notify) = event {
                damaged |= notify.damage == self.damage;
            }
        }
        Ok(damaged)
    }

    /// Samples the watched processes; `Err` names the signal that could not be read.
    ///
    /// Stops at the first busy thread of an app (the sample then only says "busy", and whether
    /// that thread was running); a busy X server is noted and the apps are read on. Sockets
    /// are read last, when every thread sleeps: a busy desktop costs a few `/proc` reads per
    /// sample.
    pub(crate) fn sample(&mut self) -> Result<Sample, String> {
        let diag = self.diag.as_mut().ok_or("socket queues cannot be read")?;
        let mut threads = Vec::new();
        let mut alive = Vec::with_capacity(self.pids.len());
        // A busy X server does not end the sample: an app may be computing behind it.
        let mut server_busy = None;
        for &pid in &self.pids {
            let server = Some(pid) == self.server;
            match read_threads(pid, server, &mut self.calls, &mut threads)? {
                Threads::Gone => {}
                Threads::Asleep => alive.push(pid),
                Threads::Busy { reason, .. } if server => server_busy = Some(reason),
                Threads::Busy { reason, running } => {
                    return Ok(Sample {
                        asleep: false,
                        threads,
                        busy: Some(reason),
                        running,
                    });
                }
            }
        }
        if let Some(reason) = server_busy {
            return Ok(Sample {
                asleep: false,
                threads,
                busy: Some(reason),
                running: false,
            });
        }
        let queues = diag.unix_queues()?;
        let mut busy = None;
        for pid in alive {
            let unread = socket_inodes(&format!("/proc/{pid}"))?
                .iter()
                .find_map(|inode| queues.get(inode).copied().filter(|len| *len > 0));
            if let Some(len) = unread {
                busy = Some(format!("pid {pid} has {len} unread bytes"));
                break;
            }
        }
        threads.sort_unstable_by_key(|thread| thread.tid);
        Ok(Sample {
            asleep: busy.is_none(),
            threads,
            busy,
            running: false,
        })
    }
}

/// Every local client's pid, from X-Resource.
fn client_pids(conn: &RustConnection) -> Result<Vec<u32>, String> {
    conn.extension_information(res::X11_EXTENSION_NAME)
        .map_err(|error| error.to_string())?
        .ok_or("the X server has no X-Resource extension")?;
    let spec = ClientIdSpec {
        client: 0,
        mask: ClientIdMask::LOCAL_CLIENT_PID,
    };
    let reply = res::query_client_ids(conn, &[spec])
        .map_err(|error| error.to_string())?
        .reply()
        .map_err(|error| format!("X-Resource client ids: {error}"))?;
    Ok(reply
        .ids
        .iter()
        .filter(|id| id.spec.mask == ClientIdMask::LOCAL_CLIENT_PID)
        .filter_map(|id| id.value.first().copied())
        .collect())
}

/// What [`read_threads`] found of one process.
enum Threads {
    /// The process is gone.
    Gone,
    /// Every thread sleeps in a call whose timeout is known.
    Asleep,
    /// Why it is not asleep, and whether a thread of an app was running.
    Busy { reason: String, running: bool },
}

/// Appends the threads of `/proc/<pid>` to `threads`, stopping at the first that is not
/// asleep; `calls` dates their calls.
fn read_threads(
    pid: u32,
    server: bool,
    calls: &mut CallClock,
    threads: &mut Vec<ThreadSample>,
) -> Result<Threads, String> {
    let base = format!("/proc/{pid}");
    let tasks = match std::fs::read_dir(format!("{base}/task")) {
        Ok(tasks) => tasks,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Threads::Gone),
        Err(error) => return Err(format!("read {base}/task: {error}")),
    };
    // A thread that exits between the listing and a read is no longer a thread; any other
    // failure to read is a signal we cannot read.
    let read = |path: &std::path::Path| match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(_) if !path.exists() => Ok(None),
        Err(error) => Err(format!("read {}: {error}", path.display())),
    };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|name| name.parse().ok()) else {
            continue;
        };
        match read_thread(&base, tid, &task.path(), calls, &read)? {
            None => {}
            Some(Ok((wake, slept, switches))) => {
                let due = |timeout| slept.due(timeout, TIMER_HORIZON_MS);
                let (timer_soon, undated) = match wake {
                    Wake::Due(ms) => (ms <= TIMER_HORIZON_MS, false),
                    Wake::Within(timeout) => match due(timeout) {
                        TimerDue::Soon => (true, false),
                        TimerDue::Later => (false, false),
                        TimerDue::Undated => (false, true),
                    },
                    _ => (false, false),
                };
                threads.push(ThreadSample {
                    tid,
                    switches,
                    timer_soon,
                    server,
                    undated,
                });
            }
            Some(Err(NotAsleep { why, running })) => {
                return Ok(Threads::Busy {
                    reason: format!("thread {tid} of pid {pid} {why}"),
                    running: running && !server,
                });
            }
        }
    }
    Ok(Threads::Asleep)
}

/// One thread read by [`read_thread`].
type ThreadRead = Option<Result<(Wake, Slept, u64), NotAsleep>>;

/// Why a thread is not asleep in a call with a known timeout.
#[derive(Debug)]
struct NotAsleep {
    why: String,
    /// On a CPU or runnable: state `R`, or in no call at all.
    running: bool,
}

/// Reads one thread of the process at `base` (`path` is its task directory) and dates its
/// call: `None` when it is gone, `Err` saying why it is not asleep in a call with a known
/// timeout, else when the call returns on its own ([`Wake::Never`], [`Wake::Within`] or
/// [`Wake::Due`]), how long it has been in it and its context switches.
fn read_thread(
    base: &str,
    tid: u32,
    path: &std::path::Path,
    calls: &mut CallClock,
    read: &dyn Fn(&std::path::Path) -> Result<Option<String>, String>,
) -> Result<ThreadRead, String> {
    let Some(status) = read(&path.join("status"))? else {
        return Ok(None);
    };
    let state =
        parse_status(&status).ok_or_else(|| format!("unreadable {}/status", path.display()))?;
    if state.state != 'S' {
        let (switches, state) = (state.switches, state.state);
        calls.observe(tid, switches, &format!("state {state}"), Instant::now());
        return Ok(Some(Err(NotAsleep {
            why: format!("is in state {state}"),
            running: state == 'R',
        })));
    }
    let Some(syscall) = read(&path.join("syscall"))? else {
        return Ok(None);
    };
    let slept = calls.observe(tid, state.switches, &syscall, Instant::now());
    Ok(Some(
        match parse_syscall(&syscall).map(|wake| resolve(base, wake)) {
            Some(wake @ (Wake::Never | Wake::Within(_) | Wake::Due(_))) => {
                Ok((wake, slept, state.switches))
            }
            Some(Wake::Unknown | Wake::Pointer { .. }) => {
                let call = syscall.split_whitespace().next().unwrap_or("?");
                Err(NotAsleep {
                    why: format!("waits in call {call}"),
                    running: false,
                })
            }
            None => Err(NotAsleep {
                why: "is running".to_owned(),
                running: true,
            }),
        },
    ))
}

/// Reads a timeout the call's argument points to from the process's memory (the thread's
/// own copy of the argument, written before the call); unreadable stays [`Wake::Unknown`].
fn resolve(base: &str, wake: Wake) -> Wake {
    use std::os::unix::fs::FileExt as _;
    let Wake::Pointer { address, kind } = wake else {
        return wake;
    };
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open(format!("{base}/mem"))
        .and_then(|mem| mem.read_exact_at(&mut bytes, address));
    if read.is_err() {
        return Wake::Unknown;
    }
    let clock_ms = |id| {
        let now = rustix::time::clock_gettime(id);
        u64::try_from(now.tv_sec)
            .unwrap_or(0)
            .saturating_mul(1_000)
            .saturating_add(u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000_000)
    };
    // Only a deadline needs the time: the clock it is on, read once.
    let now_ms = match kind {
        Timeout::MonotonicDeadline => clock_ms(rustix::time::ClockId::Monotonic),
        Timeout::RealtimeDeadline => clock_ms(rustix::time::ClockId::Realtime),
        Timeout::Timespec | Timeout::Timeval => 0,
    };
    kind.wake(bytes, now_ms).unwrap_or(Wake::Unknown)
}

/// Inodes of the sockets among a process's descriptors.
fn socket_inodes(base: &str) -> Result<HashSet<u64>, String> {
    let fds = match std::fs::read_dir(format!("{base}/fd")) {
        Ok(fds) => fds,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(error) => return Err(format!("read {base}/fd: {error}")),
    };
    Ok(fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: u32, switches: u64, timer_soon: bool, server: bool) -> ThreadSample {
        ThreadSample {
            tid,
            switches,
            timer_soon,
            server,
            undated: false,
        }
    }

    fn sample(threads: Vec<ThreadSample>) -> Sample {
        Sample {
            asleep: true,
            threads,
            busy: None,
            running: false,
        }
    }

    #[test]
    fn a_window_is_quiet_only_when_due_timers_fired_and_nothing_else_ran() {
        // The app's main thread has a 40 ms tick; a second app thread waits for events; the
        // server's thread has its own timers.
        let start = sample(vec![
            thread(10, 100, true, false),
            thread(11, 5, false, false),
            thread(20, 700, true, true),
        ]);
        let window = QuietWindow::start(&start);
        assert_eq!(window.judge(&start), Judgement::TimerPending);
        let ticked = sample(vec![
            thread(10, 102, true, false),
            thread(11, 5, false, false),
            thread(20, 703, false, true),
        ]);
        assert_eq!(window.judge(&ticked), Judgement::QuietTicking);
        let other_ran = sample(vec![
            thread(10, 102, true, false),
            thread(11, 6, false, false),
            thread(20, 703, false, true),
        ]);
        assert_eq!(window.judge(&other_ran), Judgement::Disturbed);
        let new_thread = sample(vec![
            thread(10, 102, true, false),
            thread(11, 5, false, false),
            thread(12, 1, false, false),
            thread(20, 703, false, true),
        ]);
        assert_eq!(window.judge(&new_thread), Judgement::Disturbed);
        let no_timers = QuietWindow::start(&sample(vec![thread(11, 5, false, false)]));
        assert_eq!(
            no_timers.judge(&sample(vec![thread(11, 5, false, false)])),
            Judgement::Quiet
        );
    }
}
