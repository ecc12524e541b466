//! The accessible leg of the worker's destination check (`desk-x11`'s `destination.rs`): a
//! panel docked inside the app's main window (FreeCAD's "Python console") has no X window of its
//! own, so the profile names it by what AT-SPI says of it (`ProhibitedDestination`'s
//! `accessible_role`/`accessible_name`).
//!
//! One scan ([`Accessibility::guard_view`]) reads every showing accessible matching a rule, its
//! extents and whether it or a descendant holds the `focused` state: a [`GuardView`], from which
//! the verdict for a pointer point or for keys ([`GuardView::verdict`]) is pure. The worker
//! starts one on a thread of its own after each action's settle, while the app is idle and
//! answers fast, and uses it at the next input when nothing changed since; otherwise it scans
//! live.
//!
//! The scan reads the app's top-level windows and the objects docked directly in them
//! (`SCAN_DEPTH`): a Qt dock widget is a child of its main window. Only showing objects count
//! and only showing objects are descended into. The whole scan runs within a bound given by
//! the caller; a provider that does not answer in time is `A11yError::ProviderBusy`, which the
//! worker turns into a refusal (never input sent blind).
//!
//! Semantic steps (`ax_press`, `ax_set_text`) are checked by their target's ancestry instead
//! ([`Accessibility::prohibited_ancestor`]): an object inside a matching one (the console's
//! text field) is refused, showing or not.
//!
//! Over 400 lines: the background scan, the check at input and the semantic steps' ancestry check
//! share one matching rule and its bounds; split, each would restate them.

use std::time::Duration;

use atspi::{CoordType, ObjectRefOwned, State};
use desk_contract::desktop::{ProhibitedDestination, WindowRect};
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
/// How many ancestors of a semantic step's target are read at most.
const ANCESTRY_DEPTH: u32 = 64;

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

/// A showing accessible matching a rule, as the scan saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Region {
    hit: ProhibitedHit,
    /// Its extents on the screen; none when unreadable or empty (no point lies on it).
    extents: Option<WindowRect>,
    /// Whether it or a showing descendant (bounded) held the keyboard focus.
    focused: bool,
}

/// What one scan saw of the app's prohibited accessibles: the verdict for any input target
/// follows from it without asking the app again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardView {
    app_pid: u32,
    regions: Vec<Region>,
}

impl GuardView {
    /// The app the scan read.
    pub fn app_pid(&self) -> u32 {
        self.app_pid
    }

    /// How many showing prohibited accessibles the scan saw.
    pub fn showing(&self) -> usize {
        self.regions.len()
    }

    /// The prohibited accessible seat input to `target` would reach, if any: a point inside
    /// one's extents, or keys while one holds the focus.
    pub fn verdict(&self, target: InputTarget) -> Option<ProhibitedHit> {
        self.regions
            .iter()
            .find(|region| match target {
                InputTarget::Point { x, y } => region.extents.is_some_and(|r| {
                    x >= r.x
                        && y >= r.y
                        && i64::from(x) < i64::from(r.x) + i64::from(r.width)
                        && i64::from(y) < i64::from(r.y) + i64::from(r.height)
                }),
                InputTarget::Focus => region.focused,
            })
            .map(|region| region.hit.clone())
    }
}

async fn extents(connection: &Connection, object: &ObjectRefOwned) -> Option<WindowRect> {
    let (Some(bus), path) = (object.name_as_str(), object.path_as_str()) else {
        return None;
    };
    let proxy = component(connection, bus, path).await.ok()?;
    rect(proxy.get_extents(CoordType::Screen).await.ok()?)
}

/// The scan; an application object that cannot be read (its provider went away) is an error,
/// never "nothing prohibited".
async fn scan(
    connection: &Connection,
    app: ObjectRefOwned,
    rules: &[ProhibitedDestination],
) -> Result<Vec<Region>, A11yError> {
    let root = look(connection, app).await.map_err(A11yError::bus)?;
    let mut level = root.children;
    let mut read = 0;
    let mut regions = Vec::new();
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
            let (extents, focused) = tokio::join!(
                extents(connection, &object.object),
                holds_focus(connection, object)
            );
            regions.push(Region {
                hit: ProhibitedHit {
                    rule,
                    role: object.role.clone(),
                    name: object.name.clone(),
                },
                extents,
                focused,
            });
        }
        level = seen
            .into_iter()
            .filter(|seen| seen.showing)
            .flat_map(|seen| seen.children)
            .collect();
    }
    Ok(regions)
}

