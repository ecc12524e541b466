//! The settle decision: when has the screen stopped changing after input?
//!
//! Pure logic shared by every backend: settled 250 ms after the last change once a change was
//! seen, or after 400 ms when nothing changed; still changing at 2 s. Settling never retries or
//! fails a delivered action.

use serde::{Deserialize, Serialize};

/// Timing of the settle decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettlePolicy {
    /// Quiet time needed after the last change, once a change was seen.
    pub quiet_after_change_ms: u32,
    /// Quiet time needed when nothing changed at all.
    pub quiet_without_change_ms: u32,
    /// Give up after this long and return the freshest frame.
    pub max_ms: u32,
    /// Validation mode (`docs/settle.md`): after a stable wait, look again this long after it
    /// and report in [`SettleReport::validation`] whether the screen still changed; the
    /// returned frame stays the settled one. 0 (the default): off.
    #[serde(default)]
    pub validate_ms: u32,
    /// With [`SettlePolicy::validate_ms`], validate one action in this many: the session's
    /// actions 0, N, 2N, … ([`SettlePolicy::for_action`]), so that every task's first action
    /// is among them. 0 (the default) and 1: every action.
    #[serde(default)]
    pub validate_every: u32,
}

impl Default for SettlePolicy {
    fn default() -> Self {
        SettlePolicy {
            quiet_after_change_ms: 250,
            quiet_without_change_ms: 400,
            max_ms: 2_000,
            validate_ms: 0,
            validate_every: 0,
        }
    }
}

crate::wire_enum! {
    /// What a settle wait concluded.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum SettleOutcome {
        /// The screen was quiet for the required time.
        Stable = "stable",
        /// The screen still changed when the wait gave up.
        StillChanging = "still_changing",
        /// No frames could be compared.
        Unavailable = "unavailable",
        /// Settling was not attempted (e.g. `done`).
        Skipped = "skipped",
        /// Cancellation or release interrupted the wait.
        Interrupted = "interrupted",
    }
}

crate::wire_enum! {
    /// Which rule ended a settle wait (`docs/settle.md`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum SettleRule {
        /// The desktop went idle: the X server had processed the input, every X client and the
        /// server had read all their sockets, their threads were blocked with no timer due
        /// soon and no context switch for a quiet time, and no damage arrived through the
        /// capture.
        AppIdle = "app_idle",
        /// [`SettleRule::AppIdle`], except that an app thread's relative timeout (`poll`,
        /// `epoll_wait`, …) could not be dated: its call began before any sample saw the thread,
        /// so it was judged by the timeout less the sleep the samples saw, which can make it
        /// look later than it is (`docs/settle.md`, "Dating a call").
        AppIdleUndatedTimer = "app_idle_undated_timer",
        /// The quiet-time rule of [`SettlePolicy`] (an idle signal was unavailable or the
        /// desktop never went idle before it).
        QuietTimer = "quiet_timer",
        /// [`SettlePolicy::max_ms`] passed while the screen kept changing.
        MaxWait = "max_wait",
        /// No rule decided: the wait was skipped, interrupted or its capture failed.
        NotSettled = "not_settled",
    }
}

impl SettleRule {
    /// Whether the idle rule decided: [`SettleRule::AppIdle`], or the same rule with a timer it
    /// could not date ([`SettleRule::AppIdleUndatedTimer`]; which of the two depends on when
    /// the app's threads began their calls, not on the screen).
    pub fn is_app_idle(self) -> bool {
        matches!(self, SettleRule::AppIdle | SettleRule::AppIdleUndatedTimer)
    }
}

/// The decision at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleDecision {
    /// Keep sampling.
    Continue,
    /// Quiet long enough.
    Settled,
    /// Out of time while changes continued.
    GiveUp,
}

impl SettlePolicy {
    /// The policy for the session's action `action_index`: validation stays on only for the
    /// actions [`SettlePolicy::validate_every`] samples (deterministic: by index alone).
    pub fn for_action(self, action_index: u64) -> SettlePolicy {
        let every = u64::from(self.validate_every.max(1));
        if action_index.is_multiple_of(every) {
            self
        } else {
            SettlePolicy {
                validate_ms: 0,
                ..self
            }
        }
    }

