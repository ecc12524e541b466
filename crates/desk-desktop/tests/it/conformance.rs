//! `FakeDesktop` against the conformance suite (`desk_desktop::conformance`), the same table
//! `LocalDesktop` passes on Xvfb in deskbroker's `tests/it/conformance.rs`; the fake's knob for
//! a screen that never settles; and a broken backend the suite must catch.

use std::path::PathBuf;

use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff, WindowRules};
use desk_contract::{DisplaySize, InputAction, SettleOutcome, SettlePolicy};
use desk_desktop::conformance::{self, Witness};
use desk_desktop::fake::FakeHandle;
use desk_desktop::{AppLaunch, BackendError, DesktopBackend, FakeDesktop};

const DISPLAY: DisplaySize = DisplaySize {
    width: 640,
    height: 400,
};

fn launch() -> AppLaunch {
    AppLaunch {
        argv: vec!["fakeapp".to_string()],
        env: Vec::new(),
        cwd: PathBuf::from("/"),
        window: WindowRules {
            class: None,
            title_prefix: None,
            ready_title_contains: None,
            maximize: true,
            overlays: Vec::new(),
            timeout_ms: 1_000,
            prohibited: Vec::new(),
        },
        settle: SettlePolicy::default(),
    }
}

/// The fake's witness: the recorded actions that inject input.
fn witness(handle: &FakeHandle) -> impl Witness + '_ {
    move || {
        Ok(handle
            .inputs()
            .iter()
            .filter(|action| action.injects_input())
            .count())
    }
}

fn started() -> (FakeDesktop, FakeHandle) {
    let mut desktop = FakeDesktop::new(DISPLAY);
    desktop.start_app(&launch()).unwrap();
    let handle = desktop.handle();
    (desktop, handle)
}

#[test]
fn the_fake_passes_the_action_table() {
    let (mut desktop, handle) = started();
    let result =
        conformance::check_actions(&mut desktop, SettlePolicy::default(), &mut witness(&handle));
    result.unwrap();
    assert_eq!(
        handle.n_inputs(),
        conformance::action_cases(DISPLAY).len(),
        "every case reached the fake once"
    );
}

#[test]
fn the_fake_refuses_points_outside_the_display_before_input() {
    let (mut desktop, handle) = started();
    conformance::check_rejections(&mut desktop, SettlePolicy::default(), &mut witness(&handle))
        .unwrap();
    assert_eq!(handle.n_inputs(), 1, "only the click after the rejections");
}

#[test]
fn the_fake_shuts_down_idempotently_and_detaching_it_shuts_it_down() {
    let (mut desktop, handle) = started();
    conformance::check_shutdown(&mut desktop, SettlePolicy::default(), &mut witness(&handle))
        .unwrap();
    // The fake cannot outlive its process: detaching is shutting down.
    let (mut detached, handle) = started();
    detached.detach();
    assert!(matches!(detached.capture(), Err(BackendError::ShutDown)));
    conformance::check_shutdown(
        &mut detached,
        SettlePolicy::default(),
        &mut witness(&handle),
    )
    .unwrap();
}

/// The settle rule on the fake's virtual clock (20 ms samples): a change at the first sample
/// settles 250 ms later; a screen that never settles gives up at
/// `max_ms` with the freshest frame and `post_action_visual_stable=false`, and settles again
/// once the knob is off.
#[test]
fn the_fake_follows_the_settle_rule_and_can_refuse_to_settle() {
    let (mut desktop, handle) = started();
    let policy = SettlePolicy::default();
    let cases = conformance::action_cases(DISPLAY);
    let click = &cases[0].action;
    let wait = InputAction::Wait { milliseconds: 10 };

    let settled = desktop.execute(click, policy).unwrap().settle;
    assert_eq!(
        (settled.outcome, settled.wait_ms),
        (SettleOutcome::Stable, 280)
    );
    assert!(settled.changed_pixels > 0);
    // The fake app redraws after a wait too; `done` is not settled and changes nothing.
    let redrawn = desktop.execute(&wait, policy).unwrap();
    assert_eq!(
        (redrawn.settle.outcome, redrawn.settle.wait_ms),
        (SettleOutcome::Stable, 280)
    );
    let done = desktop.execute(&InputAction::Done, policy).unwrap();
    assert_eq!(done.settle.outcome, SettleOutcome::Skipped);
    assert_eq!(
        done.frame.unwrap().sha256,
        redrawn.frame.unwrap().sha256,
        "done changes no pixel"
    );
    let before = desktop.capture().unwrap();

    handle.set_never_settles(true);
    for action in [click, &wait] {
        let outcome = desktop.execute(action, policy).unwrap();
        assert_eq!(outcome.settle.outcome, SettleOutcome::StillChanging);
        assert!(!outcome.settle.post_action_visual_stable);
        assert_eq!(outcome.settle.wait_ms, u64::from(policy.max_ms));
        conformance::check_settle("never settles", action, policy, &outcome.settle).unwrap();
        assert_ne!(
            outcome.frame.unwrap().sha256,
            before.sha256,
            "the freshest frame"
        );
    }
    handle.set_never_settles(false);
    let settled = desktop.execute(click, policy).unwrap().settle;
    assert_eq!(settled.outcome, SettleOutcome::Stable);
}

/// A backend that reports a click's events out of order (modifiers before the pointer move, as
/// the fake once did) and settles at once: the suite must fail it.
struct Careless(FakeDesktop);

impl DesktopBackend for Careless {
    fn display_size(&self) -> DisplaySize {
        self.0.display_size()
    }
    fn start_app(&mut self, launch: &AppLaunch) -> Result<Handoff, BackendError> {
        self.0.start_app(launch)
    }
    fn capture(&mut self) -> Result<Frame, BackendError> {
        self.0.capture()
    }
    fn execute(
        &mut self,
        action: &InputAction,
        settle: SettlePolicy,
    ) -> Result<ActionOutcome, BackendError> {
        let mut outcome = self.0.execute(action, settle)?;
        outcome.events.reverse();
        outcome.settle.wait_ms = 0;
        Ok(outcome)
    }
    fn facts(&mut self) -> Result<DesktopFacts, BackendError> {
        self.0.facts()
    }
    fn release_held(&mut self) -> Result<Vec<String>, BackendError> {
        self.0.release_held()
    }
    fn stop_app(&mut self) -> Result<(), BackendError> {
        self.0.stop_app()
    }
    fn shutdown(&mut self) -> Result<(), BackendError> {
        self.0.shutdown()
    }
    fn process_ids(&self) -> Vec<u32> {
        self.0.process_ids()
    }
}

#[test]
fn the_suite_fails_a_backend_that_misreports() {
    let (desktop, handle) = started();
    let mut careless = Careless(desktop);
    let failure = conformance::check_actions(
        &mut careless,
        SettlePolicy::default(),
        &mut witness(&handle),
    )
    .unwrap_err();
    assert_eq!(failure.check, "click", "{failure}");
    let policy = SettlePolicy::default();
    let cases = conformance::action_cases(DISPLAY);
    let mut report = careless.0.execute(&cases[0].action, policy).unwrap().settle;
    report.wait_ms = 0;
    assert!(conformance::check_settle("early", &cases[0].action, policy, &report).is_err());
}
