//! The handoff's coverage check: the app's window covers the whole work area
//! (`_NET_WORKAREA`, the whole screen when the manager publishes none), is viewable and not
//! iconic. The EWMH maximized atoms alone do not prove it: a manager honours a window's
//! maximum size, and a maximized window can be unmapped or iconified.
//!
//! Invariant: only reads; nothing here asks the window manager for anything.

use x11rb::protocol::xproto::{ConnectionExt as _, MapState, Window};

use crate::error::X11Error;
use crate::window::Windows;

/// `WM_STATE`'s `IconicState`.
const ICONIC_STATE: u32 = 3;

impl Windows<'_> {
    /// Why `window` does not cover the work area of a `screen` (width, height) display, or
    /// `None` when it does.
    pub(crate) fn coverage_problem(
        &self,
        window: Window,
        screen: (u32, u32),
    ) -> Result<Option<String>, X11Error> {
        let attributes = self
            .conn
            .get_window_attributes(window)
            .map_err(X11Error::conn("get window attributes"))?
            .reply()
            .map_err(X11Error::reply("get window attributes"))?;
        if attributes.map_state != MapState::VIEWABLE {
            return Ok(Some(format!(
                "window 0x{window:x} is not viewable (map state {:?})",
                attributes.map_state
            )));
        }
        let wm_state = self.property32(window, self.atoms.WM_STATE)?;
        let net_state = self.property32(window, self.atoms._NET_WM_STATE)?;
        if wm_state.first() == Some(&ICONIC_STATE)
            || net_state.contains(&self.atoms._NET_WM_STATE_HIDDEN)
        {
            return Ok(Some(format!("window 0x{window:x} is iconic")));
        }
        let area = match self
            .property32(self.root, self.atoms._NET_WORKAREA)?
            .as_slice()
        {
            [x, y, width, height, ..] => (i64::from(*x), i64::from(*y), *width, *height),
            _ => (0, 0, screen.0, screen.1),
        };
        let frame = self.frame_of(window)?;
        let geometry = self
            .conn
            .get_geometry(frame)
            .map_err(X11Error::conn("get geometry"))?
            .reply()
            .map_err(X11Error::reply("get geometry"))?;
        let border = i64::from(geometry.border_width) * 2;
        let (left, top) = (i64::from(geometry.x), i64::from(geometry.y));
        let right = left + i64::from(geometry.width) + border;
        let bottom = top + i64::from(geometry.height) + border;
        let covers = left <= area.0
            && top <= area.1
            && right >= area.0 + i64::from(area.2)
            && bottom >= area.1 + i64::from(area.3);
        Ok((!covers).then(|| {
            format!(
                "window 0x{window:x} spans {}x{}+{left}+{top}, which does not cover the work area \
                 {}x{}+{}+{}",
                right - left,
                bottom - top,
                area.2,
                area.3,
                area.0,
                area.1
            )
        }))
    }

    /// The top-level window holding `window` (the manager's frame), or `window` itself when
    /// it is a child of the root.
    fn frame_of(&self, window: Window) -> Result<Window, X11Error> {
        let mut current = window;
        loop {
            let tree = self
                .conn
                .query_tree(current)
                .map_err(X11Error::conn("query tree"))?
                .reply()
                .map_err(X11Error::reply("query tree"))?;
            if tree.parent == self.root || tree.parent == x11rb::NONE {
                return Ok(current);
            }
            current = tree.parent;
        }
    }
}
