//! The operator view over the router with `FakeDesktop`: the status long-poll (woken by a change,
//! timing out unchanged, refusing bad parameters without touching anything) and `/v1/metrics`.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::{Harness, click};

/// Runs `poll` and, after `delay`, `change`; returns the poll's answer, how long it took, and
/// how long after the change finished it answered.
async fn poll_while<F: std::future::Future>(
    harness: &Harness,
    path: &str,
    delay: Duration,
    change: F,
) -> ((StatusCode, Value), Duration, F::Output) {
    let started = Instant::now();
    let poll = async {
        let answer = harness.call("GET", path, None).await;
        (answer, started.elapsed())
    };
    let change = async {
        tokio::time::sleep(delay).await;
        change.await
    };
    let ((answer, elapsed), changed) = tokio::join!(poll, change);
    (answer, elapsed, changed)
}

#[tokio::test]
async fn an_action_wakes_a_long_poll_and_an_idle_one_times_out() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let path = format!("/v1/sessions/{id}?wait_ms=5000&state=ready&next_action_index=0");
    let ((status, body), elapsed, (acted, _)) = poll_while(
        &harness,
        &path,
        Duration::from_millis(300),
        harness.act(&id, "a0", 0, click(10, 10)),
    )
    .await;
    assert_eq!(acted, StatusCode::OK);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["next_action_index"], 1);
    assert_eq!(body["state"], "ready");
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(3),
        "woken by the action, not the deadline: {elapsed:?}"
    );

    // Nothing changes: the poll answers at its deadline with the same view.
    let started = Instant::now();
    let (status, body) = harness
        .call(
            "GET",
            &format!("/v1/sessions/{id}?wait_ms=400&next_action_index=1"),
            None,
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["next_action_index"], 1);
    assert!(
        elapsed >= Duration::from_millis(400) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );

    // A stale view answers at once.
    let started = Instant::now();
    let (status, body) = harness
        .call(
            "GET",
            &format!("/v1/sessions/{id}?wait_ms=5000&next_action_index=0"),
            None,
        )
        .await;
    assert_eq!(
        (status, body["next_action_index"].as_u64()),
        (StatusCode::OK, Some(1))
    );
    assert!(started.elapsed() < Duration::from_secs(1));

    // Reads by other clients (status, screenshot) do not end the wait early.
    let path = format!("/v1/sessions/{id}?wait_ms=600");
    let ((status, body), elapsed, _) =
        poll_while(&harness, &path, Duration::from_millis(50), async {
            harness.status(&id).await;
            harness
                .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
                .await
        })
        .await;
    assert_eq!(
        (status, body["next_action_index"].as_u64()),
        (StatusCode::OK, Some(1))
    );
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
}

#[tokio::test]
async fn state_changes_wake_a_long_poll() {
    let harness = Harness::new();
    let id = harness.lease("task-1", "attempt-1").await;
    let path = format!("/v1/sessions/{id}?wait_ms=5000&state=leased");
    let reset_path = format!("/v1/sessions/{id}/reset");
    let reset = harness.call("POST", &reset_path, Some(json!({"request_id": "r0"})));
    let ((status, body), elapsed, (reset_status, _)) =
        poll_while(&harness, &path, Duration::from_millis(200), reset).await;
    assert_eq!(reset_status, StatusCode::OK);
    assert_eq!(
        (status, body["state"].as_str()),
        (StatusCode::OK, Some("ready"))
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");

    let path = format!("/v1/sessions/{id}?wait_ms=5000&state=ready");
    let release_path = format!("/v1/sessions/{id}");
    let release = harness.call("DELETE", &release_path, None);
    let ((status, body), elapsed, (released, _)) =
        poll_while(&harness, &path, Duration::from_millis(200), release).await;
    assert_eq!(released, StatusCode::OK);
    assert_eq!(
        (status, body["state"].as_str()),
        (StatusCode::OK, Some("released"))
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn bad_long_poll_parameters_are_refused_and_change_nothing() {
    let harness = Harness::new();
    let id = harness.ready().await;
    harness.act(&id, "a0", 0, click(5, 5)).await;
    let before = harness.status(&id).await;
    let n_actions_before = harness.fake.n_inputs();
    let cases = [
        "wait_ms=5001",
        "wait_ms=-1",
        "wait_ms=1.5",
        "wait_ms=true",
        "wait_ms=",
        "wait_ms=18446744073709551616",
        "wait_ms=10&wait_ms=10",
        "wait_ms=10&state=asleep",
        "wait_ms=10&next_action_index=x",
        "wait_ms=10&timeout=1",
        "state=ready",
    ];
    for query in cases {
        let started = Instant::now();
        let (status, body) = harness
            .call("GET", &format!("/v1/sessions/{id}?{query}"), None)
            .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_request")),
            "{query}: {body}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{query}: refused before any wait"
        );
    }
    assert_eq!(harness.status(&id).await, before);
    assert_eq!(harness.fake.n_inputs(), n_actions_before);
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().unwrap())
}

#[tokio::test]
async fn metrics_count_every_request_by_operation_status_and_code() {
    let harness = Harness::new();
    let id = harness.ready().await;
    for index in 0..3 {
        let (status, _) = harness
            .act(&id, &format!("a{index}"), index, click(3, 3))
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    // A sequence conflict: a typed refusal counted with its code.
    let (status, _) = harness.act(&id, "a0", 0, click(4, 4)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    harness.call("GET", "/v1/nope", None).await;
    // Refused by the auth layer before any handler (no token for this id): still one entry.
    let (status, _) = harness.call("GET", "/v1/sessions/s_nope", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, text) = harness.raw("GET", "/v1/metrics", None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let count =
        |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series} in\n{text}"));
    assert_eq!(
        count(r#"deskbroker_requests_total{op="execute",status="200",code="none"}"#),
        3.0
    );
    assert_eq!(
        count(
            r#"deskbroker_requests_total{op="execute",status="409",code="action_sequence_conflict"}"#
        ),
        1.0
    );
    assert_eq!(
        count(r#"deskbroker_requests_total{op="lease",status="200",code="none"}"#),
        1.0
    );
    assert_eq!(
        count(r#"deskbroker_requests_total{op="reset",status="200",code="none"}"#),
        1.0
    );
    assert_eq!(
        count(r#"deskbroker_requests_total{op="unknown",status="404",code="not_found"}"#),
        1.0
    );
    assert_eq!(
        count(r#"deskbroker_requests_total{op="status",status="401",code="unauthorized"}"#),
        1.0
    );
    assert_eq!(
        count(r#"deskbroker_request_duration_seconds_count{op="execute"}"#),
        4.0
    );
    assert_eq!(
        count(r#"deskbroker_request_duration_seconds_bucket{op="execute",le="+Inf"}"#),
        4.0
    );
    assert!(count(r#"deskbroker_request_duration_seconds_sum{op="execute"}"#) > 0.0);
    assert_eq!(count(r#"deskbroker_sessions{state="ready"}"#), 1.0);
    assert_eq!(count("deskbroker_sessions_active"), 1.0);
    assert!(!text.contains(&id), "session ids are not labels");

    // The scrape itself is counted by the next one.
    let (_, text) = harness.raw("GET", "/v1/metrics", None).await;
    assert_eq!(
        sample(
            &text,
            r#"deskbroker_requests_total{op="metrics",status="200",code="none"}"#
        ),
        Some(1.0)
    );
}
