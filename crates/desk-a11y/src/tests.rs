//! Unit tests of the pure parts: semantic actions refused as stale without an observation,
//! extents without a size, and the bound window's frame.

use desk_contract::a11y::AxWindow;
use desk_contract::desktop::WindowRect;

use super::*;
use crate::access::classify;

#[test]
fn without_an_observation_every_semantic_action_is_stale_before_any_bus_call() {
    let mut a11y = Accessibility::new().expect("runtime");
    let bound = BoundWindow {
        rect: WindowRect {
            x: 0,
            y: 0,
            width: 10,
            height: 10,
        },
        frame: None,
    };
    let error = a11y.press("ax_0000", 1, bound).expect_err("stale");
    assert_eq!(error, A11yError::StaleObservation("ax_0000".to_string()));
    let error = a11y
        .set_text("ax_0000", 1, bound, "x", TextMode::Insert)
        .expect_err("stale");
    assert_eq!(error, A11yError::StaleObservation("ax_0000".to_string()));
    assert!(a11y.connection.is_none(), "no connection was attempted");
}

#[test]
fn extents_without_a_size_are_no_bounds() {
    assert_eq!(observe::rect((1, 2, 0, 5)), None);
    assert_eq!(observe::rect((1, 2, -1, 5)), None);
    assert_eq!(
        observe::rect((-3, 2, 4, 5)),
        Some(WindowRect {
            x: -3,
            y: 2,
            width: 4,
            height: 5
        })
    );
}

#[test]
fn a_frame_is_the_bound_window_at_its_client_or_its_decorated_rectangle() {
    let rect = |x, y, width, height| WindowRect {
        x,
        y,
        width,
        height,
    };
    let bound = BoundWindow {
        rect: rect(0, 19, 1280, 781),
        frame: Some(rect(0, 0, 1280, 800)),
    };
    for (bounds, expected) in [
        (Some(rect(0, 19, 1280, 781)), AxWindow::Bound),
        (Some(rect(0, 0, 1280, 800)), AxWindow::Bound),
        (Some(rect(10, 10, 300, 200)), AxWindow::Other),
        (None, AxWindow::Other),
    ] {
        assert_eq!(
            classify("frame", bounds, Some(bound)),
            expected,
            "{bounds:?}"
        );
    }
    let undecorated = BoundWindow {
        frame: None,
        ..bound
    };
    assert_eq!(classify("frame", None, Some(undecorated)), AxWindow::Other);
    assert_eq!(
        classify("dialog", Some(rect(0, 0, 1280, 800)), Some(bound)),
        AxWindow::Other
    );
}
