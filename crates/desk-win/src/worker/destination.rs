//! The destination check before seat input, once an app is bound: every point an action
//! presses, moves to or scrolls at must be on a top-level window of the app's process
//! (`WindowFromPoint`, then its root ancestor), and keys and text need the foreground window to
//! be one of the app's; otherwise `destination_not_app` and nothing is sent. Without a bound
//! app (before `await_app` or `--launch`) there is nothing to check against.

use desk_contract::desktop::ActionOutcome;
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};
use desk_contract::{InputAction, ScreenPoint};

use super::{Worker, desktop_failed, failure};
use crate::platform::Platform;

/// The points an action presses, moves to or scrolls at (`pointer` for a scroll).
fn points(action: &InputAction, pointer: ScreenPoint) -> Vec<ScreenPoint> {
    match action {
        InputAction::Click { at, .. } | InputAction::DoubleClick { at, .. } => vec![*at],
        InputAction::Drag { path, .. } => path.clone(),
        InputAction::Move { to, .. } => vec![*to],
        InputAction::Scroll { .. } => vec![pointer],
        _ => Vec::new(),
    }
}

impl<P: Platform> Worker<P> {
    /// Refuses `action` when its destination is not the bound app.
    pub(super) fn check_destination(
        &mut self,
        action: &InputAction,
        pointer: ScreenPoint,
    ) -> Result<(), WorkerFailure> {
        let Some(app) = self.app else {
            return Ok(());
        };
        for point in points(action, pointer) {
            let root = self
                .platform
                .window_at(point.x, point.y)
                .map_err(desktop_failed)?;
            let owner = match root {
                Some(hwnd) => self.platform.window(hwnd).map_err(desktop_failed)?,
                None => None,
            };
            if owner.as_ref().is_none_or(|window| window.pid != app.pid) {
                return Err(failure(
                    WorkerFailureKind::DestinationNotApp,
                    format!(
                        "({}, {}) is on {}, not on a window of the app (pid {}); nothing was sent",
                        point.x,
                        point.y,
                        owner.map_or("no window".to_string(), |window| format!(
                            "window {:#x} of class {:?} (pid {})",
                            window.hwnd, window.class, window.pid
                        )),
                        app.pid
                    ),
                ));
            }
        }
        if matches!(action, InputAction::Key { .. } | InputAction::Type { .. }) {
            let foreground = match self.platform.foreground().map_err(desktop_failed)? {
                Some(hwnd) => self.platform.window(hwnd).map_err(desktop_failed)?,
                None => None,
            };
            if foreground
                .as_ref()
                .is_none_or(|window| window.pid != app.pid)
            {
                return Err(failure(
                    WorkerFailureKind::DestinationNotApp,
                    format!(
                        "keys would go to {}, not to the app (pid {}); nothing was sent",
                        foreground.map_or("no foreground window".to_string(), |window| format!(
                            "window {:#x} of class {:?} (pid {})",
                            window.hwnd, window.class, window.pid
                        )),
                        app.pid
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The app's top-level windows now, by handle (empty without a bound app).
    pub(super) fn app_window_ids(&mut self) -> Result<Vec<u32>, WorkerFailure> {
        if self.app.is_none() {
            return Ok(Vec::new());
        }
        Ok(self
            .windows()?
            .into_iter()
            .map(|window| window.window_id)
            .collect())
    }

    /// Fills `opened_windows`: the app's windows that were not there before the input.
    pub(super) fn note_opened_windows(&mut self, before: &[u32], outcome: &mut ActionOutcome) {
        if self.app.is_none() {
            return;
        }
        match self.windows() {
            Ok(windows) => {
                outcome.opened_windows = windows
                    .into_iter()
                    .filter(|window| !before.contains(&window.window_id))
                    .collect();
            }
            Err(_) => outcome
                .observation_failures
                .push(desk_contract::desktop::observation::WINDOWS.to_string()),
        }
    }
}
