//! Unit tests of validation, key parsing, settle decisions and wire shapes.

use crate::keys::parse_chord;
use crate::settle::SettleDecision;
use crate::*;

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

#[test]
fn chords_parse_case_insensitively_and_split_on_plus() {
    let chord = parse_chord(&keys(&["shift+Tab"])).unwrap();
    assert_eq!(
        chord,
        vec![Key::Modifier(Modifier::Shift), Key::Named(NamedKey::Tab)]
    );
    let chord = parse_chord(&keys(&["CTRL", "S"])).unwrap();
    assert_eq!(chord, vec![Key::Modifier(Modifier::Ctrl), Key::Char('s')]);
    assert_eq!(
        parse_chord(&keys(&["Return"])).unwrap(),
        vec![Key::Named(NamedKey::Return)]
    );
    assert_eq!(
        parse_chord(&keys(&["F2"])).unwrap(),
        vec![Key::Named(NamedKey::F(2))]
    );
    assert_eq!(
        parse_chord(&keys(&["ctrl++"])).unwrap(),
        vec![Key::Modifier(Modifier::Ctrl), Key::Char('+')]
    );
}

#[test]
fn system_keys_and_chords_are_refused() {
    for chord in [
        vec!["win"],
        vec!["super", "l"],
        vec!["alt", "f4"],
        vec!["ctrl+alt+delete"],
        vec!["ctrl", "shift", "esc"],
        vec!["ctrl+alt+backspace"],
        vec!["ctrl+alt+f1"],
        vec!["ctrl+alt+F12"],
        vec!["ctrl+alt+kp_add"],
        vec!["cmd", "q"],
        vec!["alt", "tab"],
        vec!["alt", "shift", "tab"],
        vec!["alt+esc"],
        vec!["alt", "space"],
        vec!["ctrl", "esc"],
        vec!["ctrl", "alt", "right"],
        vec!["ctrl+alt+left"],
        vec!["shift", "ctrl", "alt", "up"],
        vec!["ctrl+alt+down"],
        vec!["shift", "alt", "left"],
        vec!["alt+shift+up"],
        vec!["print"],
        vec!["alt", "print"],
        vec!["sysrq"],
    ] {
        assert!(
            parse_chord(&keys(&chord)).is_err(),
            "{chord:?} must be refused"
        );
    }
    assert!(parse_chord(&keys(&["ctrl+alt+f13"])).is_ok());
    // The app's own chords stay available.
    for chord in [
        vec!["tab"],
        vec!["esc"],
        vec!["space"],
        vec!["ctrl", "right"],
        vec!["alt", "right"],
        vec!["shift", "left"],
        vec!["shift+tab"],
        vec!["ctrl+tab"],
    ] {
        assert!(parse_chord(&keys(&chord)).is_ok(), "{chord:?} must pass");
    }
}

#[test]
fn settle_decision_follows_the_contract() {
    let policy = SettlePolicy::default();
    assert_eq!(policy.decide(399, None), SettleDecision::Continue);
    assert_eq!(policy.decide(400, None), SettleDecision::Settled);
    assert_eq!(policy.decide(300, Some(100)), SettleDecision::Continue);
    assert_eq!(policy.decide(350, Some(100)), SettleDecision::Settled);
    assert_eq!(policy.decide(2_000, Some(1_900)), SettleDecision::GiveUp);
}

#[test]
fn validated_action_strips_intent() {
    let action: Action = serde_json::from_str(
        r#"{"type":"click","x":10,"y":20,"button":"right","intent":"  open menu "}"#,
    )
    .unwrap();
    let valid = validate_action(&action, DisplaySize::FULL_HD).unwrap();
    assert_eq!(valid.intent(), "open menu");
    let wire = serde_json::to_string(valid.input()).unwrap();
    assert!(!wire.contains("intent"), "{wire}");
}

#[test]
fn base64_round_trips() {
    for len in 0..40u8 {
        let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37)).collect();
        let text = b64::encode(&bytes);
        assert_eq!(b64::decode(&text).unwrap(), bytes);
    }
    assert!(b64::decode("abc").is_none());
    assert!(b64::decode("ab=c").is_none());
}

#[test]
fn intents_need_a_visible_character() {
    let done = |intent: &str| Action::Done {
        intent: intent.to_string(),
    };
    for invisible in [
        "\u{200B}",
        "\u{200B}\u{200C}\u{200D}\u{2060}\u{FEFF}",
        "\u{202E}\u{202A}\u{2066}\u{2069}\u{200E}\u{200F}\u{061C}",
        " \u{00AD} \u{3164} \u{2800} \u{FE0F} \u{E0041}",
    ] {
        let error = validate_action(&done(invisible), DisplaySize::FULL_HD)
            .expect_err("an intent of invisible characters");
        assert!(
            error.to_string().contains("visible"),
            "{invisible:?}: {error}"
        );
    }
    for visible in ["\u{200B}save\u{200B}", "\u{202E}x", "保存", "✓"] {
        assert!(
            validate_action(&done(visible), DisplaySize::FULL_HD).is_ok(),
            "{visible:?} has a visible character"
        );
    }
}

fn frame_response(png: &[u8]) -> worker::WorkerResponse {
    worker::WorkerResponse::new(
        7,
        worker::WorkerReply::Ok(worker::WorkerValue::Frame(desktop::Frame {
            png: png.to_vec(),
            width: 2,
            height: 1,
            captured_at_ms: 5,
            sha256: "00".into(),
            app_maximized: true,
        })),
    )
}

