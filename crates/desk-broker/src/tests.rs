//! Unit tests of the pure helpers, the store's recovery and the error mapping.

use desk_contract::ErrorCode;
use serde_json::json;

use crate::error::BrokerError;
use crate::util::{canonical_json, rfc3339};

#[test]
fn rfc3339_formats_known_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(rfc3339(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
}

#[test]
fn canonical_json_sorts_keys_at_every_level() {
    let value = json!({"b": 1, "a": {"d": [3, {"z": 1, "y": 2}], "c": "x"}});
    assert_eq!(
        canonical_json(&value),
        r#"{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}"#
    );
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
fn event_log_records_round_trip() {
    use desk_contract::events::{
        EventRecord, FrameEvent, FrameEventsRow, InputEvent, InputEventKind, Provenance,
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
        action_index: 3,
        provenance: Provenance::BrokerAction,
    };
    let text = serde_json::to_string(&record).unwrap();
    assert!(
        text.contains(r#""sourcePid":-1"#) && text.contains(r#""actionIndex":3"#),
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
