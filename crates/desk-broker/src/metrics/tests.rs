//! Unit tests of the metrics table and its Prometheus rendering.

use std::collections::BTreeMap;

use super::{Gauges, Metrics};

fn gauges() -> Gauges {
    Gauges {
        by_state: BTreeMap::from([("ready", 2), ("error", 1)]),
        active: 3,
        max_sessions: 8,
    }
}

fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn renders_counts_cumulative_buckets_and_gauges() {
    let metrics = Metrics::default();
    metrics.record("execute", 200, None, 0.3);
    metrics.record("execute", 200, None, 0.0005);
    metrics.record("execute", 409, Some("action_sequence_conflict"), 0.002);
    metrics.record("lease", 200, None, 100.0);
    let text = metrics.render(&gauges());
    assert_eq!(
        value(
            &text,
            r#"deskbroker_requests_total{op="execute",status="200",code="none"}"#
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            r#"deskbroker_requests_total{op="execute",status="409",code="action_sequence_conflict"}"#
        ),
        1.0
    );
    let bucket = |op: &str, le: &str| {
        value(
            &text,
            &format!(r#"deskbroker_request_duration_seconds_bucket{{op="{op}",le="{le}"}}"#),
        )
    };
    assert_eq!(bucket("execute", "0.001"), 1.0);
    assert_eq!(bucket("execute", "0.005"), 2.0);
    assert_eq!(bucket("execute", "0.25"), 2.0);
    assert_eq!(bucket("execute", "0.5"), 3.0);
    assert_eq!(bucket("execute", "+Inf"), 3.0);
    assert_eq!(
        bucket("lease", "60"),
        0.0,
        "100 s is above every finite bound"
    );
    assert_eq!(bucket("lease", "+Inf"), 1.0);
    assert_eq!(
        value(
            &text,
            r#"deskbroker_request_duration_seconds_count{op="execute"}"#
        ),
        3.0
    );
    let sum = value(
        &text,
        r#"deskbroker_request_duration_seconds_sum{op="execute"}"#,
    );
    assert!((sum - 0.3025).abs() < 1e-9, "{sum}");
    assert_eq!(value(&text, r#"deskbroker_sessions{state="ready"}"#), 2.0);
    assert_eq!(value(&text, r#"deskbroker_sessions{state="leased"}"#), 0.0);
    assert_eq!(value(&text, "deskbroker_sessions_active"), 3.0);
    assert_eq!(value(&text, "deskbroker_sessions_max"), 8.0);
    assert_eq!(value(&text, "deskbroker_status_waiters"), 0.0);
    // Every sample line belongs to a declared metric family.
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = name
            .trim_end_matches("_bucket")
            .trim_end_matches("_sum")
            .trim_end_matches("_count");
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{line} has no TYPE"
        );
    }
}

#[test]
fn waiters_are_counted_while_their_guard_lives() {
    let metrics = Metrics::default();
    let first = metrics.waiting();
    let second = metrics.waiting();
    assert_eq!(
        value(&metrics.render(&gauges()), "deskbroker_status_waiters"),
        2.0
    );
    drop(first);
    drop(second);
    assert_eq!(
        value(&metrics.render(&gauges()), "deskbroker_status_waiters"),
        0.0
    );
}
