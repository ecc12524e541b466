//! `FakeDesktop` against the conformance suite (`desk_desktop::conformance`), the same cases
//! `LocalDesktop` passes on Xvfb in deskbroker's `tests/it/conformance.rs`, run whole twice
//! (as `serve --backend fake` makes it, and with accessibility on and the clipboard off, so
//! that each case passes once); the suite's case list held to the trait's methods in
//! `backend.rs`; the fake's knob for a screen that never settles; and a broken backend the
//! suite must catch.

use std::path::PathBuf;

use desk_contract::desktop::{ActionOutcome, DesktopFacts, Frame, Handoff, WindowRules};
use desk_contract::{DisplaySize, InputAction, SettleOutcome, SettlePolicy};
use desk_desktop::conformance::{self, Report, Witness};
use desk_desktop::fake::FakeHandle;
use desk_desktop::{AppLaunch, BackendError, DesktopBackend, FakeDesktop, SessionControl};

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

/// The whole suite on one fake, in the order the real run uses; the fake is accessible only
/// while the second app (after `stop_app`) runs, as the real run's GTK fixture is.
fn run_suite(handle: &FakeHandle) -> Result<Report, conformance::Failure> {
    let policy = SettlePolicy::default();
    let mut report = Report::new();
    let mut desktop: Box<dyn DesktopBackend> =
        Box::new(FakeDesktop::with_handle(DISPLAY, handle.clone()));
    let witness = &mut witness(handle);
    let accessible_later = desktop.capabilities().accessibility;
    handle.set_accessible(false);
    conformance::check_handoff(
        desktop.as_mut(),
        &launch(),
        conformance::HANDOFF,
        &mut report,
    )?;
    conformance::check_observations(desktop.as_mut(), witness, &mut report)?;
    conformance::check_actions(desktop.as_mut(), policy, witness, &mut report)?;
    conformance::check_stop(desktop.as_mut(), policy, witness, &mut report)?;
    conformance::check_clipboard(desktop.as_mut(), witness, &mut report)?;
    conformance::check_accessibility_refused(desktop.as_mut(), &mut report)?;
    conformance::check_rejections(desktop.as_mut(), policy, witness, &mut report)?;
    handle.set_accessible(accessible_later);
    conformance::check_stop_app(desktop.as_mut(), &launch(), &mut report)?;
    conformance::check_accessibility(desktop.as_mut(), &mut report)?;
    let mut desktop = conformance::check_detach(
        desktop,
        policy,
        || Err("the fake declares no detach: never reattached".to_string()),
        &mut report,
    )?;
    conformance::check_shutdown(desktop.as_mut(), policy, witness, &mut report)?;
    report.check_complete()?;
    Ok(report)
}

#[test]
fn the_fake_passes_the_whole_suite_as_served_and_with_its_other_capabilities() {
    // As `serve --backend fake` makes it: a clipboard, no accessibility.
    let served = FakeHandle::default();
    let report = run_suite(&served).unwrap_or_else(|failure| panic!("{failure}"));
    println!("{report}");
    assert_eq!(
        report.skipped(),
        vec![
            ("clipboard unavailable", "the backend declares a clipboard"),
            (
                "accessibility snapshot",
                "the backend declares no accessibility"
            ),
            (
                "accessibility truncation",
                "the backend declares no accessibility"
            ),
        ]
    );
    assert_eq!(
        served.clipboard().as_deref(),
        Some("conformance \u{2713} clipboard")
    );
    assert_eq!(
        served.n_snapshots(),
        0,
        "refused snapshots are not answered"
    );

    // Accessible (once the second app runs), listing its windows, without a clipboard.
    let other = FakeHandle::default();
    other.set_accessible(true);
    other.set_lists_windows(true);
    other.set_clipboard_unavailable(true);
    let report = run_suite(&other).unwrap_or_else(|failure| panic!("{failure}"));
    println!("{report}");
    let skipped: Vec<&str> = report.skipped().into_iter().map(|(name, _)| name).collect();
    assert_eq!(skipped, ["clipboard round trip", "clipboard read cap"]);
    assert_eq!(other.clipboard(), None, "the refused write changed nothing");
    assert_eq!(other.n_snapshots(), 4);

    // Together the two runs pass every case.
    let both: Vec<&str> = [run_suite(&FakeHandle::default()), Ok(report)]
        .into_iter()
        .flat_map(|report| report.unwrap().passed())
        .collect();
    for case in conformance::CASES {
        assert!(both.contains(&case.name), "{} never passed", case.name);
    }
}

