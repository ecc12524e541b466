//! The bounded breadth-first walk of one application's tree. Each level's objects are read
//! concurrently (D-Bus calls pipelined on one connection), so the walk costs about one round
//! trip per level rather than several per node. An aimed walk ([`walk_aimed`], the observer's
//! for a pointer step) reads below a node only where its extents hold the point ([`descends`]).

use std::time::{Duration, Instant};

use atspi::proxy::accessible::AccessibleProxy;
use atspi::proxy::action::ActionProxy;
use atspi::proxy::component::ComponentProxy;
use atspi::{CoordType, Interface, ObjectRefOwned};
use desk_contract::a11y::{AxLimits, AxNode, AxTree};
use desk_contract::desktop::WindowRect;
use futures_util::future::{join_all, try_join_all};
use zbus::Connection;
use zbus::proxy::CacheProperties;

use crate::A11yError;

/// At most this many objects are read at once.
const CONCURRENCY: usize = 256;
/// At most this many action names are read per node; a provider may claim any count.
const MAX_ACTIONS: i32 = 16;

/// What one object said about itself.
struct Read {
    children: Vec<ObjectRefOwned>,
    role: String,
    name: String,
    states: Vec<String>,
    bounds: Option<WindowRect>,
    actions: Vec<String>,
    editable: bool,
}

/// A queued object: where it is and who its parent is.
struct Queued {
    object: ObjectRefOwned,
    parent: Option<u32>,
    depth: u32,
}

pub(crate) async fn accessible<'a>(
    connection: &'a Connection,
    bus_name: &str,
    path: &str,
) -> zbus::Result<AccessibleProxy<'a>> {
    AccessibleProxy::builder(connection)
        .destination(bus_name.to_string())?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

pub(crate) async fn component<'a>(
    connection: &'a Connection,
    bus_name: &str,
    path: &str,
) -> zbus::Result<ComponentProxy<'a>> {
    ComponentProxy::builder(connection)
        .destination(bus_name.to_string())?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

pub(crate) async fn action<'a>(
    connection: &'a Connection,
    bus_name: &str,
    path: &str,
) -> zbus::Result<ActionProxy<'a>> {
    ActionProxy::builder(connection)
        .destination(bus_name.to_string())?
        .path(path.to_string())?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

/// A screen rectangle from AT-SPI extents; objects without a size have none.
pub(crate) fn rect((x, y, width, height): (i32, i32, i32, i32)) -> Option<WindowRect> {
    let width = u32::try_from(width).ok().filter(|w| *w > 0)?;
    let height = u32::try_from(height).ok().filter(|h| *h > 0)?;
    Some(WindowRect {
        x,
        y,
        width,
        height,
    })
}

fn names(object: &ObjectRefOwned) -> Option<(String, String)> {
    Some((
        object.name_as_str()?.to_string(),
        object.path_as_str().to_string(),
    ))
}

async fn read(connection: &Connection, object: &ObjectRefOwned) -> zbus::Result<Read> {
    let Some((bus_name, path)) = names(object) else {
        return Err(zbus::Error::Failure("null object reference".to_string()));
    };
    let proxy = accessible(connection, &bus_name, &path).await?;
    let (children, role, name, states, interfaces) = tokio::try_join!(
        proxy.get_children(),
        proxy.get_role(),
        proxy.name(),
        proxy.get_state(),
        proxy.get_interfaces()
    )?;
    let bounds = async {
        if !interfaces.contains(Interface::Component) {
            return Ok(None);
        }
        let component = component(connection, &bus_name, &path).await?;
        Ok::<_, zbus::Error>(rect(component.get_extents(CoordType::Screen).await?))
    };
    let actions = async {
        if !interfaces.contains(Interface::Action) {
            return Ok(Vec::new());
        }
        // The canonical calls (control-session AX-18): `NActions`, then `GetName` per index;
        // never the batch `GetActions`, which some providers lack or answer differently.
        let action = action(connection, &bus_name, &path).await?;
        let count = action.n_actions().await?.clamp(0, MAX_ACTIONS);
        let names = try_join_all((0..count).map(|index| action.get_name(index))).await?;
        Ok::<_, zbus::Error>(names)
    };
    let (bounds, actions) = tokio::try_join!(bounds, actions)?;
    Ok(Read {
        children: children.into_iter().filter(|c| !c.is_null()).collect(),
        role: role.name().to_string(),
        name,
        states: states
            .iter()
            .map(|state| state.to_static_str().to_string())
            .collect(),
        bounds,
        actions,
        editable: interfaces.contains(Interface::EditableText),
    })
}

/// The registered application whose bus connection belongs to process `app_pid`.
pub(crate) async fn find_app(
    connection: &Connection,
    app_pid: u32,
) -> Result<ObjectRefOwned, A11yError> {
    let registry = accessible(
        connection,
        "org.a11y.atspi.Registry",
        "/org/a11y/atspi/accessible/root",
    )
    .await
    .map_err(A11yError::bus)?;
    let apps = registry.get_children().await.map_err(A11yError::bus)?;
    let dbus = zbus::fdo::DBusProxy::new(connection)
        .await
        .map_err(A11yError::bus)?;
    let mut seen = Vec::new();
    for app in apps {
        let Some(name) = app.name() else { continue };
        let bus_name = zbus::names::BusName::from(name.clone());
        match dbus.get_connection_unix_process_id(bus_name).await {
            Ok(pid) if pid == app_pid => return Ok(app),
            Ok(pid) => seen.push(pid),
            Err(error) => tracing::debug!(%error, "an application's pid is unreadable"),
        }
    }
    Err(A11yError::AppNotRegistered(format!(
        "no accessible application of pid {app_pid} on the session's bus (registered pids: \
         {seen:?}); the app may not be accessible or not started yet"
    )))
}

