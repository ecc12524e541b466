//! Validation of a program's semantic steps (`ax_press`, `ax_set_text`) into their
//! [`InputAction`]. What is checked here needs no state: the observation id's form, the text,
//! the intent. Whether the observation is current and the node's window admitted is the
//! broker's check before any input, and the worker's again right before the step's own input.

use crate::a11y::{AX_MAX_TEXT_CHARS, TextMode};
use crate::control::SemanticStep;
use crate::error::ActionError;
use crate::geometry::DisplaySize;

use super::checks::{Checker, InputAction, ValidatedAction};

/// Whether `id` has the form the worker issues: `ax_` and 16 lowercase hex digits.
pub(crate) fn is_observation_id(id: &str) -> bool {
    id.strip_prefix("ax_").is_some_and(|hex| {
        hex.len() == 16
            && hex
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

impl Checker {
    fn observation_id(&self, id: &str) -> Result<String, ActionError> {
        if !is_observation_id(id) {
            return Err(self.fail(
                "observation_id",
                "observation_id must be an id from GET .../accessibility (ax_ and 16 hex digits)",
            ));
        }
        Ok(id.to_string())
    }

    fn ax_text(&self, text: &str, mode: TextMode) -> Result<String, ActionError> {
        if mode == TextMode::Insert && text.is_empty() {
            return Err(self.fail("text", "inserting needs at least one character"));
        }
        let n_chars = text.chars().count();
        if n_chars > AX_MAX_TEXT_CHARS {
            return Err(self.fail(
                "text",
                format!("text has {n_chars} characters, at most {AX_MAX_TEXT_CHARS} allowed"),
            ));
        }
        if let Some((position, bad)) = text
            .chars()
            .enumerate()
            .find(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
        {
            return Err(self.fail(
                "text",
                format!(
                    "text character {position} ({}) is a control character; only newline and \
                     tab are allowed",
                    bad.escape_default()
                ),
            ));
        }
        Ok(text.to_string())
    }
}

/// Validates a semantic step and strips its intent into a [`ValidatedAction`].
pub fn validate_semantic(step: &SemanticStep) -> Result<ValidatedAction, ActionError> {
    let action_type = step.action_type();
    let check = Checker {
        action_type: action_type.as_str(),
        // Semantic steps carry no coordinates.
        display: DisplaySize {
            width: 0,
            height: 0,
        },
    };
    let input = match step {
        SemanticStep::AxPress {
            observation_id,
            node,
            ..
        } => InputAction::AxPress {
            observation_id: check.observation_id(observation_id)?,
            node: *node,
        },
        SemanticStep::AxSetText {
            observation_id,
            node,
            text,
            mode,
            ..
        } => InputAction::AxSetText {
            observation_id: check.observation_id(observation_id)?,
            node: *node,
            text: check.ax_text(text, *mode)?,
            mode: *mode,
        },
    };
    let intent = check.intent(step.intent())?;
    Ok(ValidatedAction {
        input,
        intent,
        action_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(observation_id: &str, intent: &str) -> SemanticStep {
        SemanticStep::AxPress {
            observation_id: observation_id.to_string(),
            node: 3,
            intent: intent.to_string(),
        }
    }

    fn set(text: &str, mode: TextMode) -> SemanticStep {
        SemanticStep::AxSetText {
            observation_id: "ax_0123456789abcdef".to_string(),
            node: 7,
            text: text.to_string(),
            mode,
            intent: "fill the field".to_string(),
        }
    }

    #[test]
    fn a_press_keeps_its_observation_and_node() {
        let validated = validate_semantic(&press("ax_0123456789abcdef", " press it ")).unwrap();
        assert_eq!(
            validated.input(),
            &InputAction::AxPress {
                observation_id: "ax_0123456789abcdef".to_string(),
                node: 3
            }
        );
        assert_eq!(validated.intent(), "press it");
        assert_eq!(validated.action_type().as_str(), "ax_press");
        assert!(validated.input().is_semantic() && validated.input().injects_input());
    }

    #[test]
    fn bad_steps_name_their_field() {
        let cases = [
            (press("ax_0123", "x"), "observation_id"),
            (press("ax_0123456789ABCDEF", "x"), "observation_id"),
            (press("sc_0123456789abcdef", "x"), "observation_id"),
            (press("ax_0123456789abcdef", " "), "intent"),
            (set("", TextMode::Insert), "text"),
            (set("a\u{0}b", TextMode::Set), "text"),
            (set("a\u{1b}[2J", TextMode::Insert), "text"),
            (
                set(&"x".repeat(AX_MAX_TEXT_CHARS + 1), TextMode::Set),
                "text",
            ),
        ];
        for (step, field) in cases {
            let error = validate_semantic(&step).unwrap_err();
            assert_eq!(error.field, field, "{step:?}: {error:?}");
        }
    }

    #[test]
    fn text_may_be_unicode_with_newlines_and_set_may_clear() {
        for (text, mode) in [
            ("hello 文本🙂", TextMode::Insert),
            ("line one\nline two\tend", TextMode::Set),
            ("", TextMode::Set),
            (&*"é".repeat(AX_MAX_TEXT_CHARS), TextMode::Insert),
        ] {
            let validated = validate_semantic(&set(text, mode)).unwrap();
            assert!(
                matches!(validated.input(), InputAction::AxSetText { text: t, .. } if t == text)
            );
        }
    }
}
