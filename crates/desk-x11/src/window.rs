//! EWMH/ICCCM window facts and requests: client lists, pid/title/class/state/geometry,
//! maximize and activate client messages, focus and pointer.
//!
//! Invariant: nothing here sends input; requests to the window manager go through root-window
//! client messages only.

use desk_contract::desktop::{FocusFacts, WindowFacts, WindowRect};
use desk_contract::geometry::ScreenPoint;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, Window,
};
use x11rb::rust_connection::RustConnection;

use crate::error::X11Error;

x11rb::atom_manager! {
    /// Interned EWMH atoms.
    pub(crate) Atoms: AtomsCookie {
        _NET_ACTIVE_WINDOW,
        _NET_CLIENT_LIST,
        _NET_WM_PID,
        _NET_WM_NAME,
        _NET_WM_STATE,
        _NET_WM_STATE_MAXIMIZED_VERT,
        _NET_WM_STATE_MAXIMIZED_HORZ,
        _NET_SUPPORTING_WM_CHECK,
        _NET_WM_STATE_HIDDEN,
        _NET_WORKAREA,
        UTF8_STRING,
        WM_STATE,
        _NET_CLIENT_LIST_STACKING,
        _NET_WM_WINDOW_TYPE,
        _NET_WM_WINDOW_TYPE_DIALOG,
        _NET_WM_WINDOW_TYPE_MENU,
        _NET_WM_WINDOW_TYPE_POPUP_MENU,
        _NET_WM_WINDOW_TYPE_DROPDOWN_MENU,
        _NET_FRAME_EXTENTS,
    }
}

/// `_NET_WM_STATE_ADD`.
const NET_WM_STATE_ADD: u32 = 1;
/// Source indication "application" for EWMH requests.
const SOURCE_APPLICATION: u32 = 1;

/// Reads windows and talks to the window manager.
pub(crate) struct Windows<'a> {
    /// The connection.
    pub(crate) conn: &'a RustConnection,
    /// Interned atoms.
    pub(crate) atoms: &'a Atoms,
    /// The root window.
    pub(crate) root: Window,
}

