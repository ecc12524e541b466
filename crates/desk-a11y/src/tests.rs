use super::*;

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
