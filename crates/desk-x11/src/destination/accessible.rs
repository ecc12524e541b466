//! The accessible leg of the destination check: panels docked inside the app's main window,
//! which X cannot tell apart (`desk-a11y`'s `guard.rs`). It runs only when the profile has a
//! rule naming accessibles, and only for input whose X destination is the app's main window
//! (a dialog or popup on top is a window of its own, judged by the X rules).
//!
//! The verdict comes one of two ways, named in the log and in a refusal:
//! - `settled`: after each action's settle the worker starts a scan of the app's prohibited
//!   accessibles (their extents and focus) in the background, on an accessibility connection
//!   of its own, while the app is idle and answers fast ([`SNAPSHOT_BOUND`]); the action's
//!   answer (its PNG, the broker's turn, the agent's) does not wait for it. Before the scan
//!   starts the damage so far is forgotten and the X focus window noted. At the next input
//!   that needs the check, the worker collects the scan (waiting at most [`SNAPSHOT_WAIT`]
//!   for one still running) and its view decides when nothing changed since it started: no
//!   damage on the screen from before the scan up to the check (a panel shown, moved, or
//!   taking the caret draws), the same X focus window, the same app, and at most
//!   [`SNAPSHOT_AGE`] old. Input that needs no check leaves the scan unread.
//! - `live`: otherwise (no view, a failed or late scan, anything changed) the app is asked at
//!   input time, waiting up to [`LIVE_BOUND`] for a busy app.
//!
//! An app that answers neither way, or is not on the accessibility bus, gets the input refused
//! as unverified (`destination_prohibited`): with such rules input is never sent blind.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use desk_a11y::{Accessibility, GuardView, InputTarget};
use desk_contract::validate::InputAction;
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};
use x11rb::protocol::xproto::{ConnectionExt as _, Window};

use super::snapshot::{GuardSnapshot, Scanned};
use crate::error::X11Error;
use crate::session::X11Session;

/// How long the app may take to answer the live check at input time. The check reads a few
/// dozen objects (4-16 ms typically on FreeCAD 0.20.2); a busy main loop (FreeCAD recomputing
/// or updating its panels after a selection) delayed it past 250 ms often enough to end one
/// dev-split rollout in ~2, so this waits for the app rather than refusing. 2 s was not enough
/// on a 2-core host at load 10-22: with the oracle's fixed waits gone, the first input after a
/// handoff or a workbench switch (FreeCAD registering its new toolbars on the bus) was refused
/// unverified in 8 of 13 rollouts. Waiting longer only delays a refusal, never admits blind.
pub(crate) const LIVE_BOUND: Duration = Duration::from_secs(6);
/// How long the scan after a settle may take; without an answer in time there is no view and
/// the next input is checked live.
pub(crate) const SNAPSHOT_BOUND: Duration = Duration::from_millis(250);
/// A view older than this is not used.
pub(crate) const SNAPSHOT_AGE: Duration = Duration::from_secs(60);
/// How long the next input waits for a background scan still running: its own bound plus
/// finding the app on the bus (1 s, once per app start) and a margin. A scan later than this
/// leaves no view (the input is checked live).
pub(crate) const SNAPSHOT_WAIT: Duration = Duration::from_millis(1500);

/// How a verdict was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Settled,
    Live,
}

impl Way {
    fn as_str(self) -> &'static str {
        match self {
            Way::Settled => "settled",
            Way::Live => "live",
        }
    }
}

impl X11Session {
    /// Whether the profile names prohibited accessibles.
    pub(super) fn has_accessible_rules(&self) -> bool {
        self.prohibited.iter().any(|rule| rule.names_accessibles())
    }

    fn accessibility_for_guard(&mut self) -> Result<&mut Accessibility, WorkerFailure> {
        if self.a11y.is_none() {
            self.a11y = Some(Accessibility::new().map_err(|error| uncertain(&error, Way::Live))?);
        }
        self.a11y
            .as_mut()
            .ok_or_else(|| uncertain(&"no accessibility handle", Way::Live))
    }

    /// The X input focus window now.
    fn input_focus(&self) -> Result<Option<Window>, X11Error> {
        let focus = self
            .conn
            .get_input_focus()
            .map_err(X11Error::conn("read the input focus"))?
            .reply()
            .map_err(X11Error::reply("read the input focus"))?
            .focus;
        Ok((focus > 1).then_some(focus))
    }

    /// After an action settled (`stable`): starts the background scan of the app's prohibited
    /// accessibles for the next input's check. Anything that fails leaves no view (the next
    /// input is checked live).
    pub(crate) fn refresh_guard_snapshot(&mut self, action: &InputAction, stable: bool) {
        if let Some(previous) = self.guard.take() {
            // Not collected (the last input needed no check): its connection is kept.
            self.collect(previous);
        }
        if !stable || matches!(action, InputAction::Done) || !self.has_accessible_rules() {
            return;
        }
        let Some(pid) = self.app_pid() else { return };
        match self.start_guard_scan(pid) {
            Ok(snapshot) => self.guard = Some(snapshot),
            Err(reason) => {
                tracing::debug!(%reason, "no background scan of the prohibited accessibles");
            }
        }
    }