#[test]
fn a_frame_crosses_the_worker_wire_as_an_attachment_not_base64() {
    let mut response = frame_response(b"\x89PNG-bytes");
    let png = response.detach_png();
    let line = serde_json::to_string(&response).unwrap();
    assert_eq!(png, b"\x89PNG-bytes");
    assert!(line.contains(r#""attachment_len":10"#), "{line}");
    assert!(!line.contains("png"), "{line}");
    let mut read: worker::WorkerResponse = serde_json::from_str(&line).unwrap();
    read.attach_png(png).unwrap();
    assert_eq!(read.reply, frame_response(b"\x89PNG-bytes").reply);
    // Without a frame there is no attachment, and the field is absent.
    let mut bye = worker::WorkerResponse::new(1, worker::WorkerReply::Ok(worker::WorkerValue::Bye));
    assert!(bye.detach_png().is_empty());
    assert!(!serde_json::to_string(&bye).unwrap().contains("attachment"));
}

#[test]
fn a_mismatched_attachment_is_a_protocol_error() {
    let line = |response: &worker::WorkerResponse| -> worker::WorkerResponse {
        serde_json::from_str(&serde_json::to_string(response).unwrap()).unwrap()
    };
    let mut sent = frame_response(b"abc");
    sent.detach_png();
    // Shorter or longer than announced.
    assert!(line(&sent).attach_png(b"ab".to_vec()).is_err());
    assert!(line(&sent).attach_png(b"abcd".to_vec()).is_err());
    // A frame announced without bytes.
    let mut empty = frame_response(b"");
    empty.detach_png();
    assert!(line(&empty).attach_png(Vec::new()).is_err());
    // Bytes announced for a value without a frame.
    let mut bye = worker::WorkerResponse::new(1, worker::WorkerReply::Ok(worker::WorkerValue::Bye));
    bye.attachment_len = 3;
    assert!(line(&bye).attach_png(b"abc".to_vec()).is_err());
}

#[test]
fn a_program_step_is_an_action_or_a_semantic_step_on_the_same_wire() {
    use crate::control::{ProgramStep, SemanticStep};
    // An action step serializes exactly as the action: a program's digest is unchanged.
    let click = serde_json::json!({"type": "click", "x": 3, "y": 4, "intent": "c"});
    let action: Action = serde_json::from_value(click.clone()).unwrap();
    let step: ProgramStep = serde_json::from_value(click).unwrap();
    assert_eq!(step, ProgramStep::Input(action.clone()));
    assert_eq!(
        serde_json::to_value(&step).unwrap(),
        serde_json::to_value(&action).unwrap()
    );
    let press = serde_json::json!({"type": "ax_press", "observation_id": "ax_0123456789abcdef", "node": 5, "intent": "p"});
    let step: ProgramStep = serde_json::from_value(press.clone()).unwrap();
    assert!(matches!(
        step,
        ProgramStep::Semantic(SemanticStep::AxPress { node: 5, .. })
    ));
    assert_eq!(serde_json::to_value(&step).unwrap(), press);
    assert!(ProgramStep::SEMANTIC_TYPES.contains(&"ax_set_text"));
    // The worker carries the validated step like any input.
    let input = validate::InputAction::AxSetText {
        observation_id: "ax_0123456789abcdef".to_string(),
        node: 2,
        text: "12.5".to_string(),
        mode: a11y::TextMode::Insert,
    };
    let line = serde_json::to_string(&input).unwrap();
    assert!(line.contains(r#""type":"ax_set_text""#), "{line}");
    assert_eq!(
        serde_json::from_str::<validate::InputAction>(&line).unwrap(),
        input
    );
}

#[test]
fn a_prohibited_destination_matches_every_given_part_case_insensitively() {
    use crate::desktop::ProhibitedDestination;
    let rule = |class: Option<&str>, title: Option<&str>| ProhibitedDestination {
        label: "x".to_string(),
        class_contains: class.map(str::to_string),
        title_contains: title.map(str::to_string),
        accessible_role: None,
        accessible_name: None,
    };
    let console = rule(None, Some("python CONSOLE"));
    assert!(console.matches("freecad FreeCAD", "Python console"));
    assert!(!console.matches("freecad FreeCAD", "FreeCAD - attempt.FCStd"));
    let both = rule(Some("qtwebengine"), Some("Start"));
    assert!(both.matches("QtWebEngineProcess x", "Start page"));
    assert!(!both.matches("freecad FreeCAD", "Start page"));
    assert!(!both.matches("QtWebEngineProcess x", "Help"));
    assert!(!rule(None, None).matches("anything", "anything"));
    assert!(!console.matches_accessible("frame", "Python console"));
}

#[test]
fn an_accessible_rule_matches_role_and_name_exactly_and_no_window() {
    use crate::desktop::ProhibitedDestination;
    let rule = |role: Option<&str>, name: Option<&str>| ProhibitedDestination {
        label: "x".to_string(),
        class_contains: None,
        title_contains: None,
        accessible_role: role.map(str::to_string),
        accessible_name: name.map(str::to_string),
    };
    let dock = rule(Some("frame"), Some("python console"));
    assert!(dock.matches_accessible("frame", "Python console"));
    assert!(!dock.matches_accessible("frame", "Python console 2"));
    assert!(!dock.matches_accessible("panel", "Python console"));
    assert!(rule(None, Some("Report view")).matches_accessible("frame", "report VIEW"));
    assert!(!dock.matches("freecad FreeCAD", "Python console"));
    assert!(!rule(None, None).matches_accessible("frame", ""));
}
