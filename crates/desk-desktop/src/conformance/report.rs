//! The suite's case list and its [`Report`]: every case names the [`crate::DesktopBackend`]
//! methods it exercises ([`CASES`]; a test holds the list to the trait's methods parsed from
//! `backend.rs`, so a new method without a case fails), and a run records each case as passed
//! or skipped with the reason (a capability the backend declares it lacks, or an app the runner
//! could not start), so that nothing is passed silently.

use std::fmt;

use super::check::{Failure, fail};

/// One case of the suite: its name in reports and failures, and the trait methods it calls
/// and checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseInfo {
    /// The case's name.
    pub name: &'static str,
    /// The [`crate::DesktopBackend`] methods it exercises.
    pub methods: &'static [&'static str],
}

const fn case(name: &'static str, methods: &'static [&'static str]) -> CaseInfo {
    CaseInfo { name, methods }
}

/// Every case of the suite, in the order a full run meets them.
pub const CASES: &[CaseInfo] = &[
    case(HANDOFF, &["start_app", "display_size"]),
    case(CAPTURE, &["capture", "display_size"]),
    case(FACTS, &["facts", "display_size"]),
    case(WINDOWS, &["windows", "capabilities"]),
    case(PROCESSES, &["process_ids", "workspace_facts"]),
    case(ACTIONS, &["execute", "facts"]),
    case(RELEASE_HELD, &["release_held", "facts"]),
    case(STOP_INTERRUPTS, &["execute_for", "control", "capabilities"]),
    case(EXECUTE_FOR_CURRENT, &["execute_for", "control"]),
    case(CLIPBOARD_ROUND_TRIP, &["clipboard_write", "clipboard_read"]),
    case(CLIPBOARD_READ_CAP, &["clipboard_read"]),
    case(
        CLIPBOARD_UNAVAILABLE,
        &["clipboard_read", "clipboard_write", "capabilities"],
    ),
    case(ACCESSIBILITY_REFUSED, &["accessibility"]),
    case(ACCESSIBILITY_SNAPSHOT, &["accessibility", "capabilities"]),
    case(ACCESSIBILITY_TRUNCATED, &["accessibility"]),
    case(DETACH, &["detach", "process_ids", "capabilities"]),
    case(REJECTIONS, &["execute"]),
    case(STOP_APP, &["stop_app", "capture", "start_app"]),
    case(SHUTDOWN, &["shutdown", "process_ids"]),
];

/// The name of the handoff case, for [`super::check_handoff`] at the start of a run.
pub const HANDOFF: &str = "handoff";
pub(super) const CAPTURE: &str = "capture";
pub(super) const FACTS: &str = "facts";
pub(super) const WINDOWS: &str = "windows";
pub(super) const PROCESSES: &str = "process ids and workspace facts";
pub(super) const ACTIONS: &str = "action table";
pub(super) const RELEASE_HELD: &str = "release held";
pub(super) const STOP_INTERRUPTS: &str = "a stop interrupts the settle";
pub(super) const EXECUTE_FOR_CURRENT: &str = "execute_for at the current generation";
pub(super) const CLIPBOARD_ROUND_TRIP: &str = "clipboard round trip";
pub(super) const CLIPBOARD_READ_CAP: &str = "clipboard read cap";
pub(super) const CLIPBOARD_UNAVAILABLE: &str = "clipboard unavailable";
pub(super) const ACCESSIBILITY_REFUSED: &str = "accessibility of an inaccessible app";
pub(super) const ACCESSIBILITY_SNAPSHOT: &str = "accessibility snapshot";
pub(super) const ACCESSIBILITY_TRUNCATED: &str = "accessibility truncation";
pub(super) const DETACH: &str = "detach";
pub(super) const REJECTIONS: &str = "rejections";
pub(super) const STOP_APP: &str = "stop app and start again";
pub(super) const SHUTDOWN: &str = "shutdown";

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every check held.
    Passed,
    /// Not run, for this reason.
    Skipped(String),
}

/// What one run of the suite passed and skipped, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    cases: Vec<(&'static str, Outcome)>,
}

impl Report {
    /// An empty report.
    pub fn new() -> Report {
        Report::default()
    }

    pub(super) fn pass(&mut self, case: &'static str) {
        self.cases.push((case, Outcome::Passed));
    }

    /// Records `case` (one of [`CASES`]) as not run, for `reason`: what the backend declares
    /// it lacks, or what the runner could not provide (e.g. an accessible app).
    pub fn skip(&mut self, case: &'static str, reason: impl Into<String>) {
        self.cases.push((case, Outcome::Skipped(reason.into())));
    }

    /// Every case recorded, in order.
    pub fn cases(&self) -> &[(&'static str, Outcome)] {
        &self.cases
    }

    /// The names of the cases that passed.
    pub fn passed(&self) -> Vec<&'static str> {
        self.cases
            .iter()
            .filter(|(_, outcome)| *outcome == Outcome::Passed)
            .map(|(name, _)| *name)
            .collect()
    }

    /// The skipped cases with their reasons.
    pub fn skipped(&self) -> Vec<(&'static str, &str)> {
        self.cases
            .iter()
            .filter_map(|(name, outcome)| match outcome {
                Outcome::Skipped(reason) => Some((*name, reason.as_str())),
                Outcome::Passed => None,
            })
            .collect()
    }

    /// Fails unless every case of [`CASES`] was recorded at least once, and nothing else was:
    /// a full run left no case out.
    pub fn check_complete(&self) -> Result<(), Failure> {
        if let Some((unknown, _)) = self
            .cases
            .iter()
            .find(|(name, _)| !CASES.iter().any(|case| case.name == *name))
        {
            return fail("report", format!("{unknown:?} is not a case of the suite"));
        }
        let missing: Vec<&str> = CASES
            .iter()
            .map(|case| case.name)
            .filter(|name| !self.cases.iter().any(|(recorded, _)| recorded == name))
            .collect();
        if !missing.is_empty() {
            return fail("report", format!("neither passed nor skipped: {missing:?}"));
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passed = self.passed();
        writeln!(f, "passed {}: {}", passed.len(), passed.join(", "))?;
        let skipped = self.skipped();
        write!(f, "skipped {}", skipped.len())?;
        for (name, reason) in skipped {
            write!(f, "\n  {name}: {reason}")?;
        }
        Ok(())
    }
}
