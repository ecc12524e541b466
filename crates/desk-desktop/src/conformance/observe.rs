//! The suite's reading cases: the handoff, a capture, the facts, the app's windows, the
//! processes and workspace, and the accessibility tree (its shape, its truncation flag, and the
//! typed refusal for an app without one). None of them may send input.

use desk_contract::a11y::{AxLimits, AxTree};
use desk_contract::desktop::{Frame, WindowRole};

use super::check::{Failure, Witness, delivered, fail};
use super::report::{
    ACCESSIBILITY_REFUSED, ACCESSIBILITY_SNAPSHOT, ACCESSIBILITY_TRUNCATED, CAPTURE, FACTS,
    PROCESSES, Report, WINDOWS,
};
use crate::backend::{AppLaunch, DesktopBackend};
use crate::error::BackendError;

/// A frame of the display's size whose `sha256` is its PNG's.
pub(super) fn check_frame(
    check: &str,
    backend: &dyn DesktopBackend,
    frame: &Frame,
) -> Result<(), Failure> {
    let display = backend.display_size();
    if (frame.width, frame.height) != (display.width, display.height) {
        return fail(
            check,
            format!("frame {}x{}, display {display}", frame.width, frame.height),
        );
    }
    if desk_contract::sha256_hex(&frame.png) != frame.sha256 {
        return fail(check, "frame sha256 does not match its PNG");
    }
    Ok(())
}

/// Starts the app of `launch` and checks the handoff: the app's window, maximized when the
/// rules ask for it, a stable render and a frame of the display.
pub fn check_handoff(
    backend: &mut dyn DesktopBackend,
    launch: &AppLaunch,
    case: &'static str,
    report: &mut Report,
) -> Result<(), Failure> {
    let handoff = backend
        .start_app(launch)
        .or_else(|error| fail(case, format!("start_app failed: {error}")))?;
    if !handoff.window.is_app {
        return fail(
            case,
            format!("handed off a foreign window {:?}", handoff.window),
        );
    }
    if launch.window.maximize && !(handoff.window.maximized && handoff.frame.app_maximized) {
        return fail(case, format!("not maximized: {:?}", handoff.window));
    }
    let settle = &handoff.settle;
    if settle.outcome != desk_contract::SettleOutcome::Stable || !settle.post_action_visual_stable {
        return fail(
            case,
            format!("render not stable at the handoff: {settle:?}"),
        );
    }
    check_frame(case, backend, &handoff.frame)?;
    report.pass(case);
    Ok(())
}