/// Walks the app's tree within `limits`; the tree and the retained identities, index for index.
pub(crate) async fn walk(
    connection: &Connection,
    app_pid: u32,
    limits: AxLimits,
) -> Result<(AxTree, Vec<Retained>), A11yError> {
    walk_aimed(connection, app_pid, limits, None).await
}

/// Whether an aimed walk reads the children of a node at `depth` with `bounds`: always for the
/// application and its top-level windows (popups and dialogs are windows of their own), for a
/// node without extents (unknown: conservative) and for one whose extents contain `aim`; never
/// for one that lies wholly outside it. Without an aim, always.
pub(crate) fn descends(depth: u32, bounds: Option<WindowRect>, aim: Option<(u32, u32)>) -> bool {
    let Some((x, y)) = aim else { return true };
    let Some(rect) = bounds else { return true };
    if depth <= 1 {
        return true;
    }
    let (x, y) = (i64::from(x), i64::from(y));
    let (left, top) = (i64::from(rect.x), i64::from(rect.y));
    x >= left && y >= top && x < left + i64::from(rect.width) && y < top + i64::from(rect.height)
}

/// [`walk`], reading below a node only where [`descends`] says so for `aim`: what it leaves out
/// lies outside the point, so the tree answers what is at the point, not the whole app.
pub(crate) async fn walk_aimed(
    connection: &Connection,
    app_pid: u32,
    limits: AxLimits,
    aim: Option<(u32, u32)>,
) -> Result<(AxTree, Vec<Retained>), A11yError> {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(u64::from(limits.deadline_ms));
    let app = find_app(connection, app_pid).await?;
    let max_nodes = limits.max_nodes as usize;
    let mut nodes: Vec<AxNode> = Vec::new();
    let mut retained: Vec<Retained> = Vec::new();
    let mut truncated = false;
    let mut level = vec![Queued {
        object: app,
        parent: None,
        depth: 0,
    }];
    'levels: while !level.is_empty() {
        let mut next = Vec::new();
        for chunk in level.chunks(CONCURRENCY) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let reads = join_all(chunk.iter().map(|queued| read(connection, &queued.object)));
            let Ok(reads) = tokio::time::timeout(remaining, reads).await else {
                truncated = true;
                break 'levels;
            };
            for (queued, read) in chunk.iter().zip(reads) {
                let read = match read {
                    Ok(read) => read,
                    Err(error) if queued.parent.is_none() => return Err(A11yError::bus(error)),
                    Err(error) => {
                        // An object that went away during the walk, or did not answer (a busy
                        // app): left out, and the walk says it is incomplete.
                        tracing::debug!(%error, "an accessible object could not be read");
                        truncated = true;
                        continue;
                    }
                };
                if nodes.len() >= max_nodes {
                    truncated = true;
                    break 'levels;
                }
                let index = nodes.len() as u32;
                let (bus_name, path) = names(&queued.object).unwrap_or_default();
                let toplevel = match queued.parent {
                    None => None,
                    Some(parent) => retained
                        .get(parent as usize)
                        .and_then(|p| p.toplevel)
                        .or(Some(index)),
                };
                retained.push(Retained {
                    bus_name,
                    path,
                    toplevel,
                });
                nodes.push(AxNode {
                    index,
                    parent: queued.parent,
                    depth: queued.depth,
                    role: read.role,
                    name: read.name,
                    states: read.states,
                    bounds: read.bounds,
                    actions: read.actions,
                    editable: read.editable,
                    child_count: read.children.len() as u32,
                    // Classified by `Accessibility::snapshot` once the whole level is known.
                    window: Default::default(),
                });
                if read.children.is_empty() || !descends(queued.depth, read.bounds, aim) {
                    continue;
                }
                if queued.depth >= limits.max_depth {
                    truncated = true;
                    continue;
                }
                next.extend(read.children.into_iter().map(|object| Queued {
                    object,
                    parent: Some(index),
                    depth: queued.depth + 1,
                }));
            }
        }
        if nodes.len() + next.len() > max_nodes {
            // Read no more than the limit allows.
            next.truncate(max_nodes.saturating_sub(nodes.len()));
            truncated = true;
        }
        level = next;
    }
    let tree = AxTree {
        observation_id: new_observation_id()?,
        nodes,
        truncated,
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    Ok((tree, retained))
}

/// One retained object of an observation.
#[derive(Debug, Clone)]
pub(crate) struct Retained {
    /// Unique bus name of the provider.
    pub(crate) bus_name: String,
    /// Object path.
    pub(crate) path: String,
    /// Index of its top-level window (depth 1); `None` for the application itself.
    pub(crate) toplevel: Option<u32>,
}

/// A fresh observation id: `ax_` and 16 random hex digits.
pub(crate) fn new_observation_id() -> Result<String, A11yError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|error| A11yError::Unavailable(format!("randomness: {error}")))?;
    Ok(format!("ax_{}", hex::encode(bytes)))
}
