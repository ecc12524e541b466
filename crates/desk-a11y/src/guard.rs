//! The accessible leg of the worker's destination check (`desk-x11`'s `destination.rs`): a
//! panel docked inside the app's main window (FreeCAD's "Python console") has no X window of its
//! own, so the profile names it by what AT-SPI says of it (`ProhibitedDestination`'s
//! `accessible_role`/`accessible_name`). Before seat input the worker asks whether a showing
//! accessible matching a rule lies under a pointer action's point (its extents, read from the
//! provider) or holds the keyboard focus (it or a descendant has the `focused` state).
//!
//! The scan reads the app's top-level windows and the objects docked directly in them
//! (`SCAN_DEPTH`): a Qt dock widget is a child of its main window. Only showing objects count
//! and only showing objects are descended into. The whole check runs within a bound given by
//! the caller; a provider that does not answer in time is `A11yError::ProviderBusy`, which the
//! worker turns into a refusal (never input sent blind).

use std::time::Duration;

use atspi::{CoordType, ObjectRefOwned, State};
use desk_contract::desktop::ProhibitedDestination;
use futures_util::future::join_all;
use zbus::Connection;

use crate::observe::{accessible, component, find_app, rect};
use crate::{A11yError, Accessibility};

/// Depth of the scan below the application (1: its top-level windows, 2: what is docked in
/// them).
const SCAN_DEPTH: u32 = 2;
/// At most this many objects are read in the scan.
const SCAN_NODES: usize = 256;
/// How long finding the app on the bus (the registry's list, each member's pid) may take; once
/// per app start, the application object is kept.
const FIND_BOUND: Duration = Duration::from_secs(1);
/// Depth and size of the search for the focused object below a matching one.
const FOCUS_DEPTH: u32 = 8;
const FOCUS_NODES: usize = 512;

/// Where seat input would go, as the accessible leg sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputTarget {
    /// A pointer action at this root point.
    Point {
        /// Root x.
        x: i32,
        /// Root y.
        y: i32,
    },
    /// Keys or text: the keyboard focus.
    Focus,
}

/// A prohibited accessible the input would reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProhibitedHit {
    /// Index of the matching rule.
    pub rule: usize,
    /// The accessible's role.
    pub role: String,
    /// The accessible's name.
    pub name: String,
}

struct Seen {
    object: ObjectRefOwned,
    role: String,
    name: String,
    showing: bool,
    focused: bool,
    children: Vec<ObjectRefOwned>,
}

async fn look(connection: &Connection, object: ObjectRefOwned) -> zbus::Result<Seen> {
    let (Some(bus), path) = (object.name_as_str(), object.path_as_str()) else {
        return Err(zbus::Error::Failure("null object reference".to_string()));
    };
    let proxy = accessible(connection, bus, path).await?;
    let (role, name, states, children) = tokio::try_join!(
        proxy.get_role(),
        proxy.name(),
        proxy.get_state(),
        proxy.get_children()
    )?;
    Ok(Seen {
        role: role.name().to_string(),
        name,
        showing: states.contains(State::Showing),
        focused: states.contains(State::Focused),
        children: children.into_iter().filter(|c| !c.is_null()).collect(),
        object,
    })
}

