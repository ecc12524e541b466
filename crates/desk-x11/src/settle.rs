//! The settle waits (`docs/settle.md`).
//!
//! - [`wait_for_idle`], after an action's input when the display has a DAMAGE extension: every
//!   [`IDLE_POLL`] it reads damage and the desktop's idle signals (`idle.rs`); settled when
//!   the desktop stayed idle for [`IDLE_QUIET`] (rule `app_idle`, or `app_idle_undated_timer`
//!   when an app thread's timer could not be dated), or when the quiet-time rule
//!   of [`SettlePolicy::decide`] says so with damage as the change signal (`quiet_timer`). The
//!   frame is captured then and kept only if no damage arrived up to after its capture.
//! - [`wait_for_stable`], at the handoff and without DAMAGE: samples raw frames about every
//!   20 ms, notes when the pixels last changed, and lets [`SettlePolicy::decide`] say when to
//!   stop.
//!
//! Invariant: settling never fails because the screen kept changing; it gives up with
//! `still_changing` (rule `max_wait`) and the freshest frame, bounded by `max_ms`. Only an X
//! error ends it with an error.

use std::time::{Duration, Instant};

use desk_contract::settle::{SettleDecision, SettleOutcome, SettlePolicy, SettleRule};
use x11rb::rust_connection::RustConnection;

use crate::capture::{CapturedPng, Capturer, RawFrame};
use crate::error::X11Error;
use crate::idle::{IdleWatch, Judgement, QuietWindow};

mod validate;

pub(crate) use validate::{classify, validate};

/// Interval between samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(20);

/// A Stop signal for one settle wait: the broker writes the control generation after a Stop
/// to `path` ([`desk_contract::worker::STOP_GENERATION_FILE`]); a wait for an older
/// `generation` ends with `interrupted`.
#[derive(Debug, Clone)]
pub(crate) struct Interrupt {
    pub(crate) path: std::path::PathBuf,
    pub(crate) generation: u64,
}

impl Interrupt {
    /// Whether a Stop advanced the generation past this wait's (a missing or unreadable file:
    /// no).
    pub(crate) fn requested(&self) -> bool {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .is_some_and(|current| current > self.generation)
    }
}

/// What one settle wait observed.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    /// `stable`, `still_changing` or `interrupted`.
    pub(crate) outcome: SettleOutcome,
    /// The rule that ended the wait.
    pub(crate) rule: SettleRule,
    /// The freshest frame.
    pub(crate) frame: RawFrame,
    /// Time waited.
    pub(crate) wait_ms: u64,
    /// Frames sampled.
    pub(crate) n_samples: u32,
    /// The PNG of `frame`'s pixels (hashed during its encode, with `frame`'s capture time)
    /// when it was encoded during the quiet wait.
    pub(crate) png: Option<CapturedPng>,
}

/// Waits for the screen to stop changing, starting from `first` (the frame before the wait);
/// `interrupt` ends it at the next sample after a Stop.
pub(crate) fn wait_for_stable(
    conn: &RustConnection,
    capturer: &mut Capturer,
    policy: &SettlePolicy,
    first: &RawFrame,
    interrupt: Option<&Interrupt>,
) -> Result<Settled, X11Error> {
    let started = Instant::now();
    // The first sample is compared with the borrowed frame before input; no copy of it is made.
    let mut previous: Option<RawFrame> = None;
    let mut last_change_ms: Option<u64> = None;
    let mut n_samples = 0u32;
    let mut next_sample = started + SAMPLE_INTERVAL;
    // Invariant: when `Some`, the PNG of the latest sample's pixels. Settling means the content
    // stopped changing, so the frame finally returned usually has exactly these pixels and its
    // encoding, done while waiting for quiet, is off the critical path.
    let mut encoded: Option<CapturedPng> = None;
    loop {
        let now = Instant::now();
        if next_sample > now {
            std::thread::sleep(next_sample - now);
        }
        next_sample += SAMPLE_INTERVAL;
        let sample = capturer.capture_raw(conn)?;
        n_samples = n_samples.saturating_add(1);
        let elapsed_ms = millis(started.elapsed());
        let changed = sample.differs_from(previous.as_ref().unwrap_or(first));
        if changed {
            last_change_ms = Some(elapsed_ms);
        }
        if changed || previous.is_none() {
            encoded = None;
        }
        let decision = match interrupt {
            Some(interrupt) if interrupt.requested() => None,
            _ => Some(policy.decide(elapsed_ms, last_change_ms)),
        };
        let (outcome, rule) = match decision {
            None => (SettleOutcome::Interrupted, SettleRule::NotSettled),
            Some(SettleDecision::Continue) => {
                // Encode while waiting, when a sample interval leaves room for it.
                if encoded.is_none() && Instant::now() + ENCODE_BUDGET < next_sample {
                    encoded = Some(capturer.encode_png(&sample)?);
                }
                if let Some(replaced) = previous.replace(sample) {
                    capturer.recycle(replaced);
                }
                continue;
            }
            Some(SettleDecision::Settled) => (SettleOutcome::Stable, SettleRule::QuietTimer),
            Some(SettleDecision::GiveUp) => (SettleOutcome::StillChanging, SettleRule::MaxWait),
        };
        if let Some(replaced) = previous.take() {
            capturer.recycle(replaced);
        }
        // Encoded from an earlier sample with the same pixels: this sample's capture time.
        let png = encoded.map(|png| CapturedPng {
            captured_at_ms: sample.captured_at_ms(),
            ..png
        });
        return Ok(Settled {
            outcome,
            rule,
            frame: sample,
            wait_ms: elapsed_ms,
            n_samples,
            png,
        });
    }
}

