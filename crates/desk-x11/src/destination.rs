//! The destination check before seat input (control-session PRG-26, adapted to X11).
//!
//! XTEST input is global: it goes to whatever window is under the pointer or holds the keyboard
//! focus. So before a pointer action every point it presses, releases or moves to must lie on
//! a window of the bound app: the top-most window there (`TranslateCoordinates` on the root) is
//! one of the app's own top-level windows (its main window, a dialog, an admitted popup) or the
//! window manager's frame around one of them. Before keys or text the window holding the X input
//! focus must be, or lie inside, a window of the app. Anything else (the bare desktop, another
//! client's window or menu on top, focus on nothing) is refused with `DestinationNotApp`
//! before the first event: nothing is sent.
//!
//! "Of the app" is `_NET_WM_PID` equal to the bound app's pid, the same rule the window list
//! uses. Without a bound app (no handoff yet) there is nothing to check against.
//!
//! Then the profile's prohibited destinations (`WindowRules::prohibited`, kept from the
//! handoff): the app's client window the input would reach (under each point, or holding the
//! focus) is named by its `WM_CLASS` and title, and a match (FreeCAD's macro and customize
//! dialogs, a floating Python console, the add-on manager, a web view) is refused with
//! `DestinationProhibited` before the first event. This is the layer outside the app: it holds
//! when the app's own lockdown fails, for every destination that is a window of its own. A
//! widget docked inside the main window has no window of its own to X: rules naming an
//! accessible role/name (`accessible.rs`) are checked through AT-SPI for input whose
//! destination is the app's main window (the accessible under each point, the accessible
//! holding the focus), refused unverified when AT-SPI does not answer in time
//! (`docs/security.md`, "FreeCAD entry paths"). A profile without rules costs nothing; with
//! rules, one batch of three property reads per destination window, plus the AT-SPI scan
//! when a rule names accessibles.

mod accessible;
mod snapshot;

pub(crate) use snapshot::GuardSnapshot;

use desk_a11y::InputTarget;
use desk_contract::desktop::{FocusFacts, ProhibitedDestination};
use desk_contract::geometry::ScreenPoint;
use desk_contract::validate::InputAction;
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, GetPropertyReply, Window};

use crate::error::X11Error;
use crate::session::X11Session;

/// How many window levels below a top-level window are searched for the app's client window
/// (a frame holds its client one or two levels down).
const FRAME_DEPTH: usize = 3;
/// At most this many windows are read per level: a frame has a handful of decoration windows.
const FRAME_WIDTH: usize = 64;

/// Where seat input would go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// A window of the bound app (its client window, the one holding `_NET_WM_PID`), or a
    /// frame around it.
    App(Window),
    /// No window: the bare desktop (the root).
    Desktop,
    /// Another client's window, numbered as X numbers it.
    Foreign(Window),
}

impl X11Session {
    /// Refuses `action` with `DestinationNotApp` when its seat input would reach anything but
    /// the bound app. Semantic steps, waits and `done` send no seat input and pass.
    pub(crate) fn check_destination(
        &mut self,
        action: &InputAction,
        focus: &FocusFacts,
    ) -> Result<(), WorkerFailure> {
        let Some(pid) = self.app_pid() else {
            return Ok(());
        };
        let points: Vec<ScreenPoint> = match action {
            InputAction::Click { at, .. } | InputAction::DoubleClick { at, .. } => vec![*at],
            InputAction::Move { to, .. } => vec![*to],
            InputAction::Drag { path, .. } => path.clone(),
            InputAction::Scroll { .. } => vec![focus.pointer],
            InputAction::Key { .. } | InputAction::Type { .. } => {
                return self.check_keyboard(focus, pid);
            }
            InputAction::Wait { .. }
            | InputAction::Done
            | InputAction::AxPress { .. }
            | InputAction::AxSetText { .. } => return Ok(()),
        };
        let main = self.app.map(|app| app.window);
        let mut inside_main = Vec::new();
        for point in points {
            match self.destination_at(point, pid).map_err(unverified)? {
                Destination::App(client) => {
                    self.check_prohibited(client)?;
                    if Some(client) == main && self.has_accessible_rules() {
                        inside_main.push(InputTarget::Point {
                            x: i32::try_from(point.x).unwrap_or(i32::MAX),
                            y: i32::try_from(point.y).unwrap_or(i32::MAX),
                        });
                    }
                }
                Destination::Desktop => {
                    return Err(refused(format!(
                        "({}, {}) is on the bare desktop, not on a window of the app; nothing \
                         was sent",
                        point.x, point.y
                    )));
                }
                Destination::Foreign(window) => {
                    return Err(refused(format!(
                        "({}, {}) is on window {window:#x}, which is not the app's; nothing was \
                         sent",
                        point.x, point.y
                    )));
                }
            }
        }
        if !inside_main.is_empty() {
            self.check_accessible(pid, &inside_main, focus.focused)?;
        }
        Ok(())
    }

