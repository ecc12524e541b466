//! Keyboard input: chords and typed text as the probe saw them.

use desk_contract::keys::parse_chord;
use desk_contract::validate::InputAction;
use desk_test_support::typed_text;

use crate::desk::{desk, of_kind};

fn chord(names: &[&str]) -> InputAction {
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    InputAction::Key {
        keys: parse_chord(&names).unwrap(),
    }
}

#[test]
fn chords_arrive_with_modifiers_and_leave_nothing_held() {
    let Some(mut desk) = desk(1024, 768) else {
        return;
    };

    let (_, events) = desk.run(chord(&["ctrl+s"]));
    let presses = of_kind(&events, "key_press");
    let names: Vec<_> = presses
        .iter()
        .map(|e| e.keysym_name.clone().unwrap())
        .collect();
    assert_eq!(names, ["Control_L", "s"]);
    assert!(presses[1].ctrl() && !presses[1].shift());
    let releases: Vec<_> = of_kind(&events, "key_release")
        .iter()
        .map(|e| e.keysym_name.clone().unwrap())
        .collect();
    assert_eq!(releases, ["s", "Control_L"]);
    desk.assert_nothing_held();

    let (_, events) = desk.run(chord(&["shift+Tab"]));
    let presses = of_kind(&events, "key_press");
    assert_eq!(presses.len(), 2);
    assert_eq!(presses[0].keysym_name.as_deref(), Some("Shift_L"));
    assert!(presses[1].shift());
    assert!(
        matches!(
            presses[1].keysym_name.as_deref(),
            Some("ISO_Left_Tab" | "Tab")
        ),
        "{:?}",
        presses[1]
    );
    desk.assert_nothing_held();

    let (outcome, events) = desk.run(chord(&["ctrl", "shift", "a"]));
    let presses = of_kind(&events, "key_press");
    assert_eq!(presses.len(), 3);
    assert!(presses[2].ctrl() && presses[2].shift());
    assert_eq!(presses[2].char.as_deref(), Some("A"));
    assert_eq!(of_kind(&events, "key_release").len(), 3);
    assert!(outcome.released_after.is_empty());
    desk.assert_nothing_held();
}

#[test]
fn chord_with_shifted_symbol_adds_shift() {
    let Some(mut desk) = desk(800, 600) else {
        return;
    };
    let (_, events) = desk.run(chord(&["ctrl+plus"]));
    let presses = of_kind(&events, "key_press");
    let last = presses.last().unwrap();
    assert_eq!(last.char.as_deref(), Some("+"));
    assert!(last.ctrl());
    desk.assert_nothing_held();
}

#[test]
fn typed_text_is_exact() {
    let Some(mut desk) = desk(1024, 768) else {
        return;
    };
    let all_printable: String = (0x20u8..=0x7e).map(char::from).collect();
    let samples = [
        "<html> & -dash",
        "-starts with dash",
        "say \"hi\" it's ~ | \\ done",
        "Hello, World! 123",
        all_printable.as_str(),
    ];
    for text in samples {
        let (outcome, events) = desk.run(InputAction::Type {
            text: text.to_string(),
        });
        assert_eq!(typed_text(&events), text);
        assert_eq!(
            of_kind(&events, "key_release").len(),
            of_kind(&events, "key_press").len()
        );
        assert!(outcome.released_after.is_empty());
    }
    desk.assert_nothing_held();
}
