//! What the worker observes of the desktop: window facts, focus and pointer, the desktop facts,
//! the app's top-level windows and whether its main window covers the work area.

use desk_contract::ScreenPoint;
use desk_contract::desktop::{
    AppWindowInfo, DesktopFacts, FocusFacts, WindowFacts, WindowRect, WindowRole,
};
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};

use super::{Worker, desktop_failed, failure};
use crate::error::WinError;
use crate::platform::{Platform, WinWindow};

impl<P: Platform> Worker<P> {
    pub(super) fn window_facts(&self, window: &WinWindow) -> WindowFacts {
        WindowFacts {
            window_id: window.hwnd,
            pid: Some(window.pid),
            title: window.title.clone(),
            class: window.class.clone(),
            maximized: window.zoomed,
            rect: window.rect,
            is_app: self.app.is_some_and(|app| app.pid == window.pid),
        }
    }

    pub(super) fn focus(&mut self) -> Result<FocusFacts, WinError> {
        let active = match self.platform.foreground()? {
            Some(hwnd) => self.platform.window(hwnd)?,
            None => None,
        };
        let focused = self.platform.focused()?;
        let (x, y) = self.platform.cursor()?;
        let display = self.display()?;
        let clamp = |value: i64, size: u32| {
            u32::try_from(value.clamp(0, i64::from(size.saturating_sub(1)))).unwrap_or(0)
        };
        Ok(FocusFacts {
            active: active.map(|window| self.window_facts(&window)),
            focused,
            pointer: ScreenPoint {
                x: clamp(x, display.width),
                y: clamp(y, display.height),
            },
        })
    }

    pub(super) fn facts(&mut self) -> Result<DesktopFacts, WinError> {
        let display = self.display()?;
        let focus = self.focus()?;
        let app_window = match self.app.and_then(|app| app.main) {
            Some(hwnd) => self.platform.window(hwnd)?,
            None => None,
        };
        let held = self.held()?;
        Ok(DesktopFacts {
            display,
            focus,
            app_window: app_window.map(|window| self.window_facts(&window)),
            held,
        })
    }

    pub(super) fn windows(&mut self) -> Result<Vec<AppWindowInfo>, WorkerFailure> {
        let Some(app) = self.app else {
            return Err(failure(
                WorkerFailureKind::AppWindowNotFound,
                "no app is bound: send await_app first (or start the worker with --launch)",
            ));
        };
        let screen = self.platform.screen().map_err(desktop_failed)?;
        let mut windows = self.platform.top_level_windows().map_err(desktop_failed)?;
        // EnumWindows lists topmost first; the protocol lists bottom to top.
        windows.reverse();
        Ok(windows
            .into_iter()
            .filter(|window| window.pid == app.pid && window.visible)
            .map(|window| {
                let role = if Some(window.hwnd) == app.main {
                    WindowRole::Main
                } else if window.class == "#32768" {
                    WindowRole::Menu
                } else if window.class == "#32770" || window.owned {
                    WindowRole::Dialog
                } else if window.popup {
                    WindowRole::Popup
                } else {
                    WindowRole::Other
                };
                let on_screen =
                    !window.iconic && intersects(&window.rect, screen.width, screen.height);
                AppWindowInfo {
                    window_id: window.hwnd,
                    title: window.title,
                    role,
                    bounds: window.rect,
                    on_screen,
                }
            })
            .collect())
    }

    /// Whether the bound main window is maximized and covers the work area.
    pub(super) fn app_maximized(&mut self) -> bool {
        let Some(hwnd) = self.app.and_then(|app| app.main) else {
            return false;
        };
        let (Ok(Some(window)), Ok(work_area)) =
            (self.platform.window(hwnd), self.platform.work_area())
        else {
            return false;
        };
        window.zoomed && !window.iconic && covers(&window.rect, &work_area)
    }
}

fn intersects(rect: &WindowRect, width: u32, height: u32) -> bool {
    let right = i64::from(rect.x) + i64::from(rect.width);
    let bottom = i64::from(rect.y) + i64::from(rect.height);
    rect.width > 0
        && rect.height > 0
        && right > 0
        && bottom > 0
        && i64::from(rect.x) < i64::from(width)
        && i64::from(rect.y) < i64::from(height)
}

/// Whether `outer` covers all of `inner`.
pub(crate) fn covers(outer: &WindowRect, inner: &WindowRect) -> bool {
    let right = |rect: &WindowRect| i64::from(rect.x) + i64::from(rect.width);
    let bottom = |rect: &WindowRect| i64::from(rect.y) + i64::from(rect.height);
    outer.x <= inner.x
        && outer.y <= inner.y
        && right(outer) >= right(inner)
        && bottom(outer) >= bottom(inner)
}
