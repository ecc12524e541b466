//! What the observer reads of a session itself (`serve.rs` signs it): the app's tree from
//! outside the session's sandbox and the last frame captured for it.
//!
//! - The tree: the session's session bus socket as the host sees it (`<workspace>/bus/bus` with
//!   split identities, else `<workspace>/run/bus`), the AT-SPI bus address it names mapped from
//!   the sandbox's paths to the host's ([`map_inside`], never outside the workspace), and the
//!   application whose connection belongs to the session's app (its recorded process and its
//!   descendants, by their pids in the sandbox's pid namespace, `NSpid` of `/proc/<pid>/status`),
//!   walked with `desk_a11y::snapshot_outside` within [`MAX_NODES`], [`MAX_DEPTH`] and
//!   [`TREE_DEADLINE_MS`]: the whole tree, or for a request with a point (a pointer step's)
//!   a walk aimed at it (below the top-level windows, only nodes whose extents hold the point
//!   or who have none are descended into).
//! - The frame: the newest `<session>/frames/<sequence>.png`, read (at most [`MAX_FRAME_BYTES`])
//!   and hashed.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use desk_contract::a11y::{AxLimits, AxTree};
use desk_desktop::SessionDir;
use sha2::Digest as _;

use super::{MAX_DEPTH, MAX_FRAME_BYTES, MAX_NODES, ObservedFrame, TREE_DEADLINE_MS};

/// The newest frame file of the session, hashed.
pub(super) fn last_frame(session_dir: &SessionDir) -> Option<ObservedFrame> {
    let dir = session_dir.path().join("frames");
    let sequence = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            name.to_str()?.strip_suffix(".png")?.parse::<u64>().ok()
        })
        .max()?;
    let path = session_dir.frame_file(sequence);
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .ok()?
        .take(MAX_FRAME_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_FRAME_BYTES {
        tracing::warn!(path = %path.display(), "frame too large to hash");
        return None;
    }
    Some(ObservedFrame {
        sequence,
        sha256: hex::encode(sha2::Sha256::digest(&bytes)),
        bytes: bytes.len() as u64,
    })
}

/// Maps a socket path inside the session's sandbox to the host: the bus and run directories
/// to theirs in `workspace`; a path already inside `workspace` (no sandbox) as it is.
fn map_inside(workspace: &Path, inside: &str) -> Option<PathBuf> {
    let inside = Path::new(inside);
    if inside.starts_with(workspace) {
        return Some(inside.to_path_buf());
    }
    let mapped = [
        (
            desk_desktop::sandbox::INSIDE_BUS_DIR,
            desk_desktop::sandbox::workspace::BUS_DIR,
        ),
        (
            desk_desktop::sandbox::INSIDE_RUN_DIR,
            desk_desktop::sandbox::workspace::RUN_DIR,
        ),
    ]
    .into_iter()
    .find_map(|(from, to)| {
        let rest = inside.strip_prefix(from).ok()?;
        Some(workspace.join(to).join(rest))
    })?;
    // Never leave the workspace (no `..` in what the bus said).
    (!mapped
        .components()
        .any(|part| part == std::path::Component::ParentDir))
    .then_some(mapped)
}

/// The session's app processes by their pids in the sandbox's pid namespace (and the host's):
/// the recorded `app` process and its descendants.
fn app_pids(session_dir: &SessionDir) -> Vec<u32> {
    let Some(app) = desk_desktop::launcher::recorded_processes(session_dir.path())
        .into_iter()
        .find(|process| process.role == "app" && process.is_alive())
    else {
        return Vec::new();
    };
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse().ok())
            else {
                continue;
            };
            if let Some(ppid) = status_field(pid, "PPid:").and_then(|text| text.parse().ok()) {
                parents.push((pid, ppid));
            }
        }
    }
    let mut family = vec![app.pid];
    let mut index = 0;
    while index < family.len() && family.len() < 256 {
        let parent = family[index];
        family.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    let mut pids = Vec::new();
    for pid in family {
        pids.push(pid);
        if let Some(inner) = status_field(pid, "NSpid:")
            .and_then(|text| text.split_whitespace().last().map(str::to_string))
            .and_then(|text| text.parse().ok())
        {
            pids.push(inner);
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

fn status_field(pid: u32, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(field))
        .map(|value| value.trim().to_string())
}

/// Reads the session app's tree from outside (see the module documentation).
pub(super) fn read_tree(
    session_dir: &SessionDir,
    point: Option<[u32; 2]>,
) -> Result<AxTree, String> {
    let workspace = std::fs::canonicalize(session_dir.workspace())
        .map_err(|error| format!("the session has no workspace: {error}"))?;
    let bus = [
        workspace
            .join(desk_desktop::sandbox::workspace::BUS_DIR)
            .join("bus"),
        workspace
            .join(desk_desktop::sandbox::workspace::RUN_DIR)
            .join("bus"),
    ]
    .into_iter()
    .find(|path| path.exists())
    .ok_or_else(|| "the session has no session bus".to_string())?;
    let pids = app_pids(session_dir);
    if pids.is_empty() {
        return Err("the session runs no app".to_string());
    }
    let limits = AxLimits {
        max_nodes: MAX_NODES,
        max_depth: MAX_DEPTH,
        deadline_ms: TREE_DEADLINE_MS.saturating_sub(500),
    };
    let map = |inside: &str| map_inside(&workspace, inside);
    desk_a11y::snapshot_outside(
        &bus,
        &map,
        &pids,
        limits,
        Duration::from_millis(u64::from(TREE_DEADLINE_MS)),
        point.map(|[x, y]| (x, y)),
    )
    .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_paths_map_into_the_workspace_only() {
        let workspace = Path::new("/w/s1");
        assert_eq!(
            map_inside(workspace, "/run/desk-bus/at-spi/bus_0"),
            Some(PathBuf::from("/w/s1/bus/at-spi/bus_0"))
        );
        assert_eq!(
            map_inside(workspace, "/run/desk/at-spi/bus_0"),
            Some(PathBuf::from("/w/s1/run/at-spi/bus_0"))
        );
        assert_eq!(
            map_inside(workspace, "/w/s1/run/bus"),
            Some(PathBuf::from("/w/s1/run/bus"))
        );
        assert_eq!(map_inside(workspace, "/run/desk-bus/../../etc/x"), None);
        assert_eq!(map_inside(workspace, "/tmp/dbus-x"), None);
    }
}
