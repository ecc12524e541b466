//! The generic effect of an approved action: a digest of the app's accessible state, compared
//! before and after the one invocation (`exec.rs`; `docs/approvals.md`, "Effect").

use desk_contract::a11y::AxTree;
use serde::Serialize;

use crate::error::BrokerError;

/// States that change on their own or with the pointer and the focus, left out of the effect.
const TRANSIENT_STATES: [&str; 3] = ["focused", "armed", "pressed"];

#[derive(Serialize)]
struct EffectNode<'a> {
    parent: Option<u32>,
    window: &'a str,
    role: &'a str,
    name: &'a str,
    states: Vec<&'a str>,
    bounds: Option<desk_contract::desktop::WindowRect>,
}

/// SHA-256 of the app's accessible state as an effect sees it: every node of the tree in walk
/// order with its parent, window (bound, popup, other: the window set), role, name, extents and
/// states, less [`TRANSIENT_STATES`]. The observation id is not in it.
pub(crate) fn effect_digest(tree: &AxTree) -> Result<String, BrokerError> {
    let nodes: Vec<EffectNode<'_>> = tree
        .nodes
        .iter()
        .map(|node| {
            let mut states: Vec<&str> = node
                .states
                .iter()
                .map(String::as_str)
                .filter(|state| !TRANSIENT_STATES.contains(state))
                .collect();
            states.sort_unstable();
            EffectNode {
                parent: node.parent,
                window: node.window.as_str(),
                role: &node.role,
                name: &node.name,
                states,
                bounds: node.bounds,
            }
        })
        .collect();
    desk_evidence::canonical_sha256(&(tree.truncated, nodes))
        .map_err(|error| BrokerError::Internal(format!("digest an observation: {error}")))
}