    /// Decides at `elapsed_ms` after input, given when the last change was seen (if ever).
    pub fn decide(&self, elapsed_ms: u64, last_change_ms: Option<u64>) -> SettleDecision {
        let quiet_enough = match last_change_ms {
            Some(changed_at) => {
                elapsed_ms.saturating_sub(changed_at) >= u64::from(self.quiet_after_change_ms)
            }
            None => elapsed_ms >= u64::from(self.quiet_without_change_ms),
        };
        if quiet_enough {
            SettleDecision::Settled
        } else if elapsed_ms >= u64::from(self.max_ms) {
            SettleDecision::GiveUp
        } else {
            SettleDecision::Continue
        }
    }
}

/// What the settle wait after one action observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SettleReport {
    /// The conclusion.
    pub outcome: SettleOutcome,
    /// Time spent waiting after input, in milliseconds.
    pub wait_ms: u64,
    /// Pixels that differ between the frame before input and the returned frame.
    pub changed_pixels: u64,
    /// Frames sampled during the wait.
    pub n_samples: u32,
    /// True only when `outcome` is `stable`.
    pub post_action_visual_stable: bool,
    /// The rule that ended the wait.
    pub rule: SettleRule,
    /// With [`SettlePolicy::validate_ms`]: the later look at the screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<SettleValidation>,
}

/// The screen a while after a stable settle, compared with the settled frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SettleValidation {
    /// Milliseconds after the settle's end of the later frame.
    pub after_ms: u64,
    /// Pixels that differ between the settled and the later frame.
    pub changed_pixels: u64,
    /// The smallest rectangle holding them, `[x, y, width, height]` (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_box: Option<[u32; 4]>,
    /// What the change looks like (absent from workers that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ValidationKind>,
}

crate::wire_enum! {
    /// What changed between the settled and the later frame, told by the change's geometry
    /// and the windows that appeared meanwhile (`docs/settle.md`, "Validation mode").
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ValidationKind {
        /// Nothing changed.
        Same = "same",
        /// A change at most 3 pixels wide and 40 high: a blinking text cursor.
        Caret = "caret",
        /// A new popup window (override-redirect or utility) holds the change: a tooltip (with
        /// the windows unknown: a small box near the pointer).
        Tooltip = "tooltip",
        /// A new dialog or other top-level window holds the change (with the windows unknown:
        /// a dialog-sized box centred on the screen).
        Dialog = "dialog",
        /// A thin band at the bottom of the screen: a status bar message.
        StatusBar = "status_bar",
        /// An eighth of the screen or more repainted in place.
        LargeRedraw = "large_redraw",
        /// Anything else.
        Other = "other",
    }
}

impl SettleValidation {
    /// Whether the later frame equals the settled one outside a caret's rectangle (a change
    /// at most 3 pixels wide and 40 high: a blinking text cursor).
    pub fn same_but_caret(&self) -> bool {
        match self.changed_box {
            None => self.changed_pixels == 0,
            Some([_, _, width, height]) => width <= 3 && height <= 40,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_samples_every_nth_action_from_the_first() {
        let every_third = SettlePolicy {
            validate_ms: 1_000,
            validate_every: 3,
            ..SettlePolicy::default()
        };
        let validated: Vec<u64> = (0..8)
            .filter(|index| every_third.for_action(*index).validate_ms > 0)
            .collect();
        assert_eq!(validated, [0, 3, 6]);
        assert_eq!(every_third.for_action(4).max_ms, every_third.max_ms);
        for every in [0, 1] {
            let all = SettlePolicy {
                validate_every: every,
                ..every_third
            };
            assert!((0..5).all(|index| all.for_action(index) == all));
        }
        // Off stays off.
        let off = SettlePolicy::default();
        assert_eq!(off.for_action(0), off);
        // Older workers' policies (no validate_every) still read.
        let old: SettlePolicy = serde_json::from_str(
            r#"{"quiet_after_change_ms":250,"quiet_without_change_ms":400,"max_ms":2000,"validate_ms":5}"#,
        )
        .unwrap();
        assert_eq!(old.validate_every, 0);
    }
}
