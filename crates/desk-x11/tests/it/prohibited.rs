//! Prohibited destinations (`WindowRules::prohibited`): with a rule matching the probe's own
//! window (by title or by class), a click and a key onto it are refused with
//! `DestinationProhibited` and the probe records nothing; a rule matching nothing leaves the
//! same input delivered. Prints what the check costs per refused action.

use std::time::{Duration, Instant};

use desk_contract::Button;
use desk_contract::desktop::ProhibitedDestination;
use desk_contract::keys::parse_chord;
use desk_contract::validate::InputAction;
use desk_contract::worker::WorkerFailureKind;

use crate::desk::{desk_with, of_kind, point, probe_rules};

fn rule(label: &str, class: Option<&str>, title: Option<&str>) -> ProhibitedDestination {
    ProhibitedDestination {
        label: label.to_string(),
        class_contains: class.map(str::to_string),
        title_contains: title.map(str::to_string),
        accessible_role: None,
        accessible_name: None,
    }
}

fn click() -> InputAction {
    InputAction::Click {
        at: point(640, 400),
        button: Button::Left,
        modifiers: Vec::new(),
    }
}

fn key() -> InputAction {
    InputAction::Key {
        keys: parse_chord(&["a".to_string()]).unwrap(),
    }
}

#[test]
fn input_onto_a_prohibited_window_is_refused_and_nothing_arrives() {
    for prohibited in [
        rule("probe by title", None, Some("DESKBROKER PROBE")),
        rule("probe by class", Some("deskprobe"), None),
    ] {
        let mut rules = probe_rules();
        rules.prohibited = vec![rule("unrelated", None, Some("Python console")), prohibited];
        let Some(mut desk) = desk_with(1280, 800, rules, |_| {}) else {
            return;
        };
        let mark = desk.events().len();
        let mut spent = Duration::ZERO;
        let rounds = 20u32;
        for _ in 0..rounds {
            for action in [click(), key()] {
                let started = Instant::now();
                let failure = desk
                    .session
                    .execute(&action, &Default::default())
                    .unwrap_err();
                spent += started.elapsed();
                assert_eq!(failure.kind, WorkerFailureKind::DestinationProhibited);
                assert!(failure.message.contains("probe by"), "{}", failure.message);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
        let events = desk.events().split_off(mark);
        for kind in ["button_press", "button_release", "key_press", "key_release"] {
            assert_eq!(
                of_kind(&events, kind).len(),
                0,
                "nothing may arrive: {events:?}"
            );
        }
        println!(
            "prohibited destination refused in {:.2} ms per action (focus read and check)",
            spent.as_secs_f64() * 1000.0 / f64::from(rounds * 2)
        );
        desk.assert_nothing_held();
    }
}

#[test]
fn a_rule_matching_nothing_lets_input_through() {
    let mut rules = probe_rules();
    rules.prohibited = vec![
        rule("Python console", None, Some("Python console")),
        rule("empty rule", None, None),
    ];
    let Some(mut desk) = desk_with(1280, 800, rules, |_| {}) else {
        return;
    };
    let (_, events) = desk.run(click());
    assert_eq!(of_kind(&events, "button_press").len(), 1, "{events:?}");
    let (_, events) = desk.run(key());
    assert_eq!(of_kind(&events, "key_press").len(), 1, "{events:?}");
}
