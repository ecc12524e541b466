//! Idempotency and exactly-once: reset replay, action replay, conflicts, state refusals and
//! backend failures before and after input.

use axum::http::StatusCode;
use desk_desktop::fake::FakeFailure;
use serde_json::json;

use crate::support::{Harness, click};

#[tokio::test]
async fn reset_replays_the_cached_response() {
    let harness = Harness::new();
    let id = harness.lease("t", "a").await;
    let path = format!("/v1/sessions/{id}/reset");
    let (_, first) = harness
        .call("POST", &path, Some(json!({"request_id": "r1"})))
        .await;
    let (status, again) = harness
        .call("POST", &path, Some(json!({"request_id": "r1"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["screenshot"], first["screenshot"]);
    let (status, other) = harness
        .call("POST", &path, Some(json!({"request_id": "r2"})))
        .await;
    assert_eq!(
        (status, other["code"].as_str()),
        (StatusCode::CONFLICT, Some("invalid_state"))
    );
}

#[tokio::test]
async fn action_replay_returns_the_cached_response_without_input() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, first) = harness.act(&id, "req-1", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, again) = harness.act(&id, "req-1", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["receipt"], first["receipt"]);
    assert_eq!(again["screenshot"], first["screenshot"]);
    assert_eq!(
        harness.fake.n_inputs(),
        1,
        "the fake saw the input exactly once"
    );
    assert_eq!(harness.status(&id).await["next_action_index"], 1);
}

#[tokio::test]
async fn reused_request_id_with_other_content_conflicts() {
    let harness = Harness::new();
    let id = harness.ready().await;
    harness.act(&id, "req-1", 0, click(5, 5)).await;
    let (status, body) = harness.act(&id, "req-1", 0, click(6, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("action_sequence_conflict"))
    );
    let (status, body) = harness.act(&id, "req-1", 1, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("action_sequence_conflict"))
    );
    let intent_changed = json!({"type": "click", "x": 5, "y": 5, "intent": "something else"});
    let (status, body) = harness.act(&id, "req-1", 0, intent_changed).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("action_sequence_conflict"))
    );
    assert_eq!(harness.fake.n_inputs(), 1);
}

#[tokio::test]
async fn unexpected_index_conflicts() {
    let harness = Harness::new();
    let id = harness.ready().await;
    for index in [1, 7] {
        let (status, body) = harness
            .act(&id, &format!("r{index}"), index, click(5, 5))
            .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::CONFLICT, Some("action_sequence_conflict"))
        );
    }
    harness.act(&id, "r0", 0, click(5, 5)).await;
    let (status, body) = harness.act(&id, "r-again", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("action_sequence_conflict"))
    );
    assert_eq!(harness.fake.n_inputs(), 1);
}

#[tokio::test]
async fn actions_after_done_are_refused() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let done = json!({"type": "done", "intent": "finished"});
    let (status, _) = harness.act(&id, "d", 0, done.clone()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = harness.act(&id, "after", 1, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("invalid_state"))
    );
    // Replaying the done itself still answers from the journal.
    let (status, replay) = harness.act(&id, "d", 0, done).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(replay["idempotent_replay"], true);
    assert_eq!(harness.fake.n_inputs(), 0);
}

#[tokio::test]
async fn actions_before_reset_are_refused() {
    let harness = Harness::new();
    let id = harness.lease("t", "a").await;
    let (status, body) = harness.act(&id, "r", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("invalid_state"))
    );
}

#[tokio::test]
async fn failure_before_input_can_be_retried() {
    let harness = Harness::new();
    let id = harness.ready().await;
    harness.fake.fail_execute(1, FakeFailure::BeforeInput);
    let (status, body) = harness.act(&id, "r0", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_GATEWAY, Some("desktop_failed"))
    );
    assert!(
        !body["message"].as_str().unwrap().contains("scripted"),
        "cause leaked: {body}"
    );
    assert_eq!(harness.fake.n_inputs(), 0);
    let (status, body) = harness.act(&id, "r0", 0, click(5, 5)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["idempotent_replay"], false);
    assert_eq!(harness.fake.n_inputs(), 1);
}

#[tokio::test]
async fn unknown_outcome_is_never_replayed() {
    let harness = Harness::new();
    let id = harness.ready().await;
    harness.fake.fail_execute(1, FakeFailure::OutcomeUnknown);
    let (status, body) = harness.act(&id, "r0", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("input_outcome_unknown")
        )
    );
    assert_eq!(harness.fake.n_inputs(), 1);
    let status_body = harness.status(&id).await;
    assert_eq!(status_body["state"], "error");
    assert_eq!(status_body["last_error"]["code"], "input_outcome_unknown");
    let (status, body) = harness.act(&id, "r0", 0, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("input_outcome_unknown")
        )
    );
    let (status, body) = harness.act(&id, "r1", 1, click(5, 5)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("invalid_state"))
    );
    assert_eq!(harness.fake.n_inputs(), 1, "nothing was injected again");
}

#[tokio::test]
async fn concurrent_identical_requests_inject_once() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (first, second) = tokio::join!(
        harness.act(&id, "same", 0, click(5, 5)),
        harness.act(&id, "same", 0, click(5, 5))
    );
    assert_eq!(first.0, StatusCode::OK);
    assert_eq!(second.0, StatusCode::OK);
    let n_replays = [&first.1, &second.1]
        .iter()
        .filter(|body| body["idempotent_replay"] == true)
        .count();
    assert_eq!(n_replays, 1);
    assert_eq!(harness.fake.n_inputs(), 1);
}
