//! Control sessions, input programs, screenshot ids and capabilities over the HTTP router with
//! fake desktops: refusal tables (nothing reaches the fake), exactly-once and step logs.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::{Harness, click};

pub(crate) fn program(request_id: &str, index: u64, steps: Value, extra: Value) -> Value {
    let mut body =
        json!({"request_id": request_id, "expected_action_index": index, "steps": steps});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    body
}

pub(crate) async fn post(
    harness: &Harness,
    id: &str,
    route: &str,
    body: Value,
) -> (StatusCode, Value) {
    harness
        .call("POST", &format!("/v1/sessions/{id}/{route}"), Some(body))
        .await
}

pub(crate) fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_program_runs_once_logs_every_step_and_replays() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, claimed) = post(&harness, &id, "control", json!({"owner": "agent-a"})).await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    let generation = claimed["generation"].as_u64().unwrap();
    let steps =
        json!([click(10, 10), {"type": "type", "text": "ab", "intent": "t"}, click(20, 30)]);
    let token = json!({"control": {"owner": "agent-a", "generation": generation}});
    let body = program("p1", 0, steps.clone(), token.clone());
    let (status, first) = post(&harness, &id, "programs", body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let receipt = &first["receipt"];
    assert_eq!(
        (receipt["attempted"].as_u64(), receipt["submitted"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(receipt["failing_step"].is_null() && receipt["observation_error"].is_null());
    assert_eq!(receipt["steps"].as_array().unwrap().len(), 3);
    assert_eq!(receipt["generation"].as_u64(), Some(generation));
    assert!(
        first["screenshot"]["screenshot_id"]
            .as_str()
            .unwrap()
            .starts_with("shot_")
    );
    assert_eq!(harness.fake.n_inputs(), 3);
    // Every input row carries its step; one frame row embeds all three steps.
    let events = std::fs::read_to_string(harness.session_file(&id, "events.json")).unwrap();
    let steps_seen: Vec<u64> = events
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["stepIndex"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(
        steps_seen.windows(2).all(|pair| pair[0] <= pair[1]),
        "{steps_seen:?}"
    );
    assert_eq!(
        (steps_seen.first(), steps_seen.last()),
        (Some(&0), Some(&2))
    );
    let frames = std::fs::read_to_string(harness.session_file(&id, "frame_events.json")).unwrap();
    assert_eq!(frames.lines().count(), 1);
    // The same request again: the cached answer, no input; other content: a conflict.
    let (status, again) = post(&harness, &id, "programs", body).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(again["screenshot"], first["screenshot"]);
    let (status, other) = post(
        &harness,
        &id,
        "programs",
        program("p1", 0, json!([click(1, 1)]), token),
    )
    .await;
    assert_eq!(
        (status, code(&other)),
        (StatusCode::CONFLICT, "action_sequence_conflict")
    );
    let (_, as_action) = harness.act(&id, "p1", 0, click(10, 10)).await;
    assert_eq!(code(&as_action), "action_sequence_conflict");
    assert_eq!(harness.fake.n_inputs(), 3);
    let status = harness.status(&id).await;
    assert_eq!(status["next_action_index"], 1);
    assert_eq!(status["control"]["generation"].as_u64(), Some(generation));
}

#[tokio::test]
async fn refusals_send_nothing_and_change_nothing() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (_, reset_shot) = harness
        .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
        .await;
    let shot_id = reset_shot["screenshot_id"].as_str().unwrap().to_string();
    assert_eq!(
        reset_shot["image_content_rect"],
        json!({"x": 0, "y": 0, "width": 640, "height": 400})
    );
    let cases: Vec<(Value, &str)> = vec![
        (
            program("q", 0, json!([click(1, 1), click(700, 1)]), json!({})),
            "invalid_params",
        ),
        (
            program(
                "q",
                0,
                json!([click(1, 1), {"type": "click", "x": 1, "intent": "no y"}]),
                json!({}),
            ),
            "invalid_params",
        ),
        (program("q", 0, json!([]), json!({})), "invalid_params"),
        (
            program(
                "q",
                0,
                json!([click(1, 1)]),
                json!({"screenshot_id": "shot_unknown"}),
            ),
            "screenshot_unknown",
        ),
        (
            program(
                "q",
                0,
                json!([click(640, 5)]),
                json!({"screenshot_id": shot_id}),
            ),
            "point_outside_image",
        ),
        (
            program(
                "q",
                0,
                json!([click(1, 1)]),
                json!({"control": {"owner": "x", "generation": 1}}),
            ),
            "control_busy",
        ),
        (
            program("q", 5, json!([click(1, 1)]), json!({})),
            "action_sequence_conflict",
        ),
    ];
    for (body, expected) in &cases {
        let (status, answer) = post(&harness, &id, "programs", body.clone()).await;
        assert_eq!(code(&answer), *expected, "{body} -> {status} {answer}");
    }
    let (_, bad) = post(&harness, &id, "programs", cases[1].0.clone()).await;
    assert!(
        bad["message"].as_str().unwrap().starts_with("steps[1]"),
        "{bad}"
    );
    // Ownership: a second owner, a single action without a token, a stale generation.
    let (_, claimed) = post(&harness, &id, "control", json!({"owner": "a"})).await;
    let generation = claimed["generation"].as_u64().unwrap();
    let (status, busy) = post(&harness, &id, "control", json!({"owner": "b"})).await;
    assert_eq!(
        (status, code(&busy)),
        (StatusCode::CONFLICT, "control_busy")
    );
    assert_eq!(
        code(&harness.act(&id, "a0", 0, click(1, 1)).await.1),
        "control_busy"
    );
    let stale = json!({"control": {"owner": "a", "generation": generation - 1}});
    let (_, answer) = post(
        &harness,
        &id,
        "programs",
        program("q", 0, json!([click(1, 1)]), stale),
    )
    .await;
    assert_eq!(code(&answer), "control_stale_generation");
    // The screenshot named before the claim belongs to the old generation.
    let own =
        json!({"control": {"owner": "a", "generation": generation}, "screenshot_id": shot_id});
    let (_, answer) = post(
        &harness,
        &id,
        "programs",
        program("q", 0, json!([click(1, 1)]), own),
    )
    .await;
    assert_eq!(code(&answer), "screenshot_stale");
    // Stop: the generation advances; nothing acts until an explicit restart.
    let (status, stopped) = post(&harness, &id, "stop", json!({"reason": "user_stopped"})).await;
    assert_eq!(status, StatusCode::OK, "{stopped}");
    assert_eq!(
        stopped["control"]["generation"].as_u64(),
        Some(generation + 1)
    );
    assert_eq!(stopped["released_held"], json!([]));
    let after = json!({"control": {"owner": "a", "generation": generation + 1}});
    let (_, answer) = post(
        &harness,
        &id,
        "programs",
        program("q", 0, json!([click(1, 1)]), after),
    )
    .await;
    assert_eq!(code(&answer), "control_stopped");
    assert_eq!(
        code(
            &post(&harness, &id, "control", json!({"owner": "a"}))
                .await
                .1
        ),
        "control_stopped"
    );
    assert_eq!(harness.fake.n_inputs(), 0, "no refusal sent input");
    assert_eq!(harness.status(&id).await["next_action_index"], 0);
    let (status, restarted) = post(&harness, &id, "control/restart", json!({"owner": "a"})).await;
    assert_eq!(status, StatusCode::OK, "{restarted}");
    let fresh = json!({"control": {"owner": "a", "generation": generation + 2}});
    let (status, ran) = post(
        &harness,
        &id,
        "programs",
        program("q", 0, json!([click(1, 1)]), fresh),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{ran}");
    assert_eq!(harness.fake.n_inputs(), 1);
}

#[tokio::test]
async fn capabilities_list_routes_and_refuse_what_is_not_offered() {
    let harness = Harness::new();
    let (status, document) = harness.call("GET", "/v1/capabilities", None).await;
    assert_eq!(status, StatusCode::OK, "{document}");
    let routes = document["routes"].as_array().unwrap();
    assert!(routes.contains(&json!("POST /v1/sessions/{id}/programs")));
    assert!(
        document["step_types"]
            .as_array()
            .unwrap()
            .contains(&json!("drag"))
    );
    // Fake desktops have no accessibility: no semantic step types, the features refused.
    for types in ["step_types", "action_types"] {
        let listed = document[types].as_array().unwrap();
        assert!(!listed.contains(&json!("ax_press")), "{types}");
    }
    for feature in [
        "background_input",
        "wayland_portals",
        "browser_automation",
        "virtual_cursor",
        "accessibility",
        "windows",
        "semantic_steps",
    ] {
        let (status, refused) = harness
            .call("GET", &format!("/v1/capabilities/{feature}"), None)
            .await;
        assert_eq!(
            (status, code(&refused)),
            (StatusCode::NOT_IMPLEMENTED, "unsupported"),
            "{feature}"
        );
    }
    let (status, offered) = harness
        .call("GET", "/v1/capabilities/input_programs", None)
        .await;
    assert_eq!(
        (status, offered["supported"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    let (status, _) = harness.call("GET", "/v1/capabilities/teleport", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let id = harness.ready().await;
    let (_, session) = harness
        .call("GET", &format!("/v1/sessions/{id}/capabilities"), None)
        .await;
    assert_eq!(session["control"]["generation"].as_u64(), Some(1));
    let press = json!([{"type": "ax_press", "observation_id": "ax_0123456789abcdef", "node": 1, "intent": "press"}]);
    let (status, refused) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/programs"),
            Some(program("semantic", 0, press, json!({}))),
        )
        .await;
    assert_eq!(
        (status, code(&refused)),
        (StatusCode::NOT_IMPLEMENTED, "unsupported"),
        "{refused}"
    );
    // A semantic step that does not parse is invalid_params naming the step and field.
    let bad = json!([{"type": "ax_set_text", "observation_id": "ax_0123456789abcdef", "node": 1, "text": "x", "mode": "replace", "intent": "t"}]);
    let (status, refused) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/programs"),
            Some(program("semantic-bad", 0, bad, json!({}))),
        )
        .await;
    assert_eq!(
        (status, code(&refused)),
        (StatusCode::BAD_REQUEST, "invalid_params"),
        "{refused}"
    );
    assert!(
        refused["message"].as_str().unwrap().contains("steps[0]"),
        "{refused}"
    );
}

/// A single action may name the screenshot its coordinates were read from (as the benchmark
/// harness does for every item of a batch): checked and mapped like a program's, refused with
/// nothing sent, and an identical retry replays even after the image left the history.
#[tokio::test]
async fn an_action_bound_to_a_screenshot_is_checked_and_replays_after_the_history_moves_on() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let screenshot = format!("/v1/sessions/{id}/screenshot");
    let (_, shot) = harness.call("GET", &screenshot, None).await;
    let shot_id = shot["screenshot_id"].as_str().unwrap().to_string();
    let bound = |request_id: &str, index: u64, action: Value, read_from: &str| {
        json!({"request_id": request_id, "expected_action_index": index,
               "screenshot_id": read_from, "action": action})
    };
    let actions = format!("/v1/sessions/{id}/actions");
    for (body, expected) in [
        (
            bound("b0", 0, click(10, 10), "shot_unknown"),
            "screenshot_unknown",
        ),
        (
            bound("b0", 0, click(640, 5), &shot_id),
            "point_outside_image",
        ),
        (
            bound("b0", 0, click(5, -1), &shot_id),
            "point_outside_image",
        ),
    ] {
        let (_, answer) = harness.call("POST", &actions, Some(body.clone())).await;
        assert_eq!(code(&answer), expected, "{body} -> {answer}");
    }
    assert_eq!(harness.fake.n_inputs(), 0, "a refused binding sent input");
    let body = bound("b0", 0, click(10, 10), &shot_id);
    let (status, first) = harness.call("POST", &actions, Some(body.clone())).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(harness.fake.n_inputs(), 1);
    // Unbound, the same request id is other content.
    let (_, other) = harness.act(&id, "b0", 0, click(10, 10)).await;
    assert_eq!(code(&other), "action_sequence_conflict");
    // Enough frames later the image is gone; the identical retry still replays.
    for _ in 0..20 {
        harness.call("GET", &screenshot, None).await;
    }
    let (status, again) = harness.call("POST", &actions, Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["idempotent_replay"], true);
    let (_, gone) = harness
        .call(
            "POST",
            &actions,
            Some(bound("b1", 1, click(10, 10), &shot_id)),
        )
        .await;
    assert_eq!(code(&gone), "screenshot_unknown");
    assert_eq!(harness.fake.n_inputs(), 1);
}