impl Windows<'_> {
    /// Whether a window manager has taken the display (`_NET_SUPPORTING_WM_CHECK` on the root).
    pub(crate) fn manager_present(&self) -> Result<bool, X11Error> {
        Ok(!self
            .cardinals(self.root, self.atoms._NET_SUPPORTING_WM_CHECK)?
            .is_empty())
    }

    /// A 32-bit property's values, whatever its type; empty when unset.
    pub(crate) fn property32(&self, window: Window, property: u32) -> Result<Vec<u32>, X11Error> {
        self.cardinals(window, property)
    }

    fn cardinals(&self, window: Window, property: u32) -> Result<Vec<u32>, X11Error> {
        let reply = self
            .conn
            .get_property(false, window, property, AtomEnum::ANY, 0, 1024)
            .map_err(X11Error::conn("get property"))?
            .reply()
            .map_err(X11Error::reply("get property"))?;
        Ok(reply.value32().map(Iterator::collect).unwrap_or_default())
    }

    fn text(&self, window: Window, property: u32) -> Result<Option<String>, X11Error> {
        let reply = self
            .conn
            .get_property(false, window, property, AtomEnum::ANY, 0, 4096)
            .map_err(X11Error::conn("get property"))?
            .reply()
            .map_err(X11Error::reply("get property"))?;
        if reply.format != 8 || reply.value.is_empty() {
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&reply.value).into_owned()))
    }

    /// Top-level client windows: `_NET_CLIENT_LIST`, else the root's children.
    pub(crate) fn clients(&self) -> Result<Vec<Window>, X11Error> {
        let listed = self.cardinals(self.root, self.atoms._NET_CLIENT_LIST)?;
        if !listed.is_empty() {
            return Ok(listed);
        }
        // With a window manager running, an unlisted window is not managed yet: requests to it
        // would be ignored, so wait for the manager to list it.
        if !self
            .cardinals(self.root, self.atoms._NET_SUPPORTING_WM_CHECK)?
            .is_empty()
        {
            return Ok(Vec::new());
        }
        let tree = self
            .conn
            .query_tree(self.root)
            .map_err(X11Error::conn("query tree"))?
            .reply()
            .map_err(X11Error::reply("query tree"))?;
        Ok(tree.children)
    }

    /// `_NET_WM_PID`.
    pub(crate) fn pid(&self, window: Window) -> Result<Option<u32>, X11Error> {
        Ok(self
            .cardinals(window, self.atoms._NET_WM_PID)?
            .first()
            .copied())
    }

    /// The window manager's frame around `window` whose client rectangle is `rect`: `rect`
    /// grown by `_NET_FRAME_EXTENTS` (left, right, top, bottom); `None` without decorations.
    pub(crate) fn frame_rect(
        &self,
        window: Window,
        rect: WindowRect,
    ) -> Result<Option<WindowRect>, X11Error> {
        let extents = self.cardinals(window, self.atoms._NET_FRAME_EXTENTS)?;
        let &[left, right, top, bottom] = extents.as_slice() else {
            return Ok(None);
        };
        if left == 0 && right == 0 && top == 0 && bottom == 0 {
            return Ok(None);
        }
        let grow = |v: u32| i32::try_from(v).ok();
        let (Some(l), Some(t)) = (grow(left), grow(top)) else {
            return Ok(None);
        };
        Ok(Some(WindowRect {
            x: rect.x.saturating_sub(l),
            y: rect.y.saturating_sub(t),
            width: rect.width.saturating_add(left).saturating_add(right),
            height: rect.height.saturating_add(top).saturating_add(bottom),
        }))
    }

    /// `_NET_WM_NAME`, else `WM_NAME`, else empty.
    pub(crate) fn title(&self, window: Window) -> Result<String, X11Error> {
        if let Some(title) = self.text(window, self.atoms._NET_WM_NAME)? {
            return Ok(title);
        }
        Ok(self
            .text(window, AtomEnum::WM_NAME.into())?
            .unwrap_or_default())
    }

    /// The class part of `WM_CLASS`.
    pub(crate) fn class(&self, window: Window) -> Result<String, X11Error> {
        let raw = self
            .text(window, AtomEnum::WM_CLASS.into())?
            .unwrap_or_default();
        let mut parts = raw.split('\0');
        let _instance = parts.next();
        Ok(parts.next().unwrap_or_default().to_string())
    }

    /// Whether `_NET_WM_STATE` holds both maximized atoms.
    pub(crate) fn maximized(&self, window: Window) -> Result<bool, X11Error> {
        let state = self.cardinals(window, self.atoms._NET_WM_STATE)?;
        Ok(state.contains(&self.atoms._NET_WM_STATE_MAXIMIZED_VERT)
            && state.contains(&self.atoms._NET_WM_STATE_MAXIMIZED_HORZ))
    }

    /// Everything about one window. All requests are sent before the first reply is read, so
    /// this costs one round trip, not seven.
    pub(crate) fn facts(
        &self,
        window: Window,
        app_pid: Option<u32>,
    ) -> Result<WindowFacts, X11Error> {
        let conn = self.conn;
        let sent = X11Error::conn("query window facts");
        let property = |atom: u32, length: u32| {
            conn.get_property(false, window, atom, AtomEnum::ANY, 0, length)
        };
        let pid = property(self.atoms._NET_WM_PID, 1).map_err(sent)?;
        let net_name = property(self.atoms._NET_WM_NAME, 4096).map_err(sent)?;
        let wm_name = property(AtomEnum::WM_NAME.into(), 4096).map_err(sent)?;
        let class = property(AtomEnum::WM_CLASS.into(), 4096).map_err(sent)?;
        let state = property(self.atoms._NET_WM_STATE, 1024).map_err(sent)?;
        let geometry = conn.get_geometry(window).map_err(sent)?;
        let translated = conn
            .translate_coordinates(window, self.root, 0, 0)
            .map_err(sent)?;
        let replied = X11Error::reply("query window facts");
        let pid = pid.reply().map_err(replied)?;
        let pid = pid.value32().and_then(|mut values| values.next());
        let text = |reply: x11rb::protocol::xproto::GetPropertyReply| {
            (reply.format == 8 && !reply.value.is_empty())
                .then(|| String::from_utf8_lossy(&reply.value).into_owned())
        };
        let net_name = text(net_name.reply().map_err(replied)?);
        let wm_name = text(wm_name.reply().map_err(replied)?);
        let raw_class = text(class.reply().map_err(replied)?).unwrap_or_default();
        let state: Vec<u32> = state
            .reply()
            .map_err(replied)?
            .value32()
            .map(Iterator::collect)
            .unwrap_or_default();
        let geometry = geometry.reply().map_err(replied)?;
        let translated = translated.reply().map_err(replied)?;
        Ok(WindowFacts {
            window_id: window,
            pid,
            title: net_name.or(wm_name).unwrap_or_default(),
            class: raw_class.split('\0').nth(1).unwrap_or_default().to_string(),
            maximized: state.contains(&self.atoms._NET_WM_STATE_MAXIMIZED_VERT)
                && state.contains(&self.atoms._NET_WM_STATE_MAXIMIZED_HORZ),
            rect: WindowRect {
                x: i32::from(translated.dst_x),
                y: i32::from(translated.dst_y),
                width: u32::from(geometry.width),
                height: u32::from(geometry.height),
            },
            is_app: app_pid.is_some() && pid == app_pid,
        })
    }

    /// `_NET_ACTIVE_WINDOW`, when set and non-zero.
    pub(crate) fn active(&self) -> Result<Option<Window>, X11Error> {
        let active = self.cardinals(self.root, self.atoms._NET_ACTIVE_WINDOW)?;
        Ok(active.first().copied().filter(|window| *window != 0))
    }

    /// Focus and pointer. A vanished active window is reported as none. The pointer query
    /// travels with the active-window query: two round trips in all.
    pub(crate) fn focus(&self, app_pid: Option<u32>) -> Result<FocusFacts, X11Error> {
        let pointer = self
            .conn
            .query_pointer(self.root)
            .map_err(X11Error::conn("query pointer"))?;
        let active = match self.active()? {
            Some(window) => match self.facts(window, app_pid) {
                Ok(facts) => Some(facts),
                Err(X11Error::Reply { .. }) => None,
                Err(other) => return Err(other),
            },
            None => None,
        };
        let reply = pointer.reply().map_err(X11Error::reply("query pointer"))?;
        let pointer = ScreenPoint {
            x: u32::try_from(reply.root_x.max(0)).unwrap_or(0),
            y: u32::try_from(reply.root_y.max(0)).unwrap_or(0),
        };
        let input_focus = self
            .conn
            .get_input_focus()
            .map_err(X11Error::conn("get input focus"))?
            .reply()
            .map_err(X11Error::reply("get input focus"))?
            .focus;
        // 0 is None and 1 is PointerRoot: no window holds the focus.
        let focused = (input_focus > 1).then_some(input_focus);
        Ok(FocusFacts {
            active,
            focused,
            pointer,
        })
    }

    fn client_message(&self, window: Window, kind: u32, data: [u32; 5]) -> Result<(), X11Error> {
        let event = ClientMessageEvent::new(32, window, kind, data);
        self.conn
            .send_event(
                false,
                self.root,
                EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                event,
            )
            .map_err(X11Error::conn("send client message"))?
            .check()
            .map_err(X11Error::reply("send client message"))
    }

    /// Asks the window manager to maximize `window` both ways.
    pub(crate) fn request_maximize(&self, window: Window) -> Result<(), X11Error> {
        let atoms = self.atoms;
        self.client_message(
            window,
            atoms._NET_WM_STATE,
            [
                NET_WM_STATE_ADD,
                atoms._NET_WM_STATE_MAXIMIZED_VERT,
                atoms._NET_WM_STATE_MAXIMIZED_HORZ,
                SOURCE_APPLICATION,
                0,
            ],
        )
    }

    /// Asks the window manager to activate (raise and focus) `window`.
    pub(crate) fn activate(&self, window: Window) -> Result<(), X11Error> {
        self.client_message(
            window,
            self.atoms._NET_ACTIVE_WINDOW,
            [SOURCE_APPLICATION, x11rb::CURRENT_TIME, 0, 0, 0],
        )
    }
}
