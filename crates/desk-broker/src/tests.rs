//! Unit tests of the pure helpers, request digests, error bodies and event-log records.

use desk_contract::ErrorCode;
use desk_desktop::BackendError;
use serde_json::json;

use crate::error::BrokerError;
use crate::util::rfc3339;

#[test]
fn rfc3339_formats_known_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(rfc3339(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
}

/// The request digest journals held before RFC 8785: sorted keys at every level, serde_json's
/// scalars. Kept here only as the reference the replay promise is checked against.
fn sorted_keys_json(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{}:{}", json!(key), sorted_keys_json(&map[key])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        serde_json::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(sorted_keys_json).collect();
            format!("[{}]", items.join(","))
        }
        scalar => scalar.to_string(),
    }
}

/// A request id journaled with the old sorted-keys digest is still the same request: for
/// every action type, with intents full of escapes and non-ASCII text, the RFC 8785 digest
/// equals the old one (and a different action still differs).
#[test]
fn request_digests_match_journals_written_with_sorted_keys_json() {
    let intent = "quote \" \\ tab\t nl\n ctl\u{1f} del\u{7f} é ✓ 🦀 \u{2028}";
    let actions = [
        json!({"type": "click", "x": 10, "y": 20, "button": "right", "modifiers": ["shift"], "intent": intent}),
        json!({"type": "double_click", "x": 0, "y": 0, "intent": intent}),
        json!({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}], "duration_ms": 120, "modifiers": ["ctrl", "alt"], "intent": intent}),
        json!({"type": "move", "x": 5, "y": 6, "duration_ms": 0, "intent": intent}),
        json!({"type": "scroll", "dx": -1, "dy": 3, "intent": intent}),
        json!({"type": "key", "keys": ["ctrl", "s"], "intent": intent}),
        json!({"type": "type", "text": "Hello, \"world\" \\ ~", "intent": intent}),
        json!({"type": "wait", "milliseconds": 250, "intent": intent}),
        json!({"type": "done", "intent": intent}),
    ];
    let mut digests = std::collections::BTreeSet::new();
    for action in actions {
        let request = desk_contract::api::ActionRequest {
            request_id: "r-1".to_string(),
            expected_action_index: 9_007_199_254_740_991,
            screenshot_id: None,
            action: serde_json::from_value(action.clone()).unwrap(),
        };
        let old = json!({
            "expected_action_index": request.expected_action_index,
            "action": request.action,
        });
        let old = crate::util::sha256_hex(sorted_keys_json(&old).as_bytes());
        let new = crate::actions::request_digest(&request).unwrap();
        assert_eq!(new, old, "{action}");
        digests.insert(new);
    }
    assert_eq!(digests.len(), 9, "different actions keep different digests");
}

#[test]
fn server_errors_hide_their_cause() {
    let error = BrokerError::Io {
        operation: "read",
        path: "/secret/path".into(),
        source: std::io::Error::other("disk on fire"),
    };
    let body = error.to_body();
    assert_eq!(body.code, ErrorCode::Internal);
    assert!(!body.message.contains("secret"), "{}", body.message);
    let refused = BrokerError::LeaseExpired("s_1".into()).to_body();
    assert_eq!(refused.code, ErrorCode::LeaseExpired);
    assert!(refused.message.contains("s_1"));
}

#[test]
fn a_desktop_refusal_carries_the_workers_reason_and_a_desktop_failure_hides_it() {
    let reason = "the input's destination inside the app could not be checked against the \
                  profile's prohibited panels (live check: timed out); refused unverified";
    let refused = BrokerError::Desktop {
        operation: "execute_action",
        source: BackendError::DestinationProhibited(reason.to_string()),
    }
    .to_body();
    assert_eq!(refused.code, ErrorCode::DestinationProhibited);
    assert_eq!(refused.message, format!("{reason} (during execute_action)"));
    let stale = BrokerError::Desktop {
        operation: "execute_program",
        source: BackendError::AxStale("element 7 changed".into()),
    }
    .to_body();
    assert_eq!(stale.code, ErrorCode::AxObservationStale);
    assert!(
        stale.message.contains("element 7 changed"),
        "{}",
        stale.message
    );
    let failed = BrokerError::Desktop {
        operation: "execute_action",
        source: BackendError::Worker("/secret/worker.sock: broken pipe".into()),
    }
    .to_body();
    assert_eq!(failed.code, ErrorCode::DesktopFailed);
    assert!(!failed.message.contains("secret"), "{}", failed.message);
}

#[test]
fn event_log_records_round_trip() {
    use desk_contract::events::{
        EventRecord, FrameEvent, FrameEventsRow, InputEvent, InputEventKind, Origin, Provenance,
    };
    let event = InputEvent {
        timestamp_ms: 5,
        kind: InputEventKind::MouseMove { x: 1, y: 2 },
    };
    let text = serde_json::to_string(&event).unwrap();
    assert_eq!(serde_json::from_str::<InputEvent>(&text).unwrap(), event);
    let record = EventRecord {
        event,
        source_pid: -1,
        action_index: Some(3),
        provenance: Provenance::BrokerAction,
        origin: Origin::Release,
        step_index: None,
    };
    let text = serde_json::to_string(&record).unwrap();
    assert!(
        text.contains(r#""sourcePid":-1"#)
            && text.contains(r#""actionIndex":3"#)
            && text.contains(r#""provenance":"broker_action""#)
            && text.contains(r#""origin":"release""#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<EventRecord>(&text).unwrap(), record);
    let row = FrameEventsRow {
        frame: 2,
        video_t_ms: 10,
        events: vec![FrameEvent {
            record,
            video_t_ms: 4,
            t_in_frame_ms: 1,
        }],
    };
    let text = serde_json::to_string(&row).unwrap();
    assert_eq!(serde_json::from_str::<FrameEventsRow>(&text).unwrap(), row);
}
