//! Unit tests of the watchdog's pure `due` rule: no kill before a limit, each limit at its
//! threshold.

use super::*;

fn facts() -> SessionFacts {
    SessionFacts {
        id: crate::ids::sid("s_1"),
        state: "ready".to_string(),
        session_dir: "/nonexistent".to_string(),
        next_action_index: 2,
        expires_at_ms: 100_000,
        handoff_ms: Some(10_000),
        last_action_end_ms: Some(20_000),
        action_in_flight: false,
        pending_action: None,
    }
}

const GRACE: Duration = Duration::from_secs(30);

#[test]
fn no_limit_no_kill_until_the_lease_and_its_grace_end() {
    let none = SessionLimits::default();
    assert_eq!(due(&facts(), 99, &none, GRACE, 130_000), None);
    let (limit, _) = due(&facts(), 0, &none, GRACE, 130_001).expect("due");
    assert_eq!(limit, Limit::LeaseExpiry);
}

#[test]
fn each_limit_fires_at_its_threshold_and_not_before() {
    let task = SessionLimits {
        max_task: Some(Duration::from_secs(5)),
        ..SessionLimits::default()
    };
    assert_eq!(due(&facts(), 0, &task, GRACE, 14_999), None);
    assert_eq!(
        due(&facts(), 0, &task, GRACE, 15_000).map(|due| due.0),
        Some(Limit::MaxTaskMinutes)
    );
    let mut not_reset = facts();
    not_reset.handoff_ms = None;
    assert_eq!(due(&not_reset, 0, &task, GRACE, 50_000), None);

    let refused = SessionLimits {
        max_refused_actions: Some(3),
        ..SessionLimits::default()
    };
    assert_eq!(due(&facts(), 2, &refused, GRACE, 20_000), None);
    assert_eq!(
        due(&facts(), 3, &refused, GRACE, 20_000).map(|due| due.0),
        Some(Limit::MaxRefusedActions)
    );

    let idle = SessionLimits {
        idle_limit: Some(Duration::from_secs(10)),
        ..SessionLimits::default()
    };
    assert_eq!(due(&facts(), 0, &idle, GRACE, 29_999), None);
    assert_eq!(
        due(&facts(), 0, &idle, GRACE, 30_000).map(|due| due.0),
        Some(Limit::IdleLimit)
    );
    let mut busy = facts();
    busy.action_in_flight = true;
    assert_eq!(due(&busy, 0, &idle, GRACE, 60_000), None);
}
