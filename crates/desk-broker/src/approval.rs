//! Approval-bound exact actions (issue 29 item 3, the containment spec's G004), first part: the
//! refusal of raw input on a high-risk control. With an `approvals` section in the signed
//! policy, every step that presses or types (a click, a double click, a drag's first point, keys,
//! text) is hit-tested against the app's accessibility tree right before its input, and refused
//! `approval_required` when the element under the point (or any showing accessible around it),
//! or the focused element and its ancestors for keys and text, is a high-risk target. A semantic
//! step (`ax_press`, `ax_set_text`) is judged by its node and its ancestors in the observation it
//! names. The check fails closed: no accessibility bus, an app not on it, a truncated tree or an
//! observation the broker did not record refuses the input `insufficient_data`. Nothing is sent
//! either way; the refusal ends the action like any refusal after acceptance (a `not_injected`
//! receipt in the journal) and counts toward the policy's refused-action limit.
//!
//! The hit-test takes a fresh snapshot (a new current observation) before each such step: a
//! semantic step naming an earlier observation is then stale. Without the section nothing here
//! runs and nothing changes. See `docs/approvals.md`.
//!
//! The approver's receipts (`issue.rs`, `receipt.rs`) and the exact executor that consumes them
//! (`exec.rs`) are submodules; the one node the executor invokes passes the check above through
//! a one-shot [`Allowance`] set within the executor's turn of the session.

mod effect;
mod exec;
mod hit;
pub(crate) mod issue;
mod receipt;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use desk_contract::a11y::{AxLimits, AxTree};
use desk_contract::control::FeatureSupport;
use desk_contract::{ErrorCode, InputAction};
use desk_desktop::DesktopBackend;
use desk_policy::Approvals;

use crate::error::BrokerError;
use crate::ids::SessionId;
use hit::{Hit, Place, Unverified};

/// The capability's name.
pub(crate) const APPROVAL: &str = "approval";

/// The policy's approvals and what the check needs of each session: its last observation.
pub(crate) struct ApprovalGate {
    approvals: Option<Approvals>,
    /// The state directory of the broker whose observer judges input (`BrokerConfig::observer`);
    /// `None`: no observer, the broker's own snapshot decides.
    observer: Option<PathBuf>,
    /// Per session, the last accessibility tree the broker read (a snapshot handed out, or its
    /// own before an input): what semantic steps are judged against.
    observed: Mutex<HashMap<SessionId, AxTree>>,
    /// Per session, the one node of one observation the executor may invoke, once.
    allowed: Mutex<HashMap<SessionId, Allowance>>,
}

/// The node of an observation an approved action invokes: admitted once by [`ApprovalGate::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allowance {
    observation_id: String,
    node: u32,
}

fn refusal(code: ErrorCode, message: String) -> BrokerError {
    BrokerError::Control { code, message }
}

fn unverified(what: &str, why: &str) -> BrokerError {
    refusal(
        ErrorCode::InsufficientData,
        format!(
            "{what} could not be checked against the policy's high-risk controls ({why}); \
             refused unverified, nothing was sent"
        ),
    )
}

fn required(what: &str, hit: &Hit, path: Option<String>) -> BrokerError {
    let bounds = hit.bounds.map_or_else(
        || "no extents".to_string(),
        |r| format!("{},{} {}x{}", r.x, r.y, r.width, r.height),
    );
    refusal(
        ErrorCode::ApprovalRequired,
        format!(
            "{what} the app's {} {:?} (node {}, path {}, bounds {bounds}), which the policy \
             marks high-risk ({}); nothing was sent: only an approved exact action may invoke it",
            hit.role,
            hit.name,
            hit.index,
            path.as_deref().unwrap_or("?"),
            hit.pattern
        ),
    )
}

impl ApprovalGate {
    /// The gate of `approvals` (`None`: the policy has no section; nothing is checked).
    pub(crate) fn new(approvals: Option<Approvals>) -> ApprovalGate {
        ApprovalGate {
            approvals,
            observer: None,
            observed: Mutex::default(),
            allowed: Mutex::default(),
        }
    }

    /// This gate, judging input from the signed view of the observer of the broker on
    /// `state_dir` when one is given (`None`: from the broker's own snapshot).
    pub(crate) fn with_observer(self, state_dir: Option<PathBuf>) -> ApprovalGate {
        ApprovalGate {
            observer: state_dir,
            ..self
        }
    }

