//! The call clock's tests (`calls.rs`), and a running thread's: real threads of the test
//! process sleeping in `epoll_pwait` and `ppoll` or computing, read through `idle.rs`'s reader
//! as the settle reads them. Apart from `calls.rs` so that the clock itself names neither the
//! reader nor the settle (no module cycle).

use std::time::{Duration, Instant};

use std::sync::mpsc;

use rustix::event::{Timespec, epoll};

use super::calls::*;
use super::read_thread;
use super::thread::Wake;

/// A thread of this process that reports its tid, waits for a go (blocked on a channel,
/// no timeout), then sleeps in `sleep` (a 300 ms relative timeout) until the receiver is
/// dropped.
fn sleeper(sleep: fn()) -> (u32, mpsc::Sender<()>) {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
        tid_tx.send(tid).unwrap();
        if go_rx.recv().is_ok() {
            sleep();
        }
    });
    (tid_rx.recv().unwrap(), go_tx)
}

fn in_epoll_pwait() {
    let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    let mut events = Vec::<epoll::Event>::with_capacity(1);
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: 300_000_000,
    };
    let spare = rustix::buffer::spare_capacity(&mut events);
    epoll::wait(&epoll, spare, Some(&timeout)).unwrap();
}

fn in_ppoll() {
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: 300_000_000,
    };
    rustix::event::poll(&mut [], Some(&timeout)).unwrap();
}

/// Reads thread `tid` of this process as the settle does.
fn read_own(tid: u32, calls: &mut CallClock) -> super::ThreadRead {
    let base = format!("/proc/{}", std::process::id());
    let path = std::path::PathBuf::from(format!("{base}/task/{tid}"));
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .map(Some)
            .map_err(|error| error.to_string())
    };
    read_thread(&base, tid, &path, calls, &read).unwrap()
}

/// Reads the thread as the settle does: asleep, with its `syscall` file.
fn observe(tid: u32, calls: &mut CallClock) -> (Wake, Slept, String) {
    let path = format!("/proc/{}/task/{tid}/syscall", std::process::id());
    let syscall = std::fs::read_to_string(path).unwrap();
    let (wake, slept, _) = read_own(tid, calls).unwrap().unwrap();
    (wake, slept, syscall)
}

/// Waits until the thread is blocked in the call numbered `nr`.
fn wait_for_call(tid: u32, nr: &str) {
    let path = format!("/proc/{}/task/{tid}/syscall", std::process::id());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(&path)
        .unwrap()
        .starts_with(&format!("{nr} "))
    {
        assert!(
            Instant::now() < deadline,
            "the thread never entered call {nr}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The time left of a real 300 ms relative timeout falls as the thread sleeps, and its
/// judgement against a 150 ms horizon turns from later to soon.
fn falls_as_it_sleeps(sleep: fn(), nr: &str) {
    let (tid, go) = sleeper(sleep);
    let mut calls = CallClock::default();
    // Seen blocked on the channel first: the next call's start is then dated.
    std::thread::sleep(Duration::from_millis(20));
    let (wake, _, before) = observe(tid, &mut calls);
    assert_eq!(wake, Wake::Never, "{before}");
    go.send(()).unwrap();
    wait_for_call(tid, nr);
    let (wake, first, syscall) = observe(tid, &mut calls);
    assert_eq!(wake, Wake::Within(300), "{syscall}");
    let (most, least) = first.left_ms(300);
    assert_eq!(most, 300);
    let least = least.expect("a call seen to begin is dated");
    assert!(least <= most, "{least} > {most}");
    assert_eq!(first.due(300, 150), TimerDue::Later, "{first:?}");
    std::thread::sleep(Duration::from_millis(100));
    let (wake, later, syscall) = observe(tid, &mut calls);
    assert_eq!(wake, Wake::Within(300), "the same call: {syscall}");
    let (most_later, least_later) = later.left_ms(300);
    assert!(most_later <= 200, "{later:?}");
    assert!(
        least_later.is_some_and(|least| least <= most_later),
        "{later:?}"
    );
    assert!(later.at_least_ms >= 100, "{later:?}");
    std::thread::sleep(Duration::from_millis(60));
    let (_, last, syscall) = observe(tid, &mut calls);
    // 160 ms or more into the call, 140 or less left: within the horizon.
    assert_eq!(last.due(300, 150), TimerDue::Soon, "{last:?} {syscall}");
    drop(go);
}

#[test]
fn an_epoll_wait_timeout_falls_as_the_thread_sleeps() {
    falls_as_it_sleeps(in_epoll_pwait, "281");
}

#[test]
fn a_ppoll_timeout_falls_as_the_thread_sleeps() {
    falls_as_it_sleeps(in_ppoll, "271");
}

#[test]
fn a_call_begun_before_the_first_sample_is_undated() {
    let (tid, go) = sleeper(in_epoll_pwait);
    go.send(()).unwrap();
    wait_for_call(tid, "281");
    let mut calls = CallClock::default();
    let (wake, first, _) = observe(tid, &mut calls);
    assert_eq!(wake, Wake::Within(300));
    assert_eq!(first.at_most_ms, None);
    // 300 ms at most left, and nothing known of how little: neither soon nor later.
    assert_eq!(first.due(300, 150), TimerDue::Undated);
    assert_eq!(first.due(300, 300), TimerDue::Soon);
    drop(go);
}

#[test]
fn the_clock_dates_calls_from_switches_and_call_lines() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let mut calls = CallClock::default();
    let first = calls.observe(7, 10, "7 0x1 0x1 0x64", at(0));
    assert_eq!(
        first,
        Slept {
            at_least_ms: 0,
            at_most_ms: None
        }
    );
    let same = calls.observe(7, 10, "7 0x1 0x1 0x64", at(40));
    assert_eq!((same.at_least_ms, same.at_most_ms), (40, None));
    assert_eq!(same.left_ms(100), (60, None));
    // It ran: a new call, begun after the sample at 40.
    let new = calls.observe(7, 12, "7 0x1 0x1 0x64", at(45));
    assert_eq!((new.at_least_ms, new.at_most_ms), (0, Some(5)));
    let on = calls.observe(7, 12, "7 0x1 0x1 0x64", at(95));
    assert_eq!((on.at_least_ms, on.at_most_ms), (50, Some(55)));
    assert_eq!(on.left_ms(100), (50, Some(45)));
    assert_eq!(on.due(400, 300), TimerDue::Later);
    assert_eq!(on.due(353, 300), TimerDue::Undated);
    assert_eq!(on.due(350, 300), TimerDue::Soon);
    // Overdue reads as due now.
    assert_eq!(on.left_ms(20), (0, Some(0)));
    calls.forget_older_than(Duration::from_millis(100), at(150));
    assert_eq!(calls.tracked(), 1);
    calls.forget_older_than(Duration::from_millis(50), at(150));
    assert!(calls.tracked() == 0);
}

fn spin_for_a_second() {
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// A thread computing on a CPU is read as running (what holds the quiet-time rule in
/// `settle.rs`); one blocked on the channel is asleep.
#[test]
fn a_thread_on_a_cpu_is_read_as_running_and_a_blocked_one_as_asleep() {
    let (tid, go) = sleeper(spin_for_a_second);
    let mut calls = CallClock::default();
    std::thread::sleep(Duration::from_millis(20));
    let blocked = read_own(tid, &mut calls);
    assert!(matches!(blocked, Some(Ok(_))), "{blocked:?}");
    go.send(()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let spinning = read_own(tid, &mut calls);
    assert!(
        matches!(&spinning, Some(Err(busy)) if busy.running),
        "{spinning:?}"
    );
}
