//! The settle wait: sample raw frames about every 20 ms, note when the screen last changed, and
//! let [`SettlePolicy::decide`] say when to stop.
//!
//! Invariant: settling never fails because the screen kept changing; it gives up with
//! `still_changing` and the freshest frame. Only an X error ends it with an error.

use std::time::{Duration, Instant};

use desk_contract::settle::{SettleDecision, SettleOutcome, SettlePolicy};
use x11rb::rust_connection::RustConnection;

use crate::capture::{Capturer, RawFrame};
use crate::error::X11Error;

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
    /// `stable` or `still_changing`.
    pub(crate) outcome: SettleOutcome,
    /// The freshest frame.
    pub(crate) frame: RawFrame,
    /// Time waited.
    pub(crate) wait_ms: u64,
    /// Frames sampled.
    pub(crate) n_samples: u32,
    /// The PNG of `frame`'s pixels when it was encoded during the quiet wait.
    pub(crate) png: Option<Vec<u8>>,
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
    let mut encoded: Option<Vec<u8>> = None;
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
        let outcome = match decision {
            None => SettleOutcome::Interrupted,
            Some(SettleDecision::Continue) => {
                // Encode while waiting, when a sample interval leaves room for it.
                if encoded.is_none() && Instant::now() + ENCODE_BUDGET < next_sample {
                    encoded = Some(sample.encode_png()?);
                }
                if let Some(replaced) = previous.replace(sample) {
                    capturer.recycle(replaced);
                }
                continue;
            }
            Some(SettleDecision::Settled) => SettleOutcome::Stable,
            Some(SettleDecision::GiveUp) => SettleOutcome::StillChanging,
        };
        if let Some(replaced) = previous.take() {
            capturer.recycle(replaced);
        }
        return Ok(Settled {
            outcome,
            frame: sample,
            wait_ms: elapsed_ms,
            n_samples,
            png: encoded,
        });
    }
}

/// Time a speculative encode may take before the next sample is due.
const ENCODE_BUDGET: Duration = Duration::from_millis(12);

/// Whole milliseconds of a duration, saturating.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