/// Interval between reads of the idle signals and damage.
pub(crate) const IDLE_POLL: Duration = Duration::from_millis(5);
/// How long the desktop must stay idle, with no thread running and no damage, to be settled.
pub(crate) const IDLE_QUIET: Duration = Duration::from_millis(10);
/// The same when a timer was due soon at the quiet window's start (an app's periodic tick):
/// long enough that a tick that draws only now and then (an animation) is seen drawing.
pub(crate) const TICKING_QUIET: Duration = Duration::from_millis(100);

/// Waits after input until the desktop is idle or the quiet-time rule decides (see the module
/// comment); `watch` was armed before the input.
pub(crate) fn wait_for_idle(
    conn: &RustConnection,
    capturer: &mut Capturer,
    policy: &SettlePolicy,
    watch: &mut IdleWatch,
    interrupt: Option<&Interrupt>,
) -> Result<Settled, X11Error> {
    let started = Instant::now();
    let mut last_change_ms: Option<u64> = None;
    // When the current quiet window began, with every thread then.
    let mut idle_since: Option<(Instant, QuietWindow)> = None;
    let mut last_busy: Option<String> = None;
    // The latest sample found an app thread computing (`Sample::running`).
    let mut app_running = false;
    let mut n_samples = 0u32;
    let mut next_poll = started + IDLE_POLL;
    // Time spent reading the idle signals, and how often: their cost on the desktop's cores.
    let (mut sampling, mut n_polls) = (Duration::ZERO, 0u32);
    loop {
        let now = Instant::now();
        if next_poll > now {
            std::thread::sleep(next_poll - now);
        }
        next_poll += IDLE_POLL;
        let elapsed_ms = millis(started.elapsed());
        if watch.damaged(conn)? {
            last_change_ms = Some(elapsed_ms);
            idle_since = None;
        }
        if interrupt.is_some_and(Interrupt::requested) {
            let frame = capturer.capture_raw(conn)?;
            return Ok(finish(
                frame,
                SettleOutcome::Interrupted,
                SettleRule::NotSettled,
                started,
                n_samples + 1,
            ));
        }
        let mut idle_long_enough = false;
        if watch.unavailable().is_none() {
            let sampled_at = Instant::now();
            let sample = watch.sample();
            sampling += sampled_at.elapsed();
            n_polls = n_polls.saturating_add(1);
            app_running = matches!(&sample, Ok(sample) if sample.running);
            match sample {
                Ok(sample) if sample.asleep => match &idle_since {
                    Some((since, window)) => match window.judge(&sample) {
                        Judgement::Quiet => idle_long_enough = since.elapsed() >= IDLE_QUIET,
                        Judgement::QuietTicking => {
                            idle_long_enough = since.elapsed() >= TICKING_QUIET;
                        }
                        Judgement::TimerPending => last_busy = Some("a timer is due".into()),
                        Judgement::Disturbed => {
                            idle_since = Some((Instant::now(), QuietWindow::start(&sample)));
                        }
                    },
                    None => idle_since = Some((Instant::now(), QuietWindow::start(&sample))),
                },
                Ok(sample) => {
                    idle_since = None;
                    last_busy = sample.busy;
                }
                Err(reason) => {
                    tracing::warn!(%reason, "an idle signal could not be read: this wait uses the quiet-time rule");
                    watch.give_up(reason);
                }
            }
        }
        let rule = match (idle_long_enough, policy.decide(elapsed_ms, last_change_ms)) {
            // A timer the call clock could not date was judged as before it (`idle/calls.rs`).
            (true, _)
                if idle_since
                    .as_ref()
                    .is_some_and(|(_, window)| window.undated()) =>
            {
                SettleRule::AppIdleUndatedTimer
            }
            (true, _) => SettleRule::AppIdle,
            // A quiet screen while the app computes is not settled: a long operation (a boolean
            // of solids, a recompute) paints only when it ends. Up to `max_ms`, then the quiet
            // screen is taken as it is.
            (false, SettleDecision::Settled)
                if app_running && elapsed_ms < u64::from(policy.max_ms) =>
            {
                continue;
            }
            (false, SettleDecision::Settled) => SettleRule::QuietTimer,
            (false, SettleDecision::GiveUp) => {
                let frame = capturer.capture_raw(conn)?;
                return Ok(finish(
                    frame,
                    SettleOutcome::StillChanging,
                    SettleRule::MaxWait,
                    started,
                    n_samples + 1,
                ));
            }
            (false, SettleDecision::Continue) => continue,
        };
        let frame = capturer.capture_raw(conn)?;
        n_samples = n_samples.saturating_add(1);
        if watch.damaged_until_now(conn)? {
            // Drawn while or just before it was captured: not the settled frame.
            capturer.recycle(frame);
            last_change_ms = Some(millis(started.elapsed()));
            idle_since = None;
            continue;
        }
        tracing::debug!(
            rule = rule.as_str(),
            wait_ms = millis(started.elapsed()),
            n_polls,
            sampling_us = sampling.as_micros(),
            unavailable = watch.unavailable(),
            busy = last_busy.as_deref(),
            "settled"
        );
        return Ok(finish(
            frame,
            SettleOutcome::Stable,
            rule,
            started,
            n_samples,
        ));
    }
}

fn finish(
    frame: RawFrame,
    outcome: SettleOutcome,
    rule: SettleRule,
    started: Instant,
    n_samples: u32,
) -> Settled {
    Settled {
        outcome,
        rule,
        frame,
        wait_ms: millis(started.elapsed()),
        n_samples,
        png: None,
    }
}

/// Time a speculative encode may take before the next sample is due.
const ENCODE_BUDGET: Duration = Duration::from_millis(12);

/// Whole milliseconds of a duration, saturating.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
