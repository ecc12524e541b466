//! The accessible leg of the destination check: panels docked inside the app's main window,
//! which X cannot tell apart (`desk-a11y`'s `guard.rs`). It runs only when the profile has a
//! rule naming accessibles, and only for input whose X destination is the app's main window
//! (a dialog or popup on top is a window of its own, judged by the X rules). An answer that does
//! not come within `ACCESSIBLE_BOUND`, or an app that is not on the accessibility bus, refuses
//! the input as unverified (`destination_prohibited`): with such rules input is never sent
//! blind.

use std::time::{Duration, Instant};

use desk_a11y::{Accessibility, InputTarget};
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};

use crate::session::X11Session;

/// How long the app's accessibility may take to answer one destination check. Measured on
/// FreeCAD 0.20.2: 4-11 ms typically; with 50 ms a loaded 2-core host refused one action in ~30
/// as unverified, so the bound leaves room for a busy main loop.
pub(crate) const ACCESSIBLE_BOUND: Duration = Duration::from_millis(250);

impl X11Session {
    /// Whether the profile names prohibited accessibles.
    pub(super) fn has_accessible_rules(&self) -> bool {
        self.prohibited.iter().any(|rule| rule.names_accessibles())
    }

    /// Refuses with `DestinationProhibited` when input to `target` would reach a prohibited
    /// accessible of the app `pid`, or when that cannot be told within the bound.
    pub(super) fn check_accessible(
        &mut self,
        pid: u32,
        target: InputTarget,
    ) -> Result<(), WorkerFailure> {
        if self.a11y.is_none() {
            self.a11y = Some(Accessibility::new().map_err(|error| uncertain(&error))?);
        }
        let Some(a11y) = self.a11y.as_mut() else {
            return Err(uncertain(&"no accessibility handle"));
        };
        let started = Instant::now();
        let answer = a11y.prohibited_target(pid, target, &self.prohibited, ACCESSIBLE_BOUND);
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            ?target,
            "accessible destination check"
        );
        match answer.map_err(|error| uncertain(&error))? {
            None => Ok(()),
            Some(hit) => {
                let label = self
                    .prohibited
                    .get(hit.rule)
                    .map_or("prohibited panel", |rule| rule.label.as_str());
                let place = match target {
                    InputTarget::Point { x, y } => format!("({x}, {y}) lies on"),
                    InputTarget::Focus => "the keyboard focus is in".to_string(),
                };
                Err(WorkerFailure {
                    kind: WorkerFailureKind::DestinationProhibited,
                    message: format!(
                        "{place} the app's {label} (accessible {:?}, role {:?}), which this \
                         profile prohibits; nothing was sent",
                        hit.name, hit.role
                    ),
                })
            }
        }
    }
}

fn uncertain(error: &dyn std::fmt::Display) -> WorkerFailure {
    WorkerFailure {
        kind: WorkerFailureKind::DestinationProhibited,
        message: format!(
            "the input's destination inside the app could not be checked against the profile's \
             prohibited panels ({error}); refused unverified, nothing was sent"
        ),
    }
}
