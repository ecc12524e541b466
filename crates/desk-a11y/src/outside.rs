//! Reading a session app's tree from outside its session: what the observer
//! (`deskbroker observer`, containment G001) does, on connections of its own, without the
//! worker.
//!
//! The caller names the session bus's socket as the host sees it and how a path inside the
//! sandbox maps to the host; [`snapshot_outside`] asks the session bus for the AT-SPI bus
//! (`org.a11y.Bus.GetAddress`), maps that address's socket path to the host, connects to it
//! (EXTERNAL authentication under the caller's uid, which the bus configuration must admit),
//! finds the registered application whose connection belongs to one of `app_pids` (pids as the
//! bus sees them: the sandbox's pid namespace) and walks its tree with the worker's bounded walk.
//! Everything runs under one deadline; nothing is sent to the app but reads.

use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_contract::a11y::{AxLimits, AxTree};

use crate::A11yError;

/// Reads the app's tree from outside its session (see the module documentation) within
/// `limits`, all of it bounded by `deadline`. With `aim`, the walk is aimed at that screen
/// point: it reads below a node only when the node's extents contain the point or it has none
/// (the application and its top-level windows always), so every node left out lies outside it.
pub fn snapshot_outside(
    session_bus: &Path,
    map_path: &dyn Fn(&str) -> Option<PathBuf>,
    app_pids: &[u32],
    limits: AxLimits,
    deadline: Duration,
    aim: Option<(u32, u32)>,
) -> Result<AxTree, A11yError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| A11yError::Unavailable(format!("runtime: {error}")))?;
    let work = async {
        let session = zbus::connection::Builder::address(
            format!("unix:path={}", session_bus.display()).as_str(),
        )
        .map_err(A11yError::bus)?
        .build()
        .await
        .map_err(|error| {
            A11yError::Unavailable(format!(
                "the session bus {} refused: {error}",
                session_bus.display()
            ))
        })?;
        let reply = session
            .call_method(
                Some("org.a11y.Bus"),
                "/org/a11y/bus",
                Some("org.a11y.Bus"),
                "GetAddress",
                &(),
            )
            .await
            .map_err(|error| A11yError::Unavailable(format!("no AT-SPI bus: {error}")))?;
        let address: String = reply.body().deserialize().map_err(A11yError::bus)?;
        let inside = unix_path(&address).ok_or_else(|| {
            A11yError::Unavailable(format!("the AT-SPI bus address {address:?} has no path"))
        })?;
        let host = map_path(inside).ok_or_else(|| {
            A11yError::Unavailable(format!(
                "the AT-SPI bus socket {inside} is not reachable from outside the session"
            ))
        })?;
        let bus =
            zbus::connection::Builder::address(format!("unix:path={}", host.display()).as_str())
                .map_err(A11yError::bus)?
                .build()
                .await
                .map_err(|error| {
                    A11yError::Unavailable(format!(
                        "the AT-SPI bus {} refused: {error}",
                        host.display()
                    ))
                })?;
        let pid = registered_pid(&bus, app_pids).await?;
        crate::observe::walk_aimed(&bus, pid, limits, aim)
            .await
            .map(|(tree, _)| tree)
    };
    runtime.block_on(async {
        tokio::time::timeout(deadline, work).await.map_err(|_| {
            A11yError::Unavailable(format!(
                "the accessibility bus did not answer within {} ms",
                deadline.as_millis()
            ))
        })?
    })
}

/// The `path` of a `unix:path=...[,key=value...]` D-Bus address.
fn unix_path(address: &str) -> Option<&str> {
    let rest = address.strip_prefix("unix:")?;
    rest.split(',').find_map(|pair| pair.strip_prefix("path="))
}

/// The first of `app_pids` a registered application's connection belongs to.
async fn registered_pid(bus: &zbus::Connection, app_pids: &[u32]) -> Result<u32, A11yError> {
    let registry = crate::observe::accessible(
        bus,
        "org.a11y.atspi.Registry",
        "/org/a11y/atspi/accessible/root",
    )
    .await
    .map_err(A11yError::bus)?;
    let apps = registry.get_children().await.map_err(A11yError::bus)?;
    let dbus = zbus::fdo::DBusProxy::new(bus)
        .await
        .map_err(A11yError::bus)?;
    for app in apps {
        let Some(name) = app.name() else { continue };
        let bus_name = zbus::names::BusName::from(name.clone());
        if let Ok(pid) = dbus.get_connection_unix_process_id(bus_name).await
            && app_pids.contains(&pid)
        {
            return Ok(pid);
        }
    }
    Err(A11yError::AppNotRegistered(format!(
        "no accessible application of the session's app (pids {app_pids:?}) on its bus"
    )))
}

#[cfg(test)]
mod tests {
    use super::unix_path;
    use crate::observe::descends;
    use desk_contract::desktop::WindowRect;

    #[test]
    fn an_aimed_walk_descends_only_where_the_point_may_be() {
        let rect = |x, y, width, height| {
            Some(WindowRect {
                x,
                y,
                width,
                height,
            })
        };
        let aim = Some((100, 50));
        // A child without extents: unknown, descended into.
        assert!(descends(2, None, aim));
        // A child containing the point (edges: left/top in, right/bottom out).
        assert!(descends(2, rect(90, 40, 20, 20), aim));
        assert!(descends(3, rect(100, 50, 1, 1), aim));
        // One outside is not.
        assert!(!descends(2, rect(0, 0, 100, 50), aim));
        assert!(!descends(2, rect(101, 0, 50, 100), aim));
        assert!(!descends(4, rect(0, 51, 200, 10), aim));
        // The application and its top-level windows always are; so is everything unaimed.
        assert!(descends(0, rect(0, 0, 1, 1), aim));
        assert!(descends(1, rect(500, 500, 10, 10), aim));
        assert!(descends(2, rect(0, 0, 1, 1), None));
    }

    #[test]
    fn the_socket_path_is_read_from_a_unix_address() {
        assert_eq!(
            unix_path("unix:path=/run/desk-bus/at-spi/bus_0,guid=ab"),
            Some("/run/desk-bus/at-spi/bus_0")
        );
        assert_eq!(unix_path("unix:guid=ab,path=/x"), Some("/x"));
        assert_eq!(unix_path("unix:abstract=/x"), None);
        assert_eq!(unix_path("tcp:host=localhost"), None);
    }
}
