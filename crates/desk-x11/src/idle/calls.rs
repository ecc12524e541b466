//! [`CallClock`] dates a thread's call from the samples that saw it, so that a relative
//! timeout (`poll`'s and `epoll_wait`'s milliseconds, `ppoll`'s or `nanosleep`'s timespec,
//! which keep the value the call started with) is judged by the time it has left, not the time
//! it had (`docs/settle.md`, "Dating a call").
//!
//! Its tests (`calls_tests.rs`) watch real threads of the test process sleeping in `epoll_pwait`
//! and `ppoll` through `idle.rs`'s reader.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a thread has been in its current call, as the samples saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slept {
    /// Since the first sample that saw it in this call.
    pub(crate) at_least_ms: u64,
    /// Since the last sample that saw it before this call (it ran, or was in another call
    /// then); `None` when no sample saw it before: the call's start is unknown.
    pub(crate) at_most_ms: Option<u64>,
}

/// Whether a relative timeout falls due within a horizon, given how long its call has lasted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerDue {
    /// It may be due within the horizon (or is overdue).
    Soon,
    /// It cannot be due within the horizon.
    Later,
    /// Undated: the call's start was not seen closely enough to tell. Judged by the latest it
    /// can fall due (the timeout less the sleep the samples saw) as before the call clock,
    /// and the settle's rule says so (`app_idle_undated_timer`).
    Undated,
}

impl Slept {
    /// The time left of a `timeout_ms` relative timeout: at most, and (when the start is known)
    /// at least.
    pub(crate) fn left_ms(self, timeout_ms: u64) -> (u64, Option<u64>) {
        let most = timeout_ms.saturating_sub(self.at_least_ms);
        let least = self.at_most_ms.map(|ms| timeout_ms.saturating_sub(ms));
        (most, least)
    }

    /// Judges a `timeout_ms` relative timeout against `horizon_ms`: soon when even its latest
    /// possible time left is within the horizon, later when even its earliest is beyond it.
    pub(crate) fn due(self, timeout_ms: u64, horizon_ms: u64) -> TimerDue {
        match self.left_ms(timeout_ms) {
            (most, _) if most <= horizon_ms => TimerDue::Soon,
            (_, Some(least)) if least > horizon_ms => TimerDue::Later,
            _ => TimerDue::Undated,
        }
    }
}

/// Dates threads' calls from the samples that saw them (`docs/settle.md`, "Dating a call"):
/// a thread whose context switches and `syscall` line are unchanged between two samples did
/// not run between them, so it has been in the same call since the first; one that changed
/// began its call after the previous sample. Kept across settle waits: a thread asleep since
/// an earlier action stays dated.
#[derive(Debug, Default)]
pub(crate) struct CallClock {
    seen: HashMap<u32, Seen>,
}

/// What the samples saw of one thread.
#[derive(Debug)]
struct Seen {
    switches: u64,
    call: String,
    /// The first sample that saw it in this call.
    first: Instant,
    /// The latest sample that saw it.
    last: Instant,
    /// The last sample that saw it before this call.
    before: Option<Instant>,
}

impl CallClock {
    /// Notes thread `tid` seen at `now` with `switches` context switches in `call` (its
    /// `syscall` line, or its state when it is not blocked), and says how long it has been in
    /// that call. A tid reused by a new thread reads as a new call that began after the old
    /// thread was last seen, which is true.
    pub(crate) fn observe(&mut self, tid: u32, switches: u64, call: &str, now: Instant) -> Slept {
        let ms = |since: Instant| millis(now.saturating_duration_since(since));
        match self.seen.get_mut(&tid) {
            Some(seen) if seen.switches == switches && seen.call == call => {
                seen.last = now;
                Slept {
                    at_least_ms: ms(seen.first),
                    at_most_ms: seen.before.map(ms),
                }
            }
            Some(seen) => {
                *seen = Seen {
                    switches,
                    call: call.to_owned(),
                    first: now,
                    last: now,
                    before: Some(seen.last),
                };
                Slept {
                    at_least_ms: 0,
                    at_most_ms: seen.before.map(ms),
                }
            }
            None => {
                self.seen.insert(
                    tid,
                    Seen {
                        switches,
                        call: call.to_owned(),
                        first: now,
                        last: now,
                        before: None,
                    },
                );
                Slept {
                    at_least_ms: 0,
                    at_most_ms: None,
                }
            }
        }
    }

    /// How many threads the clock remembers (tests).
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> usize {
        self.seen.len()
    }

    /// Forgets the threads no sample saw for `age` (gone, or no longer watched).
    pub(crate) fn forget_older_than(&mut self, age: Duration, now: Instant) {
        self.seen
            .retain(|_, seen| now.saturating_duration_since(seen.last) < age);
    }
}

/// Whole milliseconds, saturating (as `settle::millis`, which this module does not name).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
