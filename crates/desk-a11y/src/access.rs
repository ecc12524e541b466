//! The [`Accessibility`] handle: its runtime, its connection to the session's bus and the
//! current observation, the bound window an action's element must live in, and the one rule
//! that classifies a top-level object (bound window, popup, other).

use std::time::Duration;

use atspi::AccessibilityConnection;
use desk_contract::a11y::{AxLimits, AxTree, AxWindow};
use desk_contract::desktop::WindowRect;

use crate::error::A11yError;
use crate::observe::{self, Retained};

/// How long connecting to the accessibility bus may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The current observation: the only one whose indices are valid.
#[derive(Debug)]
pub(crate) struct Observation {
    pub(crate) id: String,
    pub(crate) nodes: Vec<Retained>,
    pub(crate) roles: Vec<String>,
}

/// The app's accessibility, as seen from inside its session.
pub struct Accessibility {
    pub(crate) runtime: tokio::runtime::Runtime,
    pub(crate) connection: Option<AccessibilityConnection>,
    pub(crate) current: Option<Observation>,
    /// The app's accessible application object by pid, kept for the destination check.
    pub(crate) app: Option<(u32, atspi::ObjectRefOwned)>,
}

impl std::fmt::Debug for Accessibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accessibility")
            .field("connected", &self.connection.is_some())
            .field("current", &self.current.as_ref().map(|o| &o.id))
            .finish()
    }
}

/// Where the element an action targets must live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundWindow {
    /// The app's bound (main) window's client rectangle in root coordinates.
    pub rect: WindowRect,
    /// The window manager's frame around it (the client rectangle grown by
    /// `_NET_FRAME_EXTENTS`), when decorated: GTK 3 reports a window's extents as its frame's,
    /// Qt as its client area's.
    pub frame: Option<WindowRect>,
}

/// Top-level roles admitted as the app's popups (menus, tooltips) beside the bound window.
const POPUP_ROLES: &[&str] = &["popup menu", "menu", "tool tip"];

/// The window class of a top-level object (depth 1) of role `role` at `bounds`: the bound
/// window is a `frame` with exactly the bound window's client rectangle or exactly its window
/// manager frame's rectangle; popups are admitted by role;
/// anything else (a dialog, another window, a frame elsewhere) is `Other`. The one rule both the
/// snapshot's `window` field and the check before input apply.
pub(crate) fn classify(
    role: &str,
    bounds: Option<WindowRect>,
    bound: Option<BoundWindow>,
) -> AxWindow {
    if POPUP_ROLES.contains(&role) {
        AxWindow::Popup
    } else if role == "frame"
        && bound.is_some_and(|bound| {
            bounds.is_some() && (bounds == Some(bound.rect) || bounds == bound.frame)
        })
    {
        AxWindow::Bound
    } else {
        AxWindow::Other
    }
}

impl Accessibility {
    /// A handle with its runtime; it connects on first use.
    pub fn new() -> Result<Accessibility, A11yError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| A11yError::Unavailable(format!("runtime: {error}")))?;
        Ok(Accessibility {
            runtime,
            connection: None,
            current: None,
            app: None,
        })
    }

    /// Forgets the current observation (the app restarted): its indices become stale.
    pub fn invalidate(&mut self) {
        self.current = None;
        self.app = None;
    }

    /// The current observation's id, if any.
    pub fn current_observation(&self) -> Option<&str> {
        self.current.as_ref().map(|o| o.id.as_str())
    }

    pub(crate) fn connect(&mut self) -> Result<AccessibilityConnection, A11yError> {
        if let Some(connection) = &self.connection {
            return Ok(connection.clone());
        }
        let connected = self.runtime.block_on(async {
            tokio::time::timeout(CONNECT_TIMEOUT, AccessibilityConnection::new()).await
        });
        let connection = match connected {
            Ok(Ok(connection)) => connection,
            Ok(Err(error)) => {
                return Err(A11yError::Unavailable(format!(
                    "no accessibility bus in this session: {error}"
                )));
            }
            Err(_) => {
                return Err(A11yError::Unavailable(format!(
                    "the accessibility bus did not answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )));
            }
        };
        self.connection = Some(connection.clone());
        Ok(connection)
    }

    /// Reads the tree of the application whose provider runs as `app_pid` (as this process
    /// sees pids), within `limits`, and makes it the current observation. Each node's `window`
    /// says whether it lives in `bound` (the app's main window, when known), a popup, or
    /// another window.
    pub fn snapshot(
        &mut self,
        app_pid: u32,
        limits: AxLimits,
        bound: Option<BoundWindow>,
    ) -> Result<AxTree, A11yError> {
        let connection = self.connect()?;
        let result = self
            .runtime
            .block_on(observe::walk(connection.connection(), app_pid, limits));
        let (mut tree, nodes) = match result {
            Ok(done) => done,
            Err(error) => {
                if error.drops_connection() {
                    self.connection = None;
                }
                return Err(error);
            }
        };
        let windows: Vec<AxWindow> = nodes
            .iter()
            .map(|retained| match retained.toplevel {
                None => AxWindow::None,
                Some(top) => tree.nodes.get(top as usize).map_or(AxWindow::Other, |top| {
                    classify(&top.role, top.bounds, bound)
                }),
            })
            .collect();
        for (node, window) in tree.nodes.iter_mut().zip(windows) {
            node.window = window;
        }
        let roles = tree.nodes.iter().map(|node| node.role.clone()).collect();
        self.current = Some(Observation {
            id: tree.observation_id.clone(),
            nodes,
            roles,
        });
        Ok(tree)
    }
}
