//! One thread's state from `/proc/<pid>/task/<tid>/{status,syscall}`: whether it is blocked,
//! in which call, when that call would return on its own, and how often it has run.
//!
//! Pure parsers, unit-tested on text captured from real threads; the reading is in `idle.rs`,
//! the dating of a call in `calls.rs`.

/// When a blocked call returns on its own (without input arriving).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Never: it waits for an event (a socket, a futex without timeout).
    Never,
    /// Within this many milliseconds of the call's start (a relative timeout: a timer of the
    /// app's event loop); how much of it is left depends on how long the call has lasted.
    Within(u64),
    /// Within this many milliseconds from now (a deadline, read against its clock).
    Due(u64),
    /// At a timeout the call's argument points to, in the thread's memory.
    Pointer {
        /// Its address.
        address: u64,
        /// How to read it.
        kind: Timeout,
    },
    /// A call whose timeout we do not know.
    Unknown,
}

/// The shape of a timeout in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timeout {
    /// A `struct timespec` relative to the call.
    Timespec,
    /// A `struct timeval` relative to the call.
    Timeval,
    /// A `struct timespec` on `CLOCK_MONOTONIC`.
    MonotonicDeadline,
    /// A `struct timespec` on `CLOCK_REALTIME`.
    RealtimeDeadline,
}

impl Timeout {
    /// When the call returns on its own, from the 16 bytes at the timeout's address: relative
    /// kinds [`Wake::Within`] of the call's start, deadline kinds [`Wake::Due`] from `now_ms`
    /// (read on the deadline's clock); `None` when the bytes are not a valid time.
    pub(crate) fn wake(self, bytes: [u8; 16], now_ms: u64) -> Option<Wake> {
        let ms = self.remaining_ms(bytes, now_ms)?;
        Some(match self {
            Timeout::Timespec | Timeout::Timeval => Wake::Within(ms),
            Timeout::MonotonicDeadline | Timeout::RealtimeDeadline => Wake::Due(ms),
        })
    }

    /// Milliseconds from the call (or from `now_ms`, read on the deadline's clock, for the
    /// deadline kinds) until the timeout, from the 16 bytes at its address; `None` when they
    /// are not a valid time.
    pub(crate) fn remaining_ms(self, bytes: [u8; 16], now_ms: u64) -> Option<u64> {
        let seconds = i64::from_ne_bytes(bytes[..8].try_into().ok()?);
        let fraction = i64::from_ne_bytes(bytes[8..].try_into().ok()?);
        let seconds = u64::try_from(seconds).ok()?;
        let fraction = u64::try_from(fraction).ok()?;
        let fraction_ms = match self {
            Timeout::Timeval if fraction < 1_000_000 => fraction / 1_000,
            Timeout::Timeval => return None,
            _ if fraction < 1_000_000_000 => fraction / 1_000_000,
            _ => return None,
        };
        let at_ms = seconds.checked_mul(1_000)?.checked_add(fraction_ms)?;
        Some(match self {
            Timeout::Timespec | Timeout::Timeval => at_ms,
            Timeout::MonotonicDeadline | Timeout::RealtimeDeadline => at_ms.saturating_sub(now_ms),
        })
    }
}

/// What a thread is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadState {
    /// `State:` of `status` (`S` sleeping, `R` running, `D` disk wait, ...).
    pub(crate) state: char,
    /// Voluntary plus involuntary context switches: unchanged means it did not run between.
    pub(crate) switches: u64,
}

/// Parses `State:` and the context-switch counters of a `status` file.
pub(crate) fn parse_status(text: &str) -> Option<ThreadState> {
    let mut state = None;
    let mut switches = 0u64;
    let mut counters = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("State:") {
            state = rest.trim().chars().next();
        } else if let Some(rest) = line
            .strip_prefix("voluntary_ctxt_switches:")
            .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
        {
            switches = switches.saturating_add(rest.trim().parse::<u64>().ok()?);
            counters += 1;
        }
    }
    (counters == 2).then_some(ThreadState {
        state: state?,
        switches,
    })
}

