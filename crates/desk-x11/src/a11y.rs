//! The worker's accessibility requests: the app's AT-SPI tree through `desk-a11y`, read on the
//! session's private bus (`DBUS_SESSION_BUS_ADDRESS`, set by the launcher), and the semantic
//! steps `execute` hands to it instead of XTEST (`ax_press`, `ax_set_text`).
//!
//! Invariant: a semantic step reaches the provider at most once, after `desk-a11y`'s checks
//! (current observation, node, owning window, enabled, interface); a refusal before that call
//! is a failure of its own kind with nothing sent, and only a failure or timeout of the call
//! itself is `outcome_unknown`. There is no coordinate fallback.

use desk_a11y::{A11yError, Accessibility, BoundWindow};
use desk_contract::a11y::{AxLimits, AxTree};
use desk_contract::events::{InputEvent, InputEventKind};
use desk_contract::validate::InputAction;
use desk_contract::worker::{WorkerFailure, WorkerFailureKind};

use crate::capture::epoch_ms;
use crate::error::{X11Error, failure};
use crate::session::X11Session;

/// How long the check of a semantic step's target against the profile's prohibited
/// accessibles may take (the semantic steps' own checks allow 2 s).
const SEMANTIC_GUARD_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

impl X11Session {
    /// Drops the current accessibility observation (a new app is about to start).
    pub fn invalidate_accessibility(&mut self) -> &mut X11Session {
        self.guard = None;
        if let Some(a11y) = &mut self.a11y {
            a11y.invalidate();
        }
        self
    }

    fn accessibility_handle(&mut self) -> Result<&mut Accessibility, X11Error> {
        if self.a11y.is_none() {
            self.a11y = Some(Accessibility::new()?);
        }
        self.a11y
            .as_mut()
            .ok_or_else(|| X11Error::Accessibility(A11yError::Unavailable("no handle".into())))
    }

    /// The app's bound window, as semantic steps and the snapshot's `window` field see it.
    fn bound_window(&self) -> Result<Option<BoundWindow>, X11Error> {
        let Some(app) = self.app else {
            return Ok(None);
        };
        let windows = self.windows();
        let facts = windows.facts(app.window, Some(app.pid))?;
        let frame = windows.frame_rect(app.window, facts.rect)?;
        Ok(Some(BoundWindow {
            rect: facts.rect,
            frame,
        }))
    }

    /// The app's tree within `limits`; it becomes the current observation.
    pub fn accessibility(&mut self, limits: AxLimits) -> Result<AxTree, X11Error> {
        let pid = self.app_pid().ok_or_else(|| {
            X11Error::Accessibility(A11yError::AppNotRegistered(
                "no app has been started on this desktop".to_string(),
            ))
        })?;
        let bound = self.bound_window()?;
        let tree = self.accessibility_handle()?.snapshot(pid, limits, bound)?;
        tracing::info!(
            observation = %tree.observation_id,
            nodes = tree.nodes.len(),
            truncated = tree.truncated,
            elapsed_ms = tree.elapsed_ms,
            "accessibility snapshot"
        );
        Ok(tree)
    }

    /// Refuses a semantic step whose target is, or lies inside, an accessible the profile
    /// prohibits (the Python console's text inside its `frame`), read live from the target up;
    /// when that cannot be read the step is refused unverified. Both are
    /// `destination_prohibited`, nothing sent.
    fn check_semantic_target(&mut self, action: &InputAction) -> Result<(), WorkerFailure> {
        let (InputAction::AxPress {
            observation_id,
            node,
        }
        | InputAction::AxSetText {
            observation_id,
            node,
            ..
        }) = action
        else {
            return Ok(());
        };
        if !self.prohibited.iter().any(|rule| rule.names_accessibles()) {
            return Ok(());
        }
        let rules = self.prohibited.clone();
        let refused = |message: String| WorkerFailure {
            kind: WorkerFailureKind::DestinationProhibited,
            message,
        };
        let answer = match self.accessibility_handle() {
            Ok(a11y) => {
                match a11y.prohibited_ancestor(observation_id, *node, &rules, SEMANTIC_GUARD_BOUND)
                {
                    // Not a node of the current observation: the step's own refusal.
                    Err(
                        error @ (A11yError::StaleObservation(_) | A11yError::NoSuchNode { .. }),
                    ) => return Err(failure(&error)),
                    answer => answer.map_err(|error| error.to_string()),
                }
            }
            Err(error) => Err(error.to_string()),
        };
        match answer {
            Ok(None) => Ok(()),
            Ok(Some(hit)) => {
                let label = self
                    .prohibited
                    .get(hit.rule)
                    .map_or("prohibited panel", |rule| rule.label.as_str());
                Err(refused(format!(
                    "node {node} of {observation_id} lies in the app's {label} (accessible {:?}, \
                     role {:?}), which this profile prohibits; nothing was sent",
                    hit.name, hit.role
                )))
            }
            Err(error) => Err(refused(format!(
                "whether node {node} of {observation_id} lies in a panel this profile prohibits \
                 could not be checked ({error}); refused unverified, nothing was sent"
            ))),
        }
    }

    /// Sends a semantic step to the app's accessibility provider, once; the event it records.
    /// Any other action is refused (`invalid_request`, nothing sent).
    pub(crate) fn semantic_input(
        &mut self,
        action: &InputAction,
    ) -> Result<Vec<InputEvent>, WorkerFailure> {
        let nothing_sent = |error: X11Error| WorkerFailure {
            kind: WorkerFailureKind::DesktopFailed,
            message: error.to_string(),
        };
        let bound = self
            .bound_window()
            .map_err(nothing_sent)?
            .ok_or_else(|| WorkerFailure {
                kind: WorkerFailureKind::AxStale,
                message: "no app window is bound on this desktop".to_string(),
            })?;
        self.check_semantic_target(action)?;
        let a11y = self.accessibility_handle().map_err(nothing_sent)?;
        let started_ms = epoch_ms();
        let (name, observation_id, node, text_chars) = match action {
            InputAction::AxPress {
                observation_id,
                node,
            } => {
                a11y.press(observation_id, *node, bound)
                    .map_err(|error| failure(&error))?;
                ("ax_press", observation_id, *node, None)
            }
            InputAction::AxSetText {
                observation_id,
                node,
                text,
                mode,
            } => {
                a11y.set_text(observation_id, *node, bound, text, *mode)
                    .map_err(|error| failure(&error))?;
                let n_chars = u32::try_from(text.chars().count()).unwrap_or(u32::MAX);
                ("ax_set_text", observation_id, *node, Some(n_chars))
            }
            other => {
                return Err(WorkerFailure {
                    kind: WorkerFailureKind::InvalidRequest,
                    message: format!("{other:?} is not a semantic step"),
                });
            }
        };
        tracing::info!(action = name, observation = %observation_id, node, "semantic step delivered");
        Ok(vec![InputEvent {
            timestamp_ms: started_ms,
            kind: InputEventKind::AxAction {
                action: name.to_string(),
                observation_id: observation_id.clone(),
                node,
                text_chars,
            },
        }])
    }
}
