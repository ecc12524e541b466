//! Unit tests of the long-poll's query parsing.

use std::time::Duration;

use desk_contract::api::SessionState;

use super::{MAX_WAIT_MS, StatusWait};

#[test]
fn accepts_the_documented_shapes() {
    let parsed = StatusWait::parse(Some("wait_ms=5000&state=ready&next_action_index=7")).unwrap();
    assert_eq!(
        parsed,
        StatusWait {
            wait: Duration::from_millis(MAX_WAIT_MS),
            state: Some(SessionState::Ready),
            next_action_index: Some(7),
            generation: None,
        }
    );
    let parsed = StatusWait::parse(Some("next_action_index=0&wait_ms=0")).unwrap();
    assert_eq!(parsed.wait, Duration::ZERO);
    assert_eq!(parsed.next_action_index, Some(0));
    assert_eq!(StatusWait::parse(None).unwrap(), StatusWait::default());
    assert_eq!(StatusWait::parse(Some("")).unwrap(), StatusWait::default());
}

#[test]
fn refuses_malformed_parameters_without_clamping() {
    let cases = [
        "wait_ms=5001",
        "wait_ms=-1",
        "wait_ms=+5",
        "wait_ms=1.5",
        "wait_ms=1e3",
        "wait_ms=",
        "wait_ms",
        "wait_ms=true",
        "wait_ms=99999999999999999999999",
        "wait_ms=10&wait_ms=20",
        "wait_ms=10&state=bogus",
        "wait_ms=10&state=Ready",
        "wait_ms=10&next_action_index=-1",
        "wait_ms=10&next_action_index=18446744073709551616",
        "wait_ms=10&extra=1",
        "wait_ms=10&",
        "state=ready",
        "next_action_index=3",
        "wait%5Fms=10",
    ];
    for query in cases {
        let error = StatusWait::parse(Some(query)).unwrap_err();
        let body = error.to_body();
        assert_eq!(
            body.code,
            desk_contract::ErrorCode::InvalidRequest,
            "{query}: {body:?}"
        );
    }
}

#[test]
fn an_action_in_flight_is_not_an_answer() {
    use super::{View, answers};
    let view = |state, next_action_index| View {
        state,
        next_action_index,
        generation: 1,
    };
    let ready = view(SessionState::Ready, 3);
    assert!(!answers(ready, ready));
    assert!(answers(ready, view(SessionState::Ready, 4)));
    assert!(answers(ready, view(SessionState::Error, 3)));
    assert!(answers(ready, view(SessionState::Released, 3)));
    assert!(
        !answers(ready, view(SessionState::Running, 4)),
        "running is transient: wait for the action's end"
    );
    assert!(answers(
        view(SessionState::Running, 4),
        view(SessionState::Ready, 4)
    ));
}