    /// Whether the policy in force has approvals.
    pub(crate) fn enabled(&self) -> bool {
        self.approvals.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, AxTree>> {
        self.observed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `tree` as the session's last observation (only with approvals in force).
    pub(crate) fn observed(&self, session_id: &SessionId, tree: &AxTree) {
        if self.enabled() {
            self.lock().insert(session_id.clone(), tree.clone());
        }
    }

    /// Forgets a session's observation (released or killed).
    pub(crate) fn forget(&self, session_id: &SessionId) {
        self.lock().remove(session_id);
        self.allowances().remove(session_id);
    }

    /// The session's current observation, as the broker read it last.
    pub(crate) fn last(&self, session_id: &SessionId) -> Option<AxTree> {
        self.lock().get(session_id).cloned()
    }

    fn allowances(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Allowance>> {
        self.allowed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Admits one `ax_press` of `node` in `observation_id` (the executor, in its turn).
    pub(crate) fn allow_once(&self, session_id: &SessionId, observation_id: &str, node: u32) {
        self.allowances().insert(
            session_id.clone(),
            Allowance {
                observation_id: observation_id.to_string(),
                node,
            },
        );
    }

    /// Withdraws an allowance the executor did not use.
    pub(crate) fn allow_once_clear(&self, session_id: &SessionId) {
        self.allowances().remove(session_id);
    }

    /// Takes the session's allowance when `input` is exactly its press.
    fn take_allowance(&self, session_id: &SessionId, input: &InputAction) -> bool {
        let InputAction::AxPress {
            observation_id,
            node,
        } = input
        else {
            return false;
        };
        let mut allowed = self.allowances();
        let matches = allowed.get(session_id).is_some_and(|allowance| {
            allowance.observation_id == *observation_id && allowance.node == *node
        });
        if matches {
            allowed.remove(session_id);
        }
        matches
    }
}

impl ApprovalGate {
    /// Refuses `input` before it is sent when it would reach a high-risk control of the app, or
    /// when that cannot be told (see the module doc). Takes a snapshot for input that presses
    /// or types, handing it to `observed` (the broker's record of the current observation)
    /// first; an observer's view is journaled by `record` before it is judged from. A no-op
    /// without approvals.
    pub(crate) fn check(
        &self,
        backend: &mut dyn DesktopBackend,
        session_id: &SessionId,
        input: &InputAction,
        observed: &dyn Fn(&AxTree) -> Result<(), BrokerError>,
        record: crate::observer::client::Recorder<'_>,
    ) -> Result<(), BrokerError> {
        let Some(approvals) = self.approvals.as_ref() else {
            return Ok(());
        };
        if self.take_allowance(session_id, input) {
            tracing::info!(%session_id, "approved exact action admitted");
            return Ok(());
        }
        if let InputAction::AxPress {
            observation_id,
            node,
        }
        | InputAction::AxSetText {
            observation_id,
            node,
            ..
        } = input
        {
            let what = format!("the semantic step on node {node}");
            let guard = self.lock();
            let tree = guard
                .get(session_id)
                .filter(|tree| tree.observation_id == *observation_id)
                .ok_or_else(|| {
                    unverified(
                        &what,
                        &format!(
                            "observation {observation_id} is not the one the broker read last"
                        ),
                    )
                })?;
            return match hit::find_node(tree, approvals, *node) {
                Ok(None) => Ok(()),
                Ok(Some(hit)) => Err(required(
                    &format!("{what} would invoke"),
                    &hit,
                    hit::path_of(tree, hit.index),
                )),
                Err(Unverified(why)) => Err(unverified(&what, &why)),
            };
        }
        let places = hit::places(input);
        if places.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let limits = AxLimits::new(None, None)
            .map_err(|error| BrokerError::Internal(format!("default tree limits: {error}")))?;
        let tree = backend
            .accessibility(limits)
            .map_err(|error| unverified("the input", &error.to_string()))?;
        // The snapshot is the session's current observation now, in the worker and here.
        observed(&tree)?;
        self.observed(session_id, &tree);
        // With an observer (`BrokerConfig::observer`: `serve` runs one), the verdict comes from
        // its signed view of the app, not the worker's; no fresh, verified view refuses the
        // input. For a pointer step the observer's walk is aimed at its one point (it reads only
        // what may be there: issue 29's observer cost); keys and text take the whole tree.
        let (tree, scope) = match &self.observer {
            None => (tree, None),
            Some(state_dir) => {
                crate::observer::client::view(state_dir, session_id, aim(&places), record).map_err(
                    |error| unverified("the input", &format!("no signed observer view: {error}")),
                )?
            }
        };
        tracing::debug!(
            %session_id,
            nodes = tree.nodes.len(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "high-risk hit-test snapshot"
        );
        for place in places {
            let what = match place {
                Place::Point { x, y } => format!("the point ({x}, {y}) lies on"),
                Place::Focus => "the keyboard focus is in".to_string(),
            };
            if !scope.is_none_or(|scope| decides(scope, place)) {
                return Err(unverified(
                    "the input",
                    &format!("the observation was aimed at {scope:?}, not at it"),
                ));
            }
            match hit::find(&tree, approvals, place) {
                Ok(None) => {}
                Ok(Some(hit)) => {
                    tracing::info!(%session_id, role = hit.role, "input refused: high-risk target");
                    return Err(required(&what, &hit, hit::path_of(&tree, hit.index)));
                }
                Err(Unverified(why)) => return Err(unverified("the input", &why)),
            }
        }
        Ok(())
    }
}

/// The point to aim the observer's walk at: a pointer step's one point; `None` (the whole
/// tree) for keys and text, or for anything reaching more than one place.
fn aim(places: &[Place]) -> Option<[u32; 2]> {
    match places {
        [Place::Point { x, y }] => Some([u32::try_from(*x).ok()?, u32::try_from(*y).ok()?]),
        _ => None,
    }
}

/// Whether an observation aimed at `scope` decides `place`: only that exact point.
fn decides(scope: crate::observer::ObservationScope, place: Place) -> bool {
    let [x, y] = scope.point;
    place
        == Place::Point {
            x: i64::from(x),
            y: i64::from(y),
        }
}

impl ApprovalGate {
    /// `approval`: offered when the workspace policy in force has an `approvals` section.
    pub(crate) fn feature(&self) -> FeatureSupport {
        let supported = self.enabled();
        FeatureSupport {
            feature: APPROVAL.to_string(),
            supported,
            refusal: (!supported).then_some(ErrorCode::Unsupported),
            note: if supported {
                "input that would press or type on a control the workspace policy marks \
                 high-risk is refused approval_required (unverifiable: insufficient_data); an \
                 approver's signed receipt (POST .../approvals) lets the exact executor invoke \
                 it once through accessibility and read its effect back"
            } else {
                "the workspace policy has no approvals section"
            }
            .to_string(),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod exec_tests;