    fn check_keyboard(&mut self, focus: &FocusFacts, pid: u32) -> Result<(), WorkerFailure> {
        let Some(focused) = focus.focused else {
            return Err(refused(
                "no window holds the keyboard focus, so keys would go nowhere or to whatever \
                 is under the pointer; nothing was sent"
                    .to_string(),
            ));
        };
        if let Some(client) = self.inside_app(focused, pid).map_err(unverified)? {
            self.check_prohibited(client)?;
            if Some(client) == self.app.map(|app| app.window) && self.has_accessible_rules() {
                self.check_accessible(pid, &[InputTarget::Focus], Some(focused))?;
            }
            return Ok(());
        }
        Err(refused(format!(
            "the keyboard focus is on window {focused:#x}, which is not the app's; nothing was \
             sent"
        )))
    }

    /// The top-level window under `point` and whose it is.
    fn destination_at(&self, point: ScreenPoint, pid: u32) -> Result<Destination, X11Error> {
        // Points were checked against the display first, so they fit X's 16-bit coordinates.
        let coordinate = |value: u32| {
            i16::try_from(value).map_err(|_| {
                X11Error::InvalidRequest(format!("coordinate {value} is beyond X's range"))
            })
        };
        let (x, y) = (coordinate(point.x)?, coordinate(point.y)?);
        let top = self
            .conn
            .translate_coordinates(self.root, self.root, x, y)
            .map_err(X11Error::conn("translate coordinates"))?
            .reply()
            .map_err(X11Error::reply("translate coordinates"))?
            .child;
        if top == x11rb::NONE {
            return Ok(Destination::Desktop);
        }
        Ok(match self.holds_app(top, pid)? {
            Some(client) => Destination::App(client),
            None => Destination::Foreign(top),
        })
    }

