//! One delivered step, shared by single actions (`actions.rs`) and programs (`program.rs`):
//! [`Submitted`] (a step whose input reached the desktop), its [`step_receipt`], and
//! [`done_outcome`] (the outcome of `done`, a capture with no input). Names neither of the two,
//! so they do not form a module cycle.

use desk_contract::api::{Delivery, Receipt, SettleReceipt};
use desk_contract::desktop::{ActionOutcome, LimitsMode, SandboxMode};
use desk_contract::settle::SettleReport;
use desk_contract::{ActionType, InputAction, SettleOutcome};

use crate::util::now_ms;

/// A step whose input was delivered.
pub(crate) struct Submitted {
    pub(crate) step_index: u64,
    pub(crate) input: InputAction,
    pub(crate) action_type: ActionType,
    pub(crate) intent: String,
    pub(crate) outcome: ActionOutcome,
    /// Microseconds the desktop took for the step: its input, then its observation.
    pub(crate) backend_us: u64,
}

impl Submitted {
    /// Milliseconds the desktop spent observing after the step's input (settle, capture,
    /// encode, diagnostic reads), plus `broker_us` the broker then spent on its screenshot.
    pub(crate) fn observation_ms(&self, broker_us: u64) -> u64 {
        let observed = self
            .backend_us
            .saturating_sub(self.outcome.input_ms.saturating_mul(1000));
        observed.saturating_add(broker_us) / 1000
    }
}

/// The outcome of `done`: a capture, no input.
pub(crate) fn done_outcome(frame: desk_contract::desktop::Frame) -> ActionOutcome {
    let nowhere = desk_contract::desktop::FocusFacts {
        active: None,
        focused: None,
        pointer: desk_contract::ScreenPoint { x: 0, y: 0 },
    };
    ActionOutcome {
        events: Vec::new(),
        focus_before: nowhere.clone(),
        focus_after: Some(nowhere),
        released_after: Vec::new(),
        settle: SettleReport {
            outcome: SettleOutcome::Skipped,
            wait_ms: 0,
            changed_pixels: 0,
            n_samples: 0,
            post_action_visual_stable: false,
            rule: desk_contract::settle::SettleRule::NotSettled,
            validation: None,
        },
        frame: Some(frame),
        input_ms: 0,
        observation_failures: Vec::new(),
        opened_windows: Vec::new(),
    }
}

/// The receipt of one delivered step (a single action is a program's only step).
pub(crate) fn step_receipt(
    step: &Submitted,
    action_index: u64,
    accepted_at_ms: u64,
    sandbox: SandboxMode,
    limits: LimitsMode,
) -> Receipt {
    let input = &step.input;
    let outcome = &step.outcome;
    let done = *input == InputAction::Done;
    let pointer_target = match input {
        InputAction::Click { at, .. } | InputAction::DoubleClick { at, .. } => Some(*at),
        InputAction::Move { to, .. } => Some(*to),
        InputAction::Drag { path, .. } => path.last().copied(),
        _ => None,
    };
    let delivery = match input {
        InputAction::Done => Delivery::Done,
        InputAction::Wait { .. } => Delivery::Waited,
        _ => Delivery::InputInjected,
    };
    Receipt {
        action_index,
        action_type: step.action_type,
        intent: step.intent.clone(),
        delivery,
        sandbox,
        limits,
        n_input_events: u64::try_from(outcome.events.len()).unwrap_or(u64::MAX),
        focus_before: (!done).then(|| outcome.focus_before.clone()),
        focus_after: outcome.focus_after.clone().filter(|_| !done),
        released_after: outcome.released_after.clone(),
        // The worker's failed observations first; the ledger adds its own after them.
        observation_failures: outcome.observation_failures.clone(),
        pointer_target,
        pointer_on_target: pointer_target.and_then(|target| {
            let focus_after = outcome.focus_after.as_ref()?;
            Some(focus_after.pointer == target)
        }),
        settle: SettleReceipt {
            outcome: outcome.settle.outcome,
            wait_ms: outcome.settle.wait_ms,
            changed_pixels: outcome.settle.changed_pixels,
            rule: outcome.settle.rule,
            validation: outcome.settle.validation.clone(),
        },
        post_action_visual_stable: outcome.settle.post_action_visual_stable,
        accepted_at_ms,
        input_ms: outcome.input_ms,
        observation_elapsed_ms: step.observation_ms(0),
        total_ms: now_ms().saturating_sub(accepted_at_ms),
        opened_windows: outcome.opened_windows.clone(),
    }
}