/// Reads `level` concurrently; objects that went away are left out.
async fn read_level(connection: &Connection, level: Vec<ObjectRefOwned>) -> Vec<Seen> {
    join_all(level.into_iter().map(|object| look(connection, object)))
        .await
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

/// Whether `object` or a showing descendant (bounded) holds the focus.
async fn holds_focus(connection: &Connection, object: &Seen) -> bool {
    if object.focused {
        return true;
    }
    let mut level = object.children.clone();
    let mut read = 0;
    for _ in 0..FOCUS_DEPTH {
        if level.is_empty() || read >= FOCUS_NODES {
            break;
        }
        level.truncate(FOCUS_NODES - read);
        read += level.len();
        let seen = read_level(connection, level).await;
        if seen.iter().any(|seen| seen.showing && seen.focused) {
            return true;
        }
        level = seen
            .into_iter()
            .filter(|seen| seen.showing)
            .flat_map(|seen| seen.children)
            .collect();
    }
    false
}

async fn contains_point(connection: &Connection, object: &ObjectRefOwned, x: i32, y: i32) -> bool {
    let (Some(bus), path) = (object.name_as_str(), object.path_as_str()) else {
        return false;
    };
    let Ok(proxy) = component(connection, bus, path).await else {
        return false;
    };
    let Ok(extents) = proxy.get_extents(CoordType::Screen).await else {
        return false;
    };
    rect(extents).is_some_and(|r| {
        x >= r.x
            && y >= r.y
            && i64::from(x) < i64::from(r.x) + i64::from(r.width)
            && i64::from(y) < i64::from(r.y) + i64::from(r.height)
    })
}

/// The scan; an application object that cannot be read (its provider went away) is an error,
/// never "nothing prohibited".
async fn scan(
    connection: &Connection,
    app: ObjectRefOwned,
    target: InputTarget,
    rules: &[ProhibitedDestination],
) -> Result<Option<ProhibitedHit>, A11yError> {
    let root = look(connection, app).await.map_err(A11yError::bus)?;
    let mut level = root.children;
    let mut read = 0;
    for _ in 1..=SCAN_DEPTH {
        if level.is_empty() || read >= SCAN_NODES {
            break;
        }
        level.truncate(SCAN_NODES - read);
        read += level.len();
        let seen = read_level(connection, level).await;
        for object in &seen {
            if !object.showing {
                continue;
            }
            let Some(rule) = rules
                .iter()
                .position(|rule| rule.matches_accessible(&object.role, &object.name))
            else {
                continue;
            };
            let reached = match target {
                InputTarget::Point { x, y } => {
                    contains_point(connection, &object.object, x, y).await
                }
                InputTarget::Focus => holds_focus(connection, object).await,
            };
            if reached {
                return Ok(Some(ProhibitedHit {
                    rule,
                    role: object.role.clone(),
                    name: object.name.clone(),
                }));
            }
        }
        level = seen
            .into_iter()
            .filter(|seen| seen.showing)
            .flat_map(|seen| seen.children)
            .collect();
    }
    Ok(None)
}

impl Accessibility {
    /// The prohibited accessible (by `rules`' accessible parts) that seat input to `target`
    /// would reach in the app of `app_pid`, if any; `ProviderBusy` when the bus or the app did
    /// not answer within `bound` (the caller refuses then: nothing was sent), `Unavailable` or
    /// `AppNotRegistered` when the app is not on the bus at all.
    pub fn prohibited_target(
        &mut self,
        app_pid: u32,
        target: InputTarget,
        rules: &[ProhibitedDestination],
        bound: Duration,
    ) -> Result<Option<ProhibitedHit>, A11yError> {
        if !rules.iter().any(ProhibitedDestination::names_accessibles) {
            return Ok(None);
        }
        let connection = self.connect()?;
        let bus = connection.connection();
        let cached = self.app.clone().filter(|(pid, _)| *pid == app_pid);
        let result = self.runtime.block_on(async {
            if let Some((_, app)) = cached {
                // A cached object of an app that restarted fails to read: found again.
                match tokio::time::timeout(bound, scan(bus, app.clone(), target, rules)).await {
                    Ok(Ok(hit)) => return Ok(Ok((app, hit))),
                    Ok(Err(_)) => {}
                    Err(elapsed) => return Err(elapsed),
                }
            }
            // Finding the app asks the registry and the bus, not the app: bounded apart.
            let app = match tokio::time::timeout(FIND_BOUND, find_app(bus, app_pid)).await {
                Ok(Ok(app)) => app,
                Ok(Err(error)) => return Ok(Err(error)),
                Err(elapsed) => return Err(elapsed),
            };
            tokio::time::timeout(bound, scan(bus, app.clone(), target, rules))
                .await
                .map(|hit| hit.map(|hit| (app, hit)))
        });
        match result {
            Ok(Ok((app, hit))) => {
                self.app = Some((app_pid, app));
                Ok(hit)
            }
            Ok(Err(error)) => {
                self.app = None;
                if error.drops_connection() {
                    self.connection = None;
                }
                Err(error)
            }
            Err(_) => {
                self.app = None;
                Err(A11yError::ProviderBusy(format!(
                    "the app's accessibility did not answer the destination check within {} ms \
                     (finding the app: {} ms)",
                    bound.as_millis(),
                    FIND_BOUND.as_millis()
                )))
            }
        }
    }
}