/// The trait's methods, as `backend.rs` declares them inside `pub trait DesktopBackend`.
fn trait_methods() -> Vec<String> {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend.rs"),
    )
    .unwrap();
    let start = source.find("pub trait DesktopBackend").unwrap();
    let body = &source[start..];
    // The trait's block ends at the first line that is a lone closing brace.
    let end = body.find("\n}").unwrap();
    body[..end]
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("fn "))
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn every_trait_method_is_named_by_a_case_and_every_named_method_exists() {
    let methods = trait_methods();
    assert!(methods.len() >= 16, "parsed {methods:?}");
    for method in &methods {
        assert!(
            conformance::CASES
                .iter()
                .any(|case| case.methods.contains(&method.as_str())),
            "DesktopBackend::{method} is named by no conformance case (conformance/report.rs)"
        );
    }
    for case in conformance::CASES {
        for method in case.methods {
            assert!(
                methods.iter().any(|known| known == method),
                "case {:?} names {method}, not a DesktopBackend method",
                case.name
            );
        }
    }
}

/// The fake's own abilities beyond the suite: dialogs in its window list, Stop only past the
/// step's generation, a capped accessibility walk.
#[test]
fn the_fake_lists_dialogs_stops_only_older_generations_and_caps_its_tree() {
    let (mut desktop, handle) = started();
    let id = handle.open_dialog("Save As");
    assert_eq!(desktop.windows().unwrap(), Vec::new(), "off by default");
    handle.set_lists_windows(true);
    let windows = desktop.windows().unwrap();
    assert_eq!(windows.len(), 2);
    assert_eq!(
        (windows[1].window_id, windows[1].title.as_str()),
        (id, "Save As")
    );
    assert_eq!(windows[1].role, desk_contract::desktop::WindowRole::Dialog);
    handle.close_dialogs();
    assert_eq!(desktop.windows().unwrap().len(), 1);

    let wait = InputAction::Wait { milliseconds: 10 };
    let policy = SettlePolicy::default();
    handle.control().signal_stop(7).unwrap();
    handle.control().signal_stop(3).unwrap();
    let at = |desktop: &mut FakeDesktop, generation| {
        desktop
            .execute_for(&wait, policy, generation)
            .unwrap()
            .settle
            .outcome
    };
    assert_eq!(at(&mut desktop, 6), SettleOutcome::Interrupted);
    assert_eq!(at(&mut desktop, 7), SettleOutcome::Stable, "not past 7");
    assert_eq!(
        desktop.execute(&wait, policy).unwrap().settle.outcome,
        SettleOutcome::Stable,
        "execute has no generation"
    );

    handle.set_accessible(true);
    let limits = |nodes, depth| desk_contract::a11y::AxLimits::new(nodes, depth).unwrap();
    let whole = desktop.accessibility(limits(None, None)).unwrap();
    assert_eq!((whole.nodes.len(), whole.truncated), (6, false));
    let five = desktop.accessibility(limits(Some(5), None)).unwrap();
    assert_eq!((five.nodes.len(), five.truncated), (5, true));
    let two_levels = desktop.accessibility(limits(None, Some(2))).unwrap();
    assert_eq!((two_levels.nodes.len(), two_levels.truncated), (4, true));
    assert_eq!(whole.nodes[3].role, "text");
    assert!(whole.nodes[3].editable);
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
    fn clipboard_read(
        &mut self,
        max_output_bytes: u64,
    ) -> Result<desk_contract::clipboard::ClipboardText, BackendError> {
        self.0.clipboard_read(max_output_bytes)
    }
    fn clipboard_write(
        &mut self,
        text: &str,
    ) -> Result<desk_contract::clipboard::ClipboardWritten, BackendError> {
        self.0.clipboard_write(text)
    }
    fn accessibility(
        &mut self,
        limits: desk_contract::a11y::AxLimits,
    ) -> Result<desk_contract::a11y::AxTree, BackendError> {
        self.0.accessibility(limits)
    }
    fn windows(&mut self) -> Result<Vec<desk_contract::desktop::AppWindowInfo>, BackendError> {
        self.0.windows()
    }
    fn capabilities(&self) -> desk_desktop::BackendCapabilities {
        self.0.capabilities()
    }
    fn control(&self) -> std::sync::Arc<dyn desk_desktop::SessionControl> {
        self.0.control()
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
        &mut Report::new(),
    )
    .unwrap_err();
    assert_eq!(failure.check, "click", "{failure}");
    let policy = SettlePolicy::default();
    let cases = conformance::action_cases(DISPLAY);
    let mut report = careless.0.execute(&cases[0].action, policy).unwrap().settle;
    report.wait_ms = 0;
    assert!(conformance::check_settle("early", &cases[0].action, policy, &report).is_err());
}