    fn start_guard_scan(&mut self, pid: u32) -> Result<GuardSnapshot, String> {
        let Some(watch) = self.idle.as_mut() else {
            return Err("no damage signal on this display".to_string());
        };
        // Damage so far is forgotten: any drawing from here on invalidates the view.
        watch
            .damaged_until_now(&self.conn)
            .map_err(|error| error.to_string())?;
        let focus = self.input_focus().map_err(|error| error.to_string())?;
        let rules = self.prohibited.clone();
        let mut a11y = match self.guard_a11y.take() {
            Some(a11y) => a11y,
            None => Accessibility::new().map_err(|error| error.to_string())?,
        };
        let (answer, scanned) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("guard-scan".to_string())
            .spawn(move || {
                let started = Instant::now();
                let view = a11y
                    .guard_view(pid, &rules, SNAPSHOT_BOUND)
                    .map_err(|error| error.to_string());
                let taken = Instant::now();
                tracing::debug!(
                    elapsed_us = (taken - started).as_micros() as u64,
                    taken = if view.is_ok() { "view" } else { "none" },
                    reason = view.as_ref().err().map(String::as_str).unwrap_or(""),
                    "prohibited accessibles scanned after the settle"
                );
                // The worker may have dropped the receiver (an app restart): nothing to do.
                let _ = answer.send(Scanned { a11y, view, taken });
            })
            .map_err(|error| format!("start the scan thread: {error}"))?;
        Ok(GuardSnapshot {
            scanned,
            app_pid: pid,
            focus,
        })
    }

    /// The scan's answer, waiting at most [`SNAPSHOT_WAIT`]; its connection is kept for the
    /// next scan. `None`: no answer in time (the thread keeps its connection and ends alone).
    fn collect(&mut self, snapshot: GuardSnapshot) -> Option<(Result<GuardView, String>, Instant)> {
        let scanned = snapshot.scanned.recv_timeout(SNAPSHOT_WAIT).ok()?;
        self.guard_a11y = Some(scanned.a11y);
        Some((scanned.view, scanned.taken))
    }

    /// The background scan's view, when nothing changed since it started; it is used once (the
    /// input that follows changes things).
    fn settled_view(&mut self, pid: u32, focus: Option<u32>) -> Option<GuardView> {
        let snapshot = self.guard.take()?;
        let (app_pid, started_focus) = (snapshot.app_pid, snapshot.focus);
        let (view, taken) = self.collect(snapshot)?;
        let view = view.ok()?;
        if app_pid != pid
            || view.app_pid() != pid
            || started_focus != focus
            || taken.elapsed() > SNAPSHOT_AGE
        {
            return None;
        }
        let watch = self.idle.as_mut()?;
        match watch.damaged_until_now(&self.conn) {
            Ok(false) => Some(view),
            Ok(true) | Err(_) => None,
        }
    }

    /// Refuses with `DestinationProhibited` when input to `target` would reach a prohibited
    /// accessible of the app `pid`, or when that cannot be told. `focus` is the X input focus
    /// window before the input.
    pub(super) fn check_accessible(
        &mut self,
        pid: u32,
        targets: &[InputTarget],
        focus: Option<u32>,
    ) -> Result<(), WorkerFailure> {
        let started = Instant::now();
        let (view, way) = match self.settled_view(pid, focus) {
            Some(view) => (view, Way::Settled),
            None => {
                let rules = self.prohibited.clone();
                let a11y = self.accessibility_for_guard()?;
                let view = a11y
                    .guard_view(pid, &rules, LIVE_BOUND)
                    .map_err(|error| uncertain(&error, Way::Live))?;
                (view, Way::Live)
            }
        };
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            way = way.as_str(),
            showing = view.showing(),
            ?targets,
            "accessible destination check"
        );
        for target in targets {
            let Some(hit) = view.verdict(*target) else {
                continue;
            };
            let label = self
                .prohibited
                .get(hit.rule)
                .map_or("prohibited panel", |rule| rule.label.as_str());
            let place = match target {
                InputTarget::Point { x, y } => format!("({x}, {y}) lies on"),
                InputTarget::Focus => "the keyboard focus is in".to_string(),
            };
            return Err(WorkerFailure {
                kind: WorkerFailureKind::DestinationProhibited,
                message: format!(
                    "{place} the app's {label} (accessible {:?}, role {:?}; checked {}), which \
                     this profile prohibits; nothing was sent",
                    hit.name,
                    hit.role,
                    way.as_str()
                ),
            });
        }
        Ok(())
    }
}

fn uncertain(error: &dyn std::fmt::Display, way: Way) -> WorkerFailure {
    WorkerFailure {
        kind: WorkerFailureKind::DestinationProhibited,
        message: format!(
            "the input's destination inside the app could not be checked against the profile's \
             prohibited panels ({} check: {error}); refused unverified, nothing was sent",
            way.as_str()
        ),
    }
}