/// The first of `rules` that `object` or one of its ancestors (up to the application, at most
/// `ANCESTRY_DEPTH` levels) matches. An object on the way that cannot be read is an error.
async fn ancestry(
    connection: &Connection,
    bus: String,
    path: String,
    rules: &[ProhibitedDestination],
) -> Result<Option<ProhibitedHit>, A11yError> {
    let (mut bus, mut path) = (bus, path);
    for _ in 0..ANCESTRY_DEPTH {
        let proxy = accessible(connection, &bus, &path)
            .await
            .map_err(A11yError::bus)?;
        let (role, name, parent) = tokio::try_join!(proxy.get_role(), proxy.name(), proxy.parent())
            .map_err(A11yError::bus)?;
        let role = role.name().to_string();
        if let Some(rule) = rules
            .iter()
            .position(|rule| rule.matches_accessible(&role, &name))
        {
            return Ok(Some(ProhibitedHit { rule, role, name }));
        }
        if role == "application" || parent.is_null() {
            return Ok(None);
        }
        let Some(parent_bus) = parent.name_as_str() else {
            return Ok(None);
        };
        (bus, path) = (parent_bus.to_string(), parent.path_as_str().to_string());
    }
    Err(A11yError::Bus(format!(
        "the object's ancestry is deeper than {ANCESTRY_DEPTH} levels"
    )))
}

impl Accessibility {
    /// One scan of the prohibited accessibles (by `rules`' accessible parts) of the app of
    /// `app_pid`: `ProviderBusy` when the bus or the app did not answer within `bound` (the
    /// caller refuses then: nothing was sent), `Unavailable` or `AppNotRegistered` when the app
    /// is not on the bus at all.
    pub fn guard_view(
        &mut self,
        app_pid: u32,
        rules: &[ProhibitedDestination],
        bound: Duration,
    ) -> Result<GuardView, A11yError> {
        if !rules.iter().any(ProhibitedDestination::names_accessibles) {
            return Ok(GuardView {
                app_pid,
                regions: Vec::new(),
            });
        }
        let connection = self.connect()?;
        let bus = connection.connection();
        let cached = self.app.clone().filter(|(pid, _)| *pid == app_pid);
        let result = self.runtime.block_on(async {
            if let Some((_, app)) = cached {
                // A cached object of an app that restarted fails to read: found again.
                match tokio::time::timeout(bound, scan(bus, app.clone(), rules)).await {
                    Ok(Ok(regions)) => return Ok(Ok((app, regions))),
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
            tokio::time::timeout(bound, scan(bus, app.clone(), rules))
                .await
                .map(|regions| regions.map(|regions| (app, regions)))
        });
        match result {
            Ok(Ok((app, regions))) => {
                self.app = Some((app_pid, app));
                Ok(GuardView { app_pid, regions })
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

    /// The prohibited accessible (by `rules`' accessible parts) that `node` of the current
    /// observation is, or lies inside, read live within `bound`; errors as the semantic
    /// steps' checks (`StaleObservation`, `NoSuchNode`, `ProviderBusy`, `Bus`).
    pub fn prohibited_ancestor(
        &mut self,
        observation_id: &str,
        node: u32,
        rules: &[ProhibitedDestination],
        bound: Duration,
    ) -> Result<Option<ProhibitedHit>, A11yError> {
        if !rules.iter().any(ProhibitedDestination::names_accessibles) {
            return Ok(None);
        }
        let (retained, _) = self.retained(observation_id, node)?;
        let connection = self.connect()?;
        let bus = connection.connection();
        let result = self.runtime.block_on(async {
            tokio::time::timeout(
                bound,
                ancestry(bus, retained.bus_name, retained.path, rules),
            )
            .await
        });
        match result {
            Ok(answer) => {
                if let Err(error) = &answer
                    && error.drops_connection()
                {
                    self.connection = None;
                }
                answer
            }
            Err(_) => Err(A11yError::ProviderBusy(format!(
                "the app's accessibility did not say within {} ms whether the node lies in a \
                 prohibited panel; nothing was sent",
                bound.as_millis()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(extents: Option<WindowRect>, focused: bool) -> Region {
        Region {
            hit: ProhibitedHit {
                rule: 0,
                role: "frame".to_string(),
                name: "Python console".to_string(),
            },
            extents,
            focused,
        }
    }

    #[test]
    fn the_verdict_follows_the_extents_and_the_focus_of_the_view() {
        let rect = WindowRect {
            x: 0,
            y: 700,
            width: 1920,
            height: 300,
        };
        let view = GuardView {
            app_pid: 7,
            regions: vec![region(Some(rect), false)],
        };
        assert!(view.verdict(InputTarget::Point { x: 0, y: 700 }).is_some());
        assert!(
            view.verdict(InputTarget::Point { x: 1919, y: 999 })
                .is_some()
        );
        assert!(
            view.verdict(InputTarget::Point { x: 1920, y: 999 })
                .is_none()
        );
        assert!(view.verdict(InputTarget::Point { x: 10, y: 699 }).is_none());
        assert!(view.verdict(InputTarget::Focus).is_none());
        let focused = GuardView {
            app_pid: 7,
            regions: vec![region(None, true)],
        };
        assert!(focused.verdict(InputTarget::Focus).is_some());
        assert!(focused.verdict(InputTarget::Point { x: 5, y: 5 }).is_none());
        let empty = GuardView {
            app_pid: 7,
            regions: Vec::new(),
        };
        assert!(empty.verdict(InputTarget::Focus).is_none());
    }
}
