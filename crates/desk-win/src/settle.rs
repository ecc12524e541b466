//! The settle wait of this slice: sample the screen every [`SAMPLE_MS`] and apply the
//! request's [`SettlePolicy`] to the last change seen (with the default policy: stable 250 ms
//! after the last change, or 400 ms when nothing changed; give up at 2 s). The rule it reports
//! is `quiet_timer` (or `max_wait`): there is no idle signal on Windows yet.

use desk_contract::settle::SettleDecision;
use desk_contract::{SettleOutcome, SettlePolicy, SettleReport, SettleRule};

use crate::encode::changed_pixels;
use crate::error::WinError;
use crate::platform::{Bgrx, Platform};

/// Milliseconds between two settle samples.
pub const SAMPLE_MS: u64 = 20;

/// Waits until the screen settles after input; returns the freshest frame and the report.
/// `before` is the frame captured before the input.
pub fn settle(
    platform: &mut dyn Platform,
    before: &Bgrx,
    policy: &SettlePolicy,
) -> Result<(Bgrx, SettleReport), WinError> {
    let started = platform.now_ms();
    let mut last = before.clone();
    let mut last_change_ms: Option<u64> = None;
    let mut n_samples: u32 = 0;
    loop {
        platform.sleep_ms(SAMPLE_MS);
        let frame = platform.capture()?;
        n_samples = n_samples.saturating_add(1);
        let elapsed_ms = platform.now_ms().saturating_sub(started);
        if frame != last {
            last_change_ms = Some(elapsed_ms);
        }
        last = frame;
        let (outcome, rule) = match policy.decide(elapsed_ms, last_change_ms) {
            SettleDecision::Continue => continue,
            SettleDecision::Settled => (SettleOutcome::Stable, SettleRule::QuietTimer),
            SettleDecision::GiveUp => (SettleOutcome::StillChanging, SettleRule::MaxWait),
        };
        let report = SettleReport {
            outcome,
            wait_ms: elapsed_ms,
            changed_pixels: changed_pixels(before, &last),
            n_samples,
            post_action_visual_stable: outcome == SettleOutcome::Stable,
            rule,
            validation: None,
        };
        return Ok((last, report));
    }
}

/// The report of a wait that was not attempted (`done`) or whose capture failed.
pub fn not_settled(outcome: SettleOutcome) -> SettleReport {
    SettleReport {
        outcome,
        wait_ms: 0,
        changed_pixels: 0,
        n_samples: 0,
        post_action_visual_stable: false,
        rule: SettleRule::NotSettled,
        validation: None,
    }
}