/// When the call in a `syscall` file returns on its own; `None` when the thread is running.
///
/// The file is `<nr> <arg1> … <arg6> <sp> <pc>` in hexadecimal, or `running`. Timeouts are read
/// for the calls event loops block in (x86-64 numbers); any other call is [`Wake::Unknown`].
pub(crate) fn parse_syscall(text: &str) -> Option<Wake> {
    let mut fields = text.split_whitespace();
    let first = fields.next()?;
    if first == "running" {
        return None;
    }
    let nr: i64 = first.parse().ok()?;
    let args: Vec<u64> = fields
        .take(6)
        .filter_map(|field| u64::from_str_radix(field.trim_start_matches("0x"), 16).ok())
        .collect();
    let arg = |index: usize| args.get(index).copied();
    // A millisecond timeout argument: negative waits forever.
    let millis = |raw: Option<u64>| match raw {
        Some(raw) => {
            // The kernel prints the register; the C argument is an `int`.
            let timeout = raw as u32 as i32;
            if timeout < 0 {
                Wake::Never
            } else {
                Wake::Within(u64::from(timeout.unsigned_abs()))
            }
        }
        None => Wake::Unknown,
    };
    if !cfg!(target_arch = "x86_64") {
        return Some(Wake::Unknown);
    }
    let pointer = |index: usize, kind: Timeout| match arg(index) {
        Some(0) => Wake::Never,
        Some(address) => Wake::Pointer { address, kind },
        None => Wake::Unknown,
    };
    let wake = match nr {
        -1 => Wake::Unknown,
        // read, recvfrom, recvmsg, accept, accept4, wait4, pause: wait for an event.
        0 | 45 | 47 | 43 | 288 | 61 | 34 => Wake::Never,
        // poll(fds, nfds, timeout_ms)
        SYS_POLL => millis(arg(2)),
        // epoll_wait / epoll_pwait(epfd, events, maxevents, timeout_ms, ...)
        232 | 281 => millis(arg(3)),
        // ppoll(fds, nfds, timeout, ...), epoll_pwait2(epfd, events, maxevents, timeout, ...)
        271 => pointer(2, Timeout::Timespec),
        441 => pointer(3, Timeout::Timespec),
        // pselect6 and select: the timeout is the fifth argument.
        270 => pointer(4, Timeout::Timespec),
        23 => pointer(4, Timeout::Timeval),
        // nanosleep(request, remain)
        35 => pointer(0, Timeout::Timespec),
        // clock_nanosleep(clock, flags, request, remain): TIMER_ABSTIME is flag 1.
        230 => match (arg(0), arg(1).map(|flags| flags & 1)) {
            (_, Some(0)) => pointer(2, Timeout::Timespec),
            (Some(0), Some(_)) => pointer(2, Timeout::RealtimeDeadline),
            (Some(1), Some(_)) => pointer(2, Timeout::MonotonicDeadline),
            _ => Wake::Unknown,
        },
        // futex(uaddr, op, val, timeout, ...): FUTEX_WAIT's timeout is relative,
        // FUTEX_WAIT_BITSET's a deadline (monotonic unless FUTEX_CLOCK_REALTIME).
        202 => match arg(1) {
            Some(op) if op & 0x7f == 0 => pointer(3, Timeout::Timespec),
            Some(op) if op & 0x7f == 9 && op & 0x100 != 0 => pointer(3, Timeout::RealtimeDeadline),
            Some(op) if op & 0x7f == 9 => pointer(3, Timeout::MonotonicDeadline),
            _ => Wake::Unknown,
        },
        _ => Wake::Unknown,
    };
    Some(wake)
}

