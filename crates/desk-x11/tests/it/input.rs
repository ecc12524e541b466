//! Pointer input: clicks, double clicks, drags, scrolls and moves as the probe saw them.

use desk_contract::events::InputEventKind;
use desk_contract::validate::InputAction;
use desk_contract::{Button, Modifier};

use crate::desk::{desk, of_kind, point};

#[test]
fn click_lands_once_at_exact_pixel_with_each_button() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    let cases = [(Button::Left, 1), (Button::Right, 3), (Button::Middle, 2)];
    for ((button, code), at) in
        cases
            .into_iter()
            .zip([point(640, 400), point(17, 733), point(1203, 51)])
    {
        let (outcome, events) = desk.run(InputAction::Click {
            at,
            button,
            modifiers: Vec::new(),
        });
        let presses = of_kind(&events, "button_press");
        let releases = of_kind(&events, "button_release");
        assert_eq!(presses.len(), 1, "{button:?}: {events:?}");
        assert_eq!(releases.len(), 1, "{button:?}: {events:?}");
        for event in presses.iter().chain(&releases) {
            assert_eq!(
                (event.root_x, event.root_y, event.button),
                (at.x as i32, at.y as i32, Some(code))
            );
        }
        assert_eq!(outcome.released_after, Vec::<String>::new(), "{button:?}");
        let n_clicks = outcome
            .events
            .iter()
            .filter(|event| matches!(event.kind, InputEventKind::Click { .. }))
            .count();
        assert_eq!(n_clicks, 2);
        assert_eq!(outcome.focus_after.expect("focus after").pointer, at);
    }
    desk.assert_nothing_held();
}

#[test]
fn double_click_is_exactly_two_pairs() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    let at = point(300, 300);
    let (_, events) = desk.run(InputAction::DoubleClick {
        at,
        button: Button::Left,
        modifiers: Vec::new(),
    });
    let buttons: Vec<_> = events
        .iter()
        .filter(|event| event.kind.starts_with("button_"))
        .map(|event| {
            (
                event.kind.as_str(),
                event.button,
                event.root_x,
                event.root_y,
            )
        })
        .collect();
    assert_eq!(
        buttons,
        vec![
            ("button_press", Some(1), 300, 300),
            ("button_release", Some(1), 300, 300),
            ("button_press", Some(1), 300, 300),
            ("button_release", Some(1), 300, 300),
        ]
    );
}

#[test]
fn drag_visits_every_point_in_order_with_button_held() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    let path = vec![
        point(100, 100),
        point(150, 120),
        point(200, 180),
        point(260, 200),
        point(400, 500),
    ];
    let (outcome, events) = desk.run(InputAction::Drag {
        path: path.clone(),
        button: Button::Left,
        duration_ms: 200,
        modifiers: Vec::new(),
    });
    let presses = of_kind(&events, "button_press");
    assert_eq!(presses.len(), 1);
    assert_eq!((presses[0].root_x, presses[0].root_y), (100, 100));
    let held_motion: Vec<_> = events
        .iter()
        .filter(|event| event.kind == "motion" && event.button_held(1))
        .map(|event| (event.root_x, event.root_y))
        .collect();
    let expected: Vec<_> = path[1..].iter().map(|p| (p.x as i32, p.y as i32)).collect();
    assert_eq!(held_motion, expected);
    let releases = of_kind(&events, "button_release");
    assert_eq!(releases.len(), 1);
    assert_eq!((releases[0].root_x, releases[0].root_y), (400, 500));
    let n_drag_events = outcome
        .events
        .iter()
        .filter(|event| matches!(event.kind, InputEventKind::Drag { .. }))
        .count();
    assert_eq!(n_drag_events, 4);
    desk.assert_nothing_held();
}

#[test]
fn scroll_sends_one_press_release_per_notch_and_direction() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    desk.run(InputAction::Move {
        to: point(500, 400),
        duration_ms: 0,
    });
    for (dx, dy, code, n) in [(0, -2, 4, 2), (0, 3, 5, 3), (-1, 0, 6, 1), (4, 0, 7, 4)] {
        let (outcome, events) = desk.run(InputAction::Scroll {
            dx,
            dy,
            modifiers: Vec::new(),
        });
        let presses = of_kind(&events, "button_press");
        assert_eq!(presses.len(), n, "dx={dx} dy={dy}: {events:?}");
        assert!(
            presses
                .iter()
                .all(|event| event.button == Some(code)
                    && (event.root_x, event.root_y) == (500, 400))
        );
        assert_eq!(of_kind(&events, "button_release").len(), n);
        let scrolls: Vec<_> = outcome
            .events
            .iter()
            .filter(|event| matches!(event.kind, InputEventKind::Scroll { .. }))
            .collect();
        assert_eq!(scrolls.len(), 1);
    }
}

#[test]
fn move_interpolates_and_ends_at_target() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    desk.run(InputAction::Move {
        to: point(100, 100),
        duration_ms: 0,
    });
    let (outcome, events) = desk.run(InputAction::Move {
        to: point(300, 500),
        duration_ms: 160,
    });
    let motions = of_kind(&events, "motion");
    assert!(motions.len() >= 5, "{motions:?}");
    let last = motions.last().unwrap();
    assert_eq!((last.root_x, last.root_y), (300, 500));
    assert_eq!(
        outcome.focus_after.expect("focus after").pointer,
        point(300, 500)
    );
    assert!(of_kind(&events, "button_press").is_empty());
}

#[test]
fn click_with_shift_arrives_shifted_and_releases_shift() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    let at = point(700, 300);
    let (outcome, events) = desk.run(InputAction::Click {
        at,
        button: Button::Left,
        modifiers: vec![Modifier::Shift],
    });
    let presses = of_kind(&events, "button_press");
    assert_eq!(presses.len(), 1);
    assert!(presses[0].shift(), "{:?}", presses[0]);
    let key_events: Vec<_> = events
        .iter()
        .filter(|event| event.kind.starts_with("key_"))
        .map(|event| (event.kind.as_str(), event.keysym_name.clone().unwrap()))
        .collect();
    assert_eq!(
        key_events,
        vec![
            ("key_press", "Shift_L".to_string()),
            ("key_release", "Shift_L".to_string())
        ]
    );
    let last_button = events
        .iter()
        .rposition(|event| event.kind == "button_release")
        .unwrap();
    let shift_release = events
        .iter()
        .rposition(|event| event.kind == "key_release")
        .unwrap();
    assert!(shift_release > last_button);
    assert!(outcome.released_after.is_empty());
    desk.assert_nothing_held();
}

#[test]
fn out_of_bounds_point_is_refused_before_input() {
    let Some(mut desk) = desk(640, 480) else {
        return;
    };
    let mark = desk.events().len();
    let failure = desk
        .session
        .execute(
            &InputAction::Click {
                at: point(640, 10),
                button: Button::Left,
                modifiers: Vec::new(),
            },
            &Default::default(),
        )
        .unwrap_err();
    assert_eq!(
        failure.kind,
        desk_contract::worker::WorkerFailureKind::InvalidRequest
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(desk.events().len(), mark);
}