    /// The app's client window among `window` and its descendants a few levels down (a
    /// frame's client), if any. Requests of one level travel together; a window that vanished
    /// meanwhile is not the app's.
    fn holds_app(&self, window: Window, pid: u32) -> Result<Option<Window>, X11Error> {
        let mut level = vec![window];
        for _ in 0..FRAME_DEPTH {
            level.truncate(FRAME_WIDTH);
            let mut asked = Vec::with_capacity(level.len());
            for window in &level {
                let window = *window;
                let owner = self
                    .conn
                    .get_property(false, window, self.atoms._NET_WM_PID, AtomEnum::ANY, 0, 1)
                    .map_err(X11Error::conn("get property"))?;
                let tree = self
                    .conn
                    .query_tree(window)
                    .map_err(X11Error::conn("query tree"))?;
                asked.push((window, owner, tree));
            }
            let mut next = Vec::new();
            for (window, owner, tree) in asked {
                if owner.reply().is_ok_and(|owner| owned_by(&owner, pid)) {
                    return Ok(Some(window));
                }
                if let Ok(tree) = tree.reply() {
                    next.extend(tree.children);
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        Ok(None)
    }

    /// The app's window among `window` and its ancestors (the nearest), if any.
    fn inside_app(&self, window: Window, pid: u32) -> Result<Option<Window>, X11Error> {
        let mut window = window;
        while window != self.root && window != x11rb::NONE {
            let owner = self
                .conn
                .get_property(false, window, self.atoms._NET_WM_PID, AtomEnum::ANY, 0, 1)
                .map_err(X11Error::conn("get property"))?;
            let tree = self
                .conn
                .query_tree(window)
                .map_err(X11Error::conn("query tree"))?;
            let (Ok(owner), Ok(tree)) = (owner.reply(), tree.reply()) else {
                // The focused window vanished while being read: not the app's.
                return Ok(None);
            };
            if owned_by(&owner, pid) {
                return Ok(Some(window));
            }
            window = tree.parent;
        }
        Ok(None)
    }

    /// Refuses with `DestinationProhibited` when the app's `client` window matches one of the
    /// profile's prohibited destinations.
    fn check_prohibited(&self, client: Window) -> Result<(), WorkerFailure> {
        if self.prohibited.is_empty() {
            return Ok(());
        }
        let (class, title) = self.class_and_title(client).map_err(unverified)?;
        match prohibited_match(&self.prohibited, &class, &title) {
            None => Ok(()),
            Some(rule) => Err(WorkerFailure {
                kind: WorkerFailureKind::DestinationProhibited,
                message: format!(
                    "the input would reach the app's {} (window {client:#x}, class {class:?}, \
                     title {title:?}), which this profile prohibits; nothing was sent",
                    rule.label
                ),
            }),
        }
    }

    /// `WM_CLASS` (instance and class joined by a space) and the title (`_NET_WM_NAME`, else
    /// `WM_NAME`) of `window`, read in one batch; a window that vanished meanwhile has neither.
    fn class_and_title(&self, window: Window) -> Result<(String, String), X11Error> {
        let ask = |property: u32| {
            self.conn
                .get_property(false, window, property, AtomEnum::ANY, 0, 1024)
                .map_err(X11Error::conn("get property"))
        };
        let class = ask(AtomEnum::WM_CLASS.into())?;
        let net_name = ask(self.atoms._NET_WM_NAME)?;
        let name = ask(AtomEnum::WM_NAME.into())?;
        let text = |reply: Result<GetPropertyReply, _>| {
            reply
                .ok()
                .filter(|reply: &GetPropertyReply| reply.format == 8 && !reply.value.is_empty())
                .map(|reply| String::from_utf8_lossy(&reply.value).into_owned())
        };
        let class = text(class.reply())
            .map(|class| class.trim_end_matches('\0').replace('\0', " "))
            .unwrap_or_default();
        let title = text(net_name.reply())
            .or_else(|| text(name.reply()))
            .unwrap_or_default();
        Ok((class, title))
    }
}

/// The first of `rules` a window of `class` and `title` matches.
fn prohibited_match<'a>(
    rules: &'a [ProhibitedDestination],
    class: &str,
    title: &str,
) -> Option<&'a ProhibitedDestination> {
    rules.iter().find(|rule| rule.matches(class, title))
}

/// Whether a `_NET_WM_PID` reply names `pid`.
fn owned_by(owner: &GetPropertyReply, pid: u32) -> bool {
    owner.value32().and_then(|mut values| values.next()) == Some(pid)
}

fn refused(message: String) -> WorkerFailure {
    WorkerFailure {
        kind: WorkerFailureKind::DestinationNotApp,
        message,
    }
}

/// The check itself failed before any input: the desktop failed, nothing was sent.
fn unverified(error: X11Error) -> WorkerFailure {
    WorkerFailure {
        kind: WorkerFailureKind::DesktopFailed,
        message: format!("the input's destination could not be checked: {error}"),
    }
}
