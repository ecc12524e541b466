//! The hit-test of input against the policy's high-risk targets, pure over an accessibility
//! tree: which places an input reaches ([`places`]) and whether a high-risk accessible is at one
//! ([`find`]).
//!
//! - A pointer point (a click, a double click, a drag's first point) reaches every showing
//!   accessible whose extents contain it: the control under the point and each container
//!   around it. Any of them matching a target is a hit, so a high-risk panel covers what it
//!   holds.
//! - Keys and text reach the focused accessible: every showing node holding the `focused` state
//!   and each of its ancestors is checked.
//! - A semantic step names its node: the node and each of its ancestors is checked.
//!
//! A tree that was truncated cannot prove a point clear: [`find`] answers [`Unverified`].

use desk_contract::InputAction;
use desk_contract::a11y::{AxNode, AxTree};
use desk_contract::desktop::WindowRect;
use desk_policy::Approvals;

/// Where an input lands, as the hit-test sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A pointer press at this root point.
    Point { x: i64, y: i64 },
    /// Keys or text: the keyboard focus.
    Focus,
}

/// A high-risk accessible an input would reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// Its index in the tree it was found in.
    pub(crate) index: u32,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) bounds: Option<WindowRect>,
    /// The policy's target it matched, as written.
    pub(crate) pattern: String,
}

/// Why a tree cannot decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unverified(pub(crate) String);

/// The places `input` presses or types at; empty for input that presses nothing (a move, a
/// scroll, a wait, `done`). A semantic step is judged by its node instead ([`find_node`]).
pub(crate) fn places(input: &InputAction) -> Vec<Place> {
    let point = |at: &desk_contract::ScreenPoint| Place::Point {
        x: i64::from(at.x),
        y: i64::from(at.y),
    };
    match input {
        InputAction::Click { at, .. } | InputAction::DoubleClick { at, .. } => vec![point(at)],
        InputAction::Drag { path, .. } => path.first().map(point).into_iter().collect(),
        InputAction::Key { .. } | InputAction::Type { .. } => vec![Place::Focus],
        _ => Vec::new(),
    }
}

fn showing(node: &AxNode) -> bool {
    node.states.iter().any(|state| state == "showing")
}

fn contains(rect: WindowRect, x: i64, y: i64) -> bool {
    let (left, top) = (i64::from(rect.x), i64::from(rect.y));
    x >= left && y >= top && x < left + i64::from(rect.width) && y < top + i64::from(rect.height)
}

fn hit_of(node: &AxNode, approvals: &Approvals) -> Option<Hit> {
    let target = approvals.high_risk(&node.role, &node.name)?;
    Some(Hit {
        index: node.index,
        role: node.role.clone(),
        name: node.name.clone(),
        bounds: node.bounds,
        pattern: format!("{} /{}/", target.role, target.name_pattern),
    })
}

/// The first high-risk node among `index` and its ancestors in `tree`.
fn in_ancestry(tree: &AxTree, index: u32, approvals: &Approvals) -> Option<Hit> {
    let mut next = Some(index);
    let mut steps = 0;
    while let Some(current) = next {
        let node = tree.nodes.get(current as usize)?;
        if let Some(hit) = hit_of(node, approvals) {
            return Some(hit);
        }
        next = node.parent;
        steps += 1;
        if steps > tree.nodes.len() {
            return None;
        }
    }
    None
}

/// The high-risk accessible input at `place` would reach in `tree`, if any.
pub(crate) fn find(
    tree: &AxTree,
    approvals: &Approvals,
    place: Place,
) -> Result<Option<Hit>, Unverified> {
    if tree.truncated {
        return Err(Unverified(format!(
            "the accessibility tree was truncated at {} nodes",
            tree.nodes.len()
        )));
    }
    let found = match place {
        Place::Point { x, y } => tree
            .nodes
            .iter()
            .filter(|node| showing(node) && node.bounds.is_some_and(|rect| contains(rect, x, y)))
            .find_map(|node| hit_of(node, approvals)),
        Place::Focus => tree
            .nodes
            .iter()
            .filter(|node| showing(node) && node.states.iter().any(|state| state == "focused"))
            .find_map(|node| in_ancestry(tree, node.index, approvals)),
    };
    Ok(found)
}

/// The high-risk accessible among node `index` and its ancestors in `tree`, which must be the
/// observation a semantic step names; a node the tree does not have cannot be checked.
pub(crate) fn find_node(
    tree: &AxTree,
    approvals: &Approvals,
    index: u32,
) -> Result<Option<Hit>, Unverified> {
    if tree.nodes.get(index as usize).is_none() {
        return Err(Unverified(format!(
            "observation {} has no node {index}",
            tree.observation_id
        )));
    }
    Ok(in_ancestry(tree, index, approvals))
}

/// The sibling path of node `index` from the application (`0/2/1`): each step the node's
/// position among its parent's children as the walk read them.
pub(crate) fn path_of(tree: &AxTree, index: u32) -> Option<String> {
    let mut parts = Vec::new();
    let mut current = tree.nodes.get(index as usize)?;
    while let Some(parent) = current.parent {
        let position = tree
            .nodes
            .iter()
            .filter(|node| node.parent == Some(parent))
            .position(|node| node.index == current.index)?;
        parts.push(position.to_string());
        current = tree.nodes.get(parent as usize)?;
        if parts.len() > tree.nodes.len() {
            return None;
        }
    }
    parts.reverse();
    Some(parts.join("/"))
}