/// A capture, the facts, the app's windows (as the backend declares them) and its processes
/// and workspace, with the app running; the desktop receives no input.
pub fn check_observations(
    backend: &mut dyn DesktopBackend,
    witness: &mut dyn Witness,
    report: &mut Report,
) -> Result<(), Failure> {
    let before = delivered(witness, CAPTURE)?;
    let frame = backend
        .capture()
        .or_else(|error| fail(CAPTURE, format!("capture failed: {error}")))?;
    check_frame(CAPTURE, backend, &frame)?;
    report.pass(CAPTURE);

    let facts = backend
        .facts()
        .or_else(|error| fail(FACTS, format!("facts failed: {error}")))?;
    let display = backend.display_size();
    if facts.display != display {
        return fail(
            FACTS,
            format!("display {} against {display}", facts.display),
        );
    }
    let Some(app) = facts.app_window.as_ref().filter(|window| window.is_app) else {
        return fail(FACTS, format!("no app window: {:?}", facts.app_window));
    };
    let pointer = facts.focus.pointer;
    if !display.contains(i64::from(pointer.x), i64::from(pointer.y)) || !facts.held.is_empty() {
        return fail(FACTS, format!("pointer {pointer:?}, held {:?}", facts.held));
    }
    report.pass(FACTS);

    let windows = backend
        .windows()
        .or_else(|error| fail(WINDOWS, format!("windows failed: {error}")))?;
    if backend.capabilities().windows {
        let main: Vec<_> = windows
            .iter()
            .filter(|window| window.role == WindowRole::Main)
            .collect();
        if main.len() != 1 || main[0].window_id != app.window_id || !main[0].on_screen {
            return fail(
                WINDOWS,
                format!(
                    "one main window on screen, {} expected: {windows:?}",
                    app.window_id
                ),
            );
        }
        let mut ids: Vec<u32> = windows.iter().map(|window| window.window_id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != windows.len() {
            return fail(WINDOWS, format!("a window listed twice: {windows:?}"));
        }
    } else if !windows.is_empty() {
        return fail(
            WINDOWS,
            format!("declares no windows but listed {windows:?}"),
        );
    }
    report.pass(WINDOWS);

    check_processes(backend)?;
    report.pass(PROCESSES);
    if delivered(witness, CAPTURE)? != before {
        return fail(CAPTURE, "reading the desktop delivered input");
    }
    Ok(())
}

/// A backend with processes of its own lists them, alive, and measured its workspace at the
/// handoff with no failure; one without lists none and has no workspace facts.
fn check_processes(backend: &dyn DesktopBackend) -> Result<(), Failure> {
    let pids = backend.process_ids();
    match backend.workspace_facts() {
        Some(facts) => {
            if !facts.failures.is_empty() {
                return fail(
                    PROCESSES,
                    format!("workspace failures {:?}", facts.failures),
                );
            }
            if pids.is_empty() {
                return fail(PROCESSES, "a measured workspace but no process");
            }
            if let Some(dead) = pids
                .iter()
                .find(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
            {
                return fail(PROCESSES, format!("process {dead} is not alive"));
            }
        }
        None if !pids.is_empty() => {
            return fail(
                PROCESSES,
                format!("processes {pids:?} but no workspace facts"),
            );
        }
        None => {}
    }
    Ok(())
}

/// The app running now has no accessibility (the probe window, the fake's default): a
/// snapshot is refused typed, never an empty tree.
pub fn check_accessibility_refused(
    backend: &mut dyn DesktopBackend,
    report: &mut Report,
) -> Result<(), Failure> {
    match backend.accessibility(limits(None, None)?) {
        Err(BackendError::AccessibilityUnavailable(_)) => {
            report.pass(ACCESSIBILITY_REFUSED);
            Ok(())
        }
        Err(other) => fail(
            ACCESSIBILITY_REFUSED,
            format!("expected accessibility_unavailable, got {other}"),
        ),
        Ok(tree) => fail(
            ACCESSIBILITY_REFUSED,
            format!("a tree of {} nodes", tree.nodes.len()),
        ),
    }
}

fn limits(max_nodes: Option<u32>, max_depth: Option<u32>) -> Result<AxLimits, Failure> {
    AxLimits::new(max_nodes, max_depth).or_else(|error| fail("limits", error.to_string()))
}

/// The app running now is accessible (more than one object, more than one level): a snapshot
/// within the default limits is a well-formed breadth-first tree, a new observation each time;
/// one of a single node and one of depth 1 are cut and say `truncated`. A backend that
/// declares no accessibility skips both cases.
pub fn check_accessibility(
    backend: &mut dyn DesktopBackend,
    report: &mut Report,
) -> Result<(), Failure> {
    if !backend.capabilities().accessibility {
        let reason = "the backend declares no accessibility";
        report.skip(ACCESSIBILITY_SNAPSHOT, reason);
        report.skip(ACCESSIBILITY_TRUNCATED, reason);
        return Ok(());
    }
    let snapshot = |backend: &mut dyn DesktopBackend, check: &str, limits: AxLimits| {
        let tree = backend
            .accessibility(limits)
            .or_else(|error| fail(check, format!("accessibility failed: {error}")))?;
        check_tree(check, &tree, limits)?;
        Ok::<AxTree, Failure>(tree)
    };
    let whole = snapshot(backend, ACCESSIBILITY_SNAPSHOT, limits(None, None)?)?;
    let again = snapshot(backend, ACCESSIBILITY_SNAPSHOT, limits(None, None)?)?;
    if whole.observation_id == again.observation_id {
        return fail(
            ACCESSIBILITY_SNAPSHOT,
            "two snapshots share one observation id",
        );
    }
    if whole.nodes.len() < 3 || !whole.nodes.iter().any(|node| node.depth >= 2) {
        return fail(
            ACCESSIBILITY_SNAPSHOT,
            format!(
                "the app's tree is too small to check: {} nodes",
                whole.nodes.len()
            ),
        );
    }
    report.pass(ACCESSIBILITY_SNAPSHOT);

    let one = snapshot(backend, ACCESSIBILITY_TRUNCATED, limits(Some(1), None)?)?;
    if one.nodes.len() != 1 || !one.truncated {
        return fail(
            ACCESSIBILITY_TRUNCATED,
            format!(
                "max_nodes 1: {} nodes, truncated {}",
                one.nodes.len(),
                one.truncated
            ),
        );
    }
    let shallow = snapshot(backend, ACCESSIBILITY_TRUNCATED, limits(None, Some(1))?)?;
    if !shallow.truncated || shallow.nodes.len() >= whole.nodes.len() {
        return fail(
            ACCESSIBILITY_TRUNCATED,
            format!(
                "max_depth 1: {} nodes of {}, truncated {}",
                shallow.nodes.len(),
                whole.nodes.len(),
                shallow.truncated
            ),
        );
    }
    report.pass(ACCESSIBILITY_TRUNCATED);
    Ok(())
}

/// A tree's shape: the application first, `nodes[i].index == i`, every parent listed before
/// its child one level up, breadth first, within `limits`; and, unless `truncated`, every
/// object's reported children all present.
fn check_tree(check: &str, tree: &AxTree, limits: AxLimits) -> Result<(), Failure> {
    if tree.observation_id.is_empty() {
        return fail(check, "no observation id");
    }
    let Some(root) = tree.nodes.first() else {
        return fail(check, "no node");
    };
    if root.parent.is_some() || root.depth != 0 {
        return fail(
            check,
            format!("the first node is not the application: {root:?}"),
        );
    }
    if tree.nodes.len() > usize::try_from(limits.max_nodes).unwrap_or(usize::MAX) {
        return fail(check, format!("{} nodes over {limits:?}", tree.nodes.len()));
    }
    let mut children = vec![0u32; tree.nodes.len()];
    let mut previous_depth = 0;
    for (i, node) in tree.nodes.iter().enumerate() {
        let index = usize::try_from(node.index).unwrap_or(usize::MAX);
        if index != i || node.depth > limits.max_depth || node.depth < previous_depth {
            return fail(check, format!("node {i} out of place: {node:?}"));
        }
        previous_depth = node.depth;
        if let Some(parent) = node.parent {
            let parent_index = usize::try_from(parent).unwrap_or(usize::MAX);
            match tree.nodes.get(parent_index) {
                Some(up) if parent_index < i && up.depth + 1 == node.depth => {
                    children[parent_index] += 1;
                }
                _ => return fail(check, format!("node {i} has parent {parent}")),
            }
        } else if i != 0 {
            return fail(check, format!("node {i} has no parent"));
        }
    }
    for (node, listed) in tree.nodes.iter().zip(&children) {
        if *listed > node.child_count || (!tree.truncated && *listed != node.child_count) {
            return fail(
                check,
                format!(
                    "node {} reports {} children, {listed} listed, truncated {}",
                    node.index, node.child_count, tree.truncated
                ),
            );
        }
    }
    Ok(())
}