/// `poll` on x86-64.
const SYS_POLL: i64 = 7;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_gives_state_and_switches() {
        let text = "Name:\tlibrecad\nState:\tS (sleeping)\nTgid:\t3364\n\
                    voluntary_ctxt_switches:\t200\nnonvoluntary_ctxt_switches:\t15\n";
        assert_eq!(
            parse_status(text),
            Some(ThreadState {
                state: 'S',
                switches: 215
            })
        );
        assert_eq!(parse_status("State:\tR (running)\n"), None);
    }

    #[test]
    fn event_loop_waits_read_their_timeouts() {
        // Captured from LibreCAD's main thread, its X event reader and Xvfb.
        let main = "7 0x55b172137690 0x1 0x73f2 0x0 0x0 0x0 0x7ffd1f8ab8e0 0x7f0c6711a26f";
        let reader = "7 0x7f0c638b7c48 0x1 0xffffffff 0x0 0x0 0x7ffd1f8ab230 0x7f0c638b7c10 0x7f";
        let server = "232 0x3 0x7ffcba7c1890 0x100 0x923b8 0x40 0x559f7ec83e70 0x7ffc 0x7f3b";
        assert_eq!(parse_syscall(main), Some(Wake::Within(0x73f2)));
        assert_eq!(parse_syscall(reader), Some(Wake::Never));
        assert_eq!(parse_syscall(server), Some(Wake::Within(0x923b8)));
        assert_eq!(parse_syscall("running\n"), None);
        assert_eq!(
            parse_syscall("202 0x7f 0x80 0x0 0x0 0x0 0x0 0x1 0x2"),
            Some(Wake::Never)
        );
        assert_eq!(
            parse_syscall("202 0x7f 0x80 0x0 0x7ffc0 0x0 0x0 0x1 0x2"),
            Some(Wake::Pointer {
                address: 0x7ffc0,
                kind: Timeout::Timespec
            })
        );
        assert_eq!(
            parse_syscall("202 0x7f 0x89 0x0 0x7ffc0 0x0 0x0 0x1 0x2"),
            Some(Wake::Pointer {
                address: 0x7ffc0,
                kind: Timeout::MonotonicDeadline
            })
        );
        assert_eq!(
            parse_syscall("202 0x7f 0x86 0x0 0x7ffc0 0x0 0x0 0x1 0x2"),
            Some(Wake::Unknown)
        );
        assert_eq!(
            parse_syscall("271 0x7ffc 0x1 0x7ff0 0x0 0x8 0x0 0x1 0x2"),
            Some(Wake::Pointer {
                address: 0x7ff0,
                kind: Timeout::Timespec
            })
        );
        assert_eq!(
            parse_syscall("271 0x7ffc 0x1 0x0 0x0 0x8 0x0 0x1 0x2"),
            Some(Wake::Never)
        );
        assert_eq!(
            parse_syscall("99 0x7ffc 0x0 0x0 0x0 0x0 0x0 0x1 0x2"),
            Some(Wake::Unknown)
        );
        assert_eq!(parse_syscall(""), None);
    }

    fn timespec(seconds: i64, fraction: i64) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&seconds.to_ne_bytes());
        bytes[8..].copy_from_slice(&fraction.to_ne_bytes());
        bytes
    }

    #[test]
    fn timeouts_in_memory_read_as_milliseconds() {
        let relative = Timeout::Timespec.remaining_ms(timespec(0, 150_000_000), 99_999);
        assert_eq!(relative, Some(150));
        assert_eq!(
            Timeout::Timeval.remaining_ms(timespec(2, 500_000), 0),
            Some(2_500)
        );
        let deadline = Timeout::MonotonicDeadline.remaining_ms(timespec(10, 0), 9_900);
        assert_eq!(deadline, Some(100));
        let past = Timeout::RealtimeDeadline.remaining_ms(timespec(10, 0), 20_000);
        assert_eq!(past, Some(0));
        assert_eq!(Timeout::Timespec.remaining_ms(timespec(-1, 0), 0), None);
        assert_eq!(
            Timeout::Timespec.remaining_ms(timespec(0, 1_000_000_000), 0),
            None
        );
    }
}
