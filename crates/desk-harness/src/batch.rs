//! The batching rule, checked before the first broker request of a batch.
//!
//! A `computer_action` batch is accepted only when it is non-empty, every item parses as a
//! normalized [`Action`] and passes [`validate_action`] against the live display, the whole
//! batch fits the remaining action budget, and `done` appears at most once, as the last item.
//! A refused batch executes nothing; the reason goes back to the agent.

use desk_contract::{Action, DisplaySize, validate_action};

/// Why a batch was refused. The message is shown to the model verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BatchRejection {
    /// The offending item, when one item is to blame.
    pub item_idx: Option<usize>,
    /// What was wrong.
    pub message: String,
}

impl BatchRejection {
    fn batch(message: String) -> Self {
        Self {
            item_idx: None,
            message,
        }
    }

    fn item(item_idx: usize, message: String) -> Self {
        Self {
            item_idx: Some(item_idx),
            message: format!("item {item_idx}: {message}"),
        }
    }
}

/// Checks a whole batch; returns the parsed actions in order, or the first reason to refuse it.
pub fn check_batch(
    items: &[serde_json::Value],
    display: DisplaySize,
    remaining_actions: u64,
) -> Result<Vec<Action>, BatchRejection> {
    if items.is_empty() {
        return Err(BatchRejection::batch(
            "the actions array is empty; send at least one action".to_owned(),
        ));
    }
    let n_items = items.len() as u64;
    if n_items > remaining_actions {
        return Err(BatchRejection::batch(format!(
            "the batch holds {n_items} actions but only {remaining_actions} remain in the \
             action budget; nothing was executed"
        )));
    }
    let mut actions = Vec::with_capacity(items.len());
    for (item_idx, item) in items.iter().enumerate() {
        let action: Action = serde_json::from_value(item.clone())
            .map_err(|error| BatchRejection::item(item_idx, format!("not an action: {error}")))?;
        validate_action(&action, display)
            .map_err(|error| BatchRejection::item(item_idx, error.to_string()))?;
        if matches!(action, Action::Done { .. }) && item_idx + 1 != items.len() {
            return Err(BatchRejection::item(
                item_idx,
                "done may appear only as the final item of a batch".to_owned(),
            ));
        }
        actions.push(action);
    }
    Ok(actions)
}

#[cfg(test)]
mod tests;
