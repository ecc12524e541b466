//! `windows`: the app's top-level windows, managed ones (`_NET_CLIENT_LIST_STACKING`) and
//! override-redirect ones (menus, tooltips, combo lists: the root's mapped children), each
//! with a role, its bounds and whether it is on screen. Read-only: nothing is sent to a window.

use desk_contract::desktop::{AppWindowInfo, WindowRect, WindowRole};
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, MapState, Window};

use crate::error::X11Error;
use crate::session::X11Session;

impl X11Session {
    /// The app's windows, bottom to top (managed first, then override-redirect ones).
    pub fn app_windows(&self) -> Result<Vec<AppWindowInfo>, X11Error> {
        self.app_windows_except(&[])
    }

    /// The app's windows that are not in `known` (top-level window ids from
    /// [`X11Session::top_level_windows`] before a step): the windows the step opened.
    pub(crate) fn app_windows_except(
        &self,
        known: &[Window],
    ) -> Result<Vec<AppWindowInfo>, X11Error> {
        let Some(app) = &self.app else {
            return Ok(Vec::new());
        };
        let mut listed = Vec::new();
        for window in self.top_level_windows()? {
            if known.contains(&window) {
                continue;
            }
            // A window that vanished while being read is simply not listed.
            match self.describe(window, app.pid, app.window) {
                Ok(Some(info)) => listed.push(info),
                Ok(None) => {}
                Err(error) => tracing::debug!(%error, window, "a window could not be read"),
            }
        }
        Ok(listed)
    }

    /// Every top-level window id, bottom to top: managed ones, then the root's other children.
    pub(crate) fn top_level_windows(&self) -> Result<Vec<Window>, X11Error> {
        let windows = self.windows();
        let mut candidates = windows.property32(self.root, self.atoms._NET_CLIENT_LIST_STACKING)?;
        if candidates.is_empty() {
            candidates = windows.clients()?;
        }
        let tree = self
            .conn
            .query_tree(self.root)
            .map_err(X11Error::conn("query tree"))?
            .reply()
            .map_err(X11Error::reply("query tree"))?;
        for child in tree.children {
            if !candidates.contains(&child) {
                candidates.push(child);
            }
        }
        Ok(candidates)
    }

    fn describe(
        &self,
        window: Window,
        app_pid: u32,
        main: Window,
    ) -> Result<Option<AppWindowInfo>, X11Error> {
        let conn = &self.conn;
        let sent = X11Error::conn("query window");
        let replied = X11Error::reply("query window");
        let attributes = conn.get_window_attributes(window).map_err(sent)?;
        let pid = conn
            .get_property(false, window, self.atoms._NET_WM_PID, AtomEnum::ANY, 0, 1)
            .map_err(sent)?;
        let kind = conn
            .get_property(
                false,
                window,
                self.atoms._NET_WM_WINDOW_TYPE,
                AtomEnum::ANY,
                0,
                32,
            )
            .map_err(sent)?;
        let transient = conn
            .get_property(
                false,
                window,
                AtomEnum::WM_TRANSIENT_FOR,
                AtomEnum::ANY,
                0,
                1,
            )
            .map_err(sent)?;
        let state = conn
            .get_property(
                false,
                window,
                self.atoms._NET_WM_STATE,
                AtomEnum::ANY,
                0,
                64,
            )
            .map_err(sent)?;
        let geometry = conn.get_geometry(window).map_err(sent)?;
        let translated = conn
            .translate_coordinates(window, self.root, 0, 0)
            .map_err(sent)?;
        let attributes = attributes.reply().map_err(replied)?;
        let pid = pid.reply().map_err(replied)?;
        let kind: Vec<u32> = kind
            .reply()
            .map_err(replied)?
            .value32()
            .map(Iterator::collect)
            .unwrap_or_default();
        let transient = transient.reply().map_err(replied)?.value_len > 0;
        let state: Vec<u32> = state
            .reply()
            .map_err(replied)?
            .value32()
            .map(Iterator::collect)
            .unwrap_or_default();
        let geometry = geometry.reply().map_err(replied)?;
        let translated = translated.reply().map_err(replied)?;
        if pid.value32().and_then(|mut v| v.next()) != Some(app_pid) {
            return Ok(None);
        }
        let viewable = attributes.map_state == MapState::VIEWABLE;
        if attributes.override_redirect && !viewable {
            // Qt keeps its unmapped menus and tooltips around: not windows of the app yet.
            return Ok(None);
        }
        let atoms = &self.atoms;
        let role = if window == main {
            WindowRole::Main
        } else if kind.iter().any(|k| {
            [
                atoms._NET_WM_WINDOW_TYPE_MENU,
                atoms._NET_WM_WINDOW_TYPE_POPUP_MENU,
                atoms._NET_WM_WINDOW_TYPE_DROPDOWN_MENU,
            ]
            .contains(k)
        }) {
            WindowRole::Menu
        } else if kind.contains(&atoms._NET_WM_WINDOW_TYPE_DIALOG) || transient {
            WindowRole::Dialog
        } else if attributes.override_redirect {
            WindowRole::Popup
        } else {
            WindowRole::Other
        };
        let bounds = WindowRect {
            x: i32::from(translated.dst_x),
            y: i32::from(translated.dst_y),
            width: u32::from(geometry.width),
            height: u32::from(geometry.height),
        };
        let on_screen = viewable
            && !state.contains(&atoms._NET_WM_STATE_HIDDEN)
            && intersects(bounds, self.display.width, self.display.height);
        Ok(Some(AppWindowInfo {
            window_id: window,
            title: self.windows().title(window)?,
            role,
            bounds,
            on_screen,
        }))
    }
}

/// Whether a rectangle shows at least one pixel of a `width`×`height` screen.
fn intersects(rect: WindowRect, width: u32, height: u32) -> bool {
    let right = i64::from(rect.x) + i64::from(rect.width);
    let bottom = i64::from(rect.y) + i64::from(rect.height);
    right > 0
        && bottom > 0
        && i64::from(rect.x) < i64::from(width)
        && i64::from(rect.y) < i64::from(height)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_on_screen_shows_a_pixel() {
        let rect = |x, y, width, height| WindowRect {
            x,
            y,
            width,
            height,
        };
        assert!(intersects(rect(0, 0, 1, 1), 10, 10));
        assert!(intersects(rect(-5, -5, 6, 6), 10, 10));
        assert!(!intersects(rect(-5, 0, 5, 5), 10, 10));
        assert!(!intersects(rect(10, 0, 5, 5), 10, 10));
        assert!(!intersects(rect(0, 10, 5, 5), 10, 10));
    }
}
