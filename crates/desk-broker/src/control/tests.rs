//! The control state's rules without HTTP: claims, Stop, restart, stale tokens, persistence,
//! and the screenshot geometry history.
#![allow(clippy::unwrap_used)]

use desk_contract::api::Screenshot;
use desk_contract::control::{ControlClaim, ControlMode, ControlToken, StopReason};
use desk_contract::{DisplaySize, ErrorCode};
use desk_desktop::SessionDir;

use super::shots::HISTORY;
use super::{Controls, Scope};
use crate::error::BrokerError;
use crate::ids::sid;

fn code(error: BrokerError) -> ErrorCode {
    error.code()
}

fn claim(owner: &str, mode: ControlMode) -> ControlClaim {
    ControlClaim {
        owner: owner.to_string(),
        mode,
    }
}

fn token(owner: &str, generation: u64) -> ControlToken {
    ControlToken {
        owner: owner.to_string(),
        generation,
    }
}

fn shot(width: u32, height: u32) -> Screenshot {
    Screenshot {
        png_base64: String::new(),
        png: None,
        width,
        height,
        sequence: 1,
        timestamp_ms: 0,
        app_maximized: true,
        sha256: String::new(),
        screenshot_id: None,
        image_content_rect: None,
        image_global_bounds: None,
        zoom: None,
        gate: None,
    }
}

const DISPLAY: DisplaySize = DisplaySize {
    width: 640,
    height: 400,
};

#[test]
fn owner_generation_stop_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let dir = SessionDir::at(dir.path());
    let controls = Controls::default();
    // Unowned: requests without a token act; a token is refused.
    let first = controls.admit(&sid("s"), &dir, None).unwrap();
    assert_eq!(first.generation, 1);
    assert_eq!(
        code(
            controls
                .admit(&sid("s"), &dir, Some(&token("a", 1)))
                .unwrap_err()
        ),
        ErrorCode::ControlBusy
    );
    let owned = controls
        .claim(&sid("s"), &dir, &claim("a", ControlMode::Act))
        .unwrap();
    assert_eq!(owned.generation, 2);
    // The old unowned scope is gone: work admitted under it stops.
    assert_eq!(
        code(controls.recheck(&sid("s"), &dir, first).unwrap_err()),
        ErrorCode::ControlStaleGeneration
    );
    let cases = [
        (None, ErrorCode::ControlBusy),
        (Some(token("b", 2)), ErrorCode::ControlBusy),
        (Some(token("a", 1)), ErrorCode::ControlStaleGeneration),
    ];
    for (sent, expected) in cases {
        assert_eq!(
            code(controls.admit(&sid("s"), &dir, sent.as_ref()).unwrap_err()),
            expected
        );
    }
    assert_eq!(
        code(
            controls
                .claim(&sid("s"), &dir, &claim("b", ControlMode::Act))
                .unwrap_err()
        ),
        ErrorCode::ControlBusy
    );
    let scope = controls
        .admit(&sid("s"), &dir, Some(&token("a", 2)))
        .unwrap();
    // Observe mode: no input, and a new generation, so work admitted under `act` halts at
    // its next check; claiming the same mode again changes nothing.
    let observing = controls
        .claim(&sid("s"), &dir, &claim("a", ControlMode::Observe))
        .unwrap();
    assert_eq!(observing.generation, 3);
    assert_eq!(
        code(controls.recheck(&sid("s"), &dir, scope).unwrap_err()),
        ErrorCode::ControlStaleGeneration
    );
    assert_eq!(
        controls
            .claim(&sid("s"), &dir, &claim("a", ControlMode::Observe))
            .unwrap()
            .generation,
        3
    );
    for (sent, refused) in [
        (token("a", 2), ErrorCode::ControlStaleGeneration),
        (token("a", 3), ErrorCode::ControlObserveOnly),
    ] {
        assert_eq!(
            code(controls.admit(&sid("s"), &dir, Some(&sent)).unwrap_err()),
            refused
        );
    }
    // Back to act: another generation; the `act` work of generation 2 stays halted.
    let acting = controls
        .claim(&sid("s"), &dir, &claim("a", ControlMode::Act))
        .unwrap();
    assert_eq!(acting.generation, 4);
    let scope = controls
        .admit(&sid("s"), &dir, Some(&token("a", 4)))
        .unwrap();
    controls.recheck(&sid("s"), &dir, scope).unwrap();
    // Stop advances the generation first; a second Stop changes nothing.
    let stopped = controls
        .stop(&sid("s"), &dir, StopReason::UserStopped)
        .unwrap();
    assert_eq!((stopped.generation, stopped.stopped), (5, true));
    assert_eq!(
        controls
            .stop(&sid("s"), &dir, StopReason::AgentStopped)
            .unwrap(),
        stopped
    );
    assert_eq!(
        code(controls.recheck(&sid("s"), &dir, scope).unwrap_err()),
        ErrorCode::ControlStopped
    );
    for sent in [None, Some(token("a", 4)), Some(token("a", 5))] {
        assert_eq!(
            code(controls.admit(&sid("s"), &dir, sent.as_ref()).unwrap_err()),
            ErrorCode::ControlStopped
        );
    }
    assert_eq!(
        code(
            controls
                .claim(&sid("s"), &dir, &claim("a", ControlMode::Act))
                .unwrap_err()
        ),
        ErrorCode::ControlStopped
    );
    // Persisted: a restarted broker (a fresh `Controls`) sees the stopped generation.
    let reloaded = Controls::default();
    assert_eq!(reloaded.status(&sid("s"), &dir).unwrap(), stopped);
    let restarted = reloaded
        .restart(&sid("s"), &dir, &claim("c", ControlMode::Act))
        .unwrap();
    assert_eq!((restarted.generation, restarted.stopped), (6, false));
    reloaded
        .admit(&sid("s"), &dir, Some(&token("c", 6)))
        .unwrap();
    assert_eq!(
        code(
            reloaded
                .restart(&sid("s"), &dir, &claim("c", ControlMode::Act))
                .unwrap_err()
        ),
        ErrorCode::InvalidState
    );
    let mode = std::fs::metadata(dir.control_file()).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
}

