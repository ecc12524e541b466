//! A program's whole-request checks, before any input: every step parsed and validated, its
//! coordinates mapped through the named screenshot's geometry once, every semantic step's
//! observation, node and window checked against the session's current observation, and the
//! digest that recognises a retried program.

use desk_contract::control::{MAX_PROGRAM_STEPS, ProgramRequest, ProgramStep, SemanticStep};
use desk_contract::{Action, ErrorCode, ValidatedAction};

use crate::control::Scope;
use crate::control::ax::Observation;
use crate::control::shots::Geometry;
use crate::error::BrokerError;

fn invalid_params(message: String) -> BrokerError {
    BrokerError::Control {
        code: ErrorCode::InvalidParams,
        message,
    }
}

/// SHA-256 of the RFC 8785 bytes of `{program: true, expected_action_index, screenshot_id,
/// steps}`: a retried program is recognised by it (the control token is not part of it: a
/// retry under a new generation is still the same program, and is refused by admission).
pub(crate) fn program_digest(request: &ProgramRequest) -> Result<String, BrokerError> {
    let content = serde_json::json!({
        "program": true,
        "expected_action_index": request.expected_action_index,
        "screenshot_id": request.screenshot_id,
        "steps": request.steps,
    });
    desk_evidence::canonical_sha256(&content)
        .map_err(|error| BrokerError::Internal(format!("failed to encode a program: {error}")))
}

/// `step` with its image coordinates mapped to the screen through `geometry` (refused, never
/// clamped, when a point lies outside the image's content).
pub(crate) fn to_screen(step: &Action, geometry: &Geometry) -> Result<Action, BrokerError> {
    let mut mapped = step.clone();
    match &mut mapped {
        Action::Click { x, y, .. }
        | Action::DoubleClick { x, y, .. }
        | Action::Move { x, y, .. } => {
            (*x, *y) = geometry.to_screen("point", *x, *y)?;
        }
        Action::Drag { path, .. } => {
            for (index, point) in path.iter_mut().enumerate() {
                (point.x, point.y) =
                    geometry.to_screen(&format!("path[{index}]"), point.x, point.y)?;
            }
        }
        Action::Scroll { .. }
        | Action::Key { .. }
        | Action::Type { .. }
        | Action::Wait { .. }
        | Action::Done { .. } => {}
    }
    Ok(mapped)
}

/// What a program's semantic steps are checked against: the session's current accessibility
/// observation (`None` when it has none) and the control scope now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AxContext<'a> {
    pub(crate) observation: Option<&'a Observation>,
    pub(crate) scope: Scope,
}

fn semantic_step(
    index: usize,
    step: &SemanticStep,
    ax: Option<AxContext<'_>>,
) -> Result<ValidatedAction, BrokerError> {
    let checked = desk_contract::validate::validate_semantic(step).map_err(|error| {
        invalid_params(format!(
            "steps[{index}] ({}): field {}: {}",
            error.action_type, error.field, error.message
        ))
    })?;
    let (observation_id, node) = match step {
        SemanticStep::AxPress {
            observation_id,
            node,
            ..
        }
        | SemanticStep::AxSetText {
            observation_id,
            node,
            ..
        } => (observation_id, *node),
    };
    let Some(ax) = ax else {
        return Err(BrokerError::Control {
            code: ErrorCode::Unsupported,
            message: format!(
                "steps[{index}]: this broker's desktops offer no accessibility, so no semantic steps"
            ),
        });
    };
    let Some(observation) = ax.observation else {
        return Err(BrokerError::Control {
            code: ErrorCode::AxObservationStale,
            message: format!(
                "steps[{index}].observation_id: the session has no accessibility observation \
                 (take one with GET .../accessibility)"
            ),
        });
    };
    observation
        .admit(observation_id, node, ax.scope)
        .map_err(|error| match error {
            BrokerError::Control { code, message } => BrokerError::Control {
                code,
                message: format!("steps[{index}].{message}"),
            },
            other => other,
        })?;
    Ok(checked)
}

/// Validates every step of `steps` (mapped through `geometry` when given) against `display`,
/// and every semantic step against `ax` (`None`: the broker offers no accessibility): the first
/// bad one is refused naming its index and field (`invalid_params`, or the semantic refusal:
/// `ax_observation_stale`, `ax_foreign_window`). `done` may only be last.
pub(crate) fn validate_steps(
    steps: &[ProgramStep],
    geometry: Option<&Geometry>,
    display: desk_contract::DisplaySize,
    ax: Option<AxContext<'_>>,
) -> Result<Vec<ValidatedAction>, BrokerError> {
    if steps.is_empty() || steps.len() > MAX_PROGRAM_STEPS {
        return Err(invalid_params(format!(
            "steps: a program has 1 to {MAX_PROGRAM_STEPS} steps, this one has {}",
            steps.len()
        )));
    }
    let mut validated = Vec::with_capacity(steps.len());
    for (index, step) in steps.iter().enumerate() {
        let step = match step {
            ProgramStep::Semantic(semantic) => {
                validated.push(semantic_step(index, semantic, ax)?);
                continue;
            }
            ProgramStep::Input(action) => action,
        };
        if matches!(step, Action::Done { .. }) && index + 1 != steps.len() {
            return Err(invalid_params(format!(
                "steps[{index}]: done may only be a program's last step"
            )));
        }
        let step = match geometry {
            Some(geometry) => to_screen(step, geometry).map_err(|error| match error {
                BrokerError::Control { code, message } => BrokerError::Control {
                    code,
                    message: format!("steps[{index}].{message}"),
                },
                other => other,
            })?,
            None => step.clone(),
        };
        let checked = desk_contract::validate_action(&step, display).map_err(|error| {
            invalid_params(format!(
                "steps[{index}] ({}): field {}: {}",
                error.action_type, error.field, error.message
            ))
        })?;
        validated.push(checked);
    }
    Ok(validated)
}
