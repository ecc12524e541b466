//! The policy's clipboard modes by table, and the mapping of desktop failures.

use super::*;

#[test]
fn policy_modes_by_table() {
    let cases = [
        (None, Direction::Read, false),
        (None, Direction::Write, false),
        (Some(ClipboardMode::None), Direction::Read, false),
        (Some(ClipboardMode::None), Direction::Write, false),
        (Some(ClipboardMode::Read), Direction::Read, true),
        (Some(ClipboardMode::Read), Direction::Write, false),
        (Some(ClipboardMode::ReadWrite), Direction::Read, true),
        (Some(ClipboardMode::ReadWrite), Direction::Write, true),
    ];
    for (mode, direction, allows) in cases {
        match allowed(mode, direction) {
            Ok(()) => assert!(allows, "{mode:?} {direction:?}"),
            Err(error) => {
                assert!(!allows, "{mode:?} {direction:?}");
                assert_eq!(error.code(), ErrorCode::ClipboardDisabled);
            }
        }
    }
}

#[test]
fn desktop_failures_by_table() {
    let cases = [
        (
            Direction::Write,
            BackendError::OutcomeUnknown("x".into()),
            ErrorCode::ClipboardOutcomeUnknown,
        ),
        (
            Direction::Write,
            BackendError::Worker("pipe".into()),
            ErrorCode::ClipboardOutcomeUnknown,
        ),
        (
            Direction::Write,
            BackendError::ClipboardUnavailable("too big".into()),
            ErrorCode::ClipboardUnavailable,
        ),
        (
            Direction::Write,
            BackendError::ProcessDied("xvfb".into()),
            ErrorCode::DesktopFailed,
        ),
        (
            Direction::Read,
            BackendError::Worker("pipe".into()),
            ErrorCode::DesktopFailed,
        ),
        (
            Direction::Read,
            BackendError::ClipboardUnavailable("no text".into()),
            ErrorCode::ClipboardUnavailable,
        ),
    ];
    for (direction, error, code) in cases {
        let text = error.to_string();
        let mapped = desktop_error(direction, error);
        assert_eq!(mapped.code(), code, "{direction:?} {text}");
    }
    // The unknown outcome's message reaches the client (502 with the broker's own words).
    let body = desktop_error(Direction::Write, BackendError::OutcomeUnknown("x".into())).to_body();
    assert!(body.message.contains("never retried"), "{}", body.message);
}