#[test]
fn screenshot_ids_are_scoped_bounded_and_never_clamp() {
    let dir = tempfile::tempdir().unwrap();
    let dir = SessionDir::at(dir.path());
    let controls = Controls::default();
    controls.rebind(&sid("s"), &dir).unwrap();
    let mut first = shot(640, 400);
    controls
        .identify(&sid("s"), &dir, &mut first, DISPLAY)
        .unwrap();
    let id = first.screenshot_id.clone().unwrap();
    assert!(id.starts_with("shot_"));
    let scope = Scope {
        generation: 1,
        target_revision: 1,
    };
    let geometry = controls.geometry(&sid("s"), &dir, &id, scope).unwrap();
    assert_eq!(geometry.to_screen("point", 0, 0).unwrap(), (0, 0));
    assert_eq!(geometry.to_screen("point", 639, 399).unwrap(), (639, 399));
    for (x, y) in [(640, 0), (0, 400), (-1, 5), (5, -1), (10_000, 10_000)] {
        assert_eq!(
            code(geometry.to_screen("point", x, y).unwrap_err()),
            ErrorCode::PointOutsideImage,
            "({x}, {y})"
        );
    }
    // A half-size image maps each pixel onto the display once (exact integer scaling).
    let mut half = shot(320, 200);
    controls
        .identify(&sid("s"), &dir, &mut half, DISPLAY)
        .unwrap();
    let half = controls
        .geometry(
            &sid("s"),
            &dir,
            half.screenshot_id.as_deref().unwrap(),
            scope,
        )
        .unwrap();
    assert_eq!(half.to_screen("point", 160, 100).unwrap(), (320, 200));
    assert_eq!(half.to_screen("point", 319, 199).unwrap(), (638, 398));
    // Padding: content smaller than the image is refused inside the image too.
    let mut padded = half.clone();
    padded.content.width = 300;
    let error = padded.to_screen("point", 310, 10).unwrap_err();
    assert!(error.to_string().contains("padding"), "{error}");
    // Unknown, and stale after a rebind (a reset) or a new generation.
    assert_eq!(
        code(
            controls
                .geometry(&sid("s"), &dir, "shot_nope", scope)
                .unwrap_err()
        ),
        ErrorCode::ScreenshotUnknown
    );
    controls.rebind(&sid("s"), &dir).unwrap();
    let rebound = Scope {
        generation: 1,
        target_revision: 2,
    };
    assert_eq!(
        code(
            controls
                .geometry(&sid("s"), &dir, &id, rebound)
                .unwrap_err()
        ),
        ErrorCode::ScreenshotStale
    );
    // Only the last HISTORY geometries are kept.
    for _ in 0..HISTORY {
        controls
            .identify(&sid("s"), &dir, &mut shot(640, 400), DISPLAY)
            .unwrap();
    }
    assert_eq!(
        code(controls.geometry(&sid("s"), &dir, &id, scope).unwrap_err()),
        ErrorCode::ScreenshotUnknown
    );
    // A named image becomes the most recent: read from by every item of a long batch, it
    // outlives the frames those items return.
    let mut read_from = shot(640, 400);
    controls
        .identify(&sid("s"), &dir, &mut read_from, DISPLAY)
        .unwrap();
    let read_from = read_from.screenshot_id.unwrap();
    for _ in 0..2 * HISTORY {
        controls
            .identify(&sid("s"), &dir, &mut shot(640, 400), DISPLAY)
            .unwrap();
        controls
            .geometry(&sid("s"), &dir, &read_from, rebound)
            .unwrap();
    }
}
