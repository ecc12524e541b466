//! The full lifecycle, checkpoints, logs, release and expiry. Over 400 lines: one scenario per
//! lifecycle stage, each read top to bottom as the contract describes it.

use axum::http::StatusCode;
use desk_contract::events::{EventRecord, FrameEventsRow, Origin, Provenance};
use desk_contract::{InputAction, b64};
use desk_server::{ROUTES, openapi_json};
use serde_json::{Value, json};

use crate::support::{DISPLAY, Harness, SHORT, click};

#[tokio::test]
async fn full_lifecycle() {
    let harness = Harness::new();
    let id = harness.lease("task-1", "attempt-1").await;
    assert_eq!(harness.status(&id).await["state"], "leased");

    let (status, reset) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/reset"),
            Some(json!({"request_id": "r0"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    assert_eq!(reset["state"], "ready");
    assert_eq!(reset["window"]["maximized"], true);
    assert_eq!(reset["screenshot"]["width"], DISPLAY.width);
    let png = b64::decode(reset["screenshot"]["png_base64"].as_str().unwrap()).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let mut last_sequence = reset["screenshot"]["sequence"].as_u64().unwrap();

    let (status, shot) = harness
        .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{shot}");
    assert!(shot["sequence"].as_u64().unwrap() > last_sequence);
    last_sequence = shot["sequence"].as_u64().unwrap();

    let actions = [
        click(10, 20),
        json!({"type": "type", "text": "LINE 0,0 10,10", "intent": "enter a command"}),
        json!({"type": "key", "keys": ["return"], "intent": "run it"}),
        json!({"type": "wait", "milliseconds": 5, "intent": "let it render"}),
    ];
    let mut previous_sha = reset["screenshot"]["sha256"].clone();
    for (index, action) in actions.iter().enumerate() {
        let (status, answer) = harness
            .act(&id, &format!("a{index}"), index as u64, action.clone())
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["action_index"], index as u64);
        assert_eq!(answer["idempotent_replay"], false);
        assert_eq!(answer["receipt"]["post_action_visual_stable"], true);
        assert!(answer["screenshot"]["sequence"].as_u64().unwrap() > last_sequence);
        assert_ne!(answer["screenshot"]["sha256"], previous_sha);
        last_sequence = answer["screenshot"]["sequence"].as_u64().unwrap();
        previous_sha = answer["screenshot"]["sha256"].clone();
    }
    let inputs = harness.fake.inputs();
    assert_eq!(inputs.len(), 4);
    assert!(matches!(inputs[0], InputAction::Click { .. }));
    let wire = serde_json::to_string(&inputs).unwrap();
    assert!(!wire.contains("intent"), "intent must be stripped: {wire}");

    let (status, checkpoint) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{checkpoint}");
    assert_eq!(checkpoint["method"], "controller_save");
    assert_ne!(checkpoint["sha256"], checkpoint["reset_sha256"]);
    assert_eq!(harness.fake.n_saves(), 1);

    let (status, done) = harness
        .act(
            &id,
            "a-done",
            4,
            json!({"type": "done", "intent": "finished"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["receipt"]["delivery"], "done");
    assert_eq!(harness.status(&id).await["state"], "done");

    let (status, artifact) = harness
        .call("GET", &format!("/v1/sessions/{id}/artifact"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{artifact}");
    assert_eq!(artifact["filename"], "attempt.txt");
    assert_eq!(artifact["sha256"], checkpoint["sha256"]);
    let bytes = b64::decode(artifact["bytes_base64"].as_str().unwrap()).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.starts_with("initial\n") && text.contains("saved by fake desktop"),
        "{text}"
    );

    let (status, events) = harness
        .raw("GET", &format!("/v1/sessions/{id}/events"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let records: Vec<EventRecord> = events
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(records.iter().all(|record| record.source_pid == -1));
    // All broker-generated input is `broker_action`, as the benchmark contract writes it; the
    // checkpoint's save gesture is told apart by `origin` and keeps the last action's index
    // (3), not the next one (4, which `done` gets).
    assert!(
        records
            .iter()
            .all(|record| record.provenance == Provenance::BrokerAction)
    );
    let checkpoint_rows: Vec<_> = records
        .iter()
        .filter(|record| record.origin == Origin::Checkpoint)
        .collect();
    assert_eq!(
        checkpoint_rows.len(),
        4,
        "ctrl and s, down and up: {events}"
    );
    assert!(
        checkpoint_rows
            .iter()
            .all(|record| record.action_index == Some(3))
    );
    assert!(records.iter().all(|record| record.action_index != Some(4)));
    assert!(records.iter().any(|record| record.action_index == Some(1)));
    let raw_first: Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!(raw_first["sourcePid"], -1);
    assert_eq!(raw_first["provenance"], "broker_action");
    assert_eq!(raw_first["origin"], "action");

    let (status, frames) = harness
        .raw("GET", &format!("/v1/sessions/{id}/frame-events"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let rows: Vec<FrameEventsRow> = frames
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Four actions, the checkpoint's save gesture, and done.
    assert_eq!(rows.len(), 6, "{frames}");
    assert!(rows.windows(2).all(|pair| pair[0].frame < pair[1].frame));
    // A press and a release per character, Shift around the capitals (as the real worker).
    let text = "LINE 0,0 10,10";
    let capitals = text.chars().filter(char::is_ascii_uppercase).count();
    assert_eq!(rows[1].events.len(), 2 * text.len() + 2 * capitals);

    let session_dir = harness.dir.path().join("sessions").join(&id);
    assert!(session_dir.exists());
    let (status, released) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(released["released_now"], true);
    assert!(!session_dir.exists());
    let (status, again) = harness
        .call("DELETE", &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["released_now"], false);
    assert_eq!(harness.status(&id).await["state"], "released");
    let (status, refused) = harness
        .call("GET", &format!("/v1/sessions/{id}/screenshot"), None)
        .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (StatusCode::CONFLICT, Some("invalid_state"))
    );
}

#[tokio::test]
async fn artifact_before_checkpoint_is_refused() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, body) = harness
        .call("GET", &format!("/v1/sessions/{id}/artifact"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("checkpoint_required"))
    );
}

#[tokio::test]
async fn checkpoint_accepts_an_agent_save_without_sending_input() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let attempt = harness.session_file(&id, "workspace/attempt/attempt.txt");
    std::fs::write(&attempt, "edited by the agent\n").unwrap();
    let (status, body) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["method"], "already_saved");
    assert_eq!(harness.fake.n_inputs(), 0);
    // A second checkpoint of the same file answers the same.
    let (status, again) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, body);
    assert_eq!(
        harness.status(&id).await["checkpoint"]["sha256"],
        body["sha256"]
    );
}

#[tokio::test]
async fn checkpoint_refuses_a_foreign_window_and_an_unchanged_file() {
    let harness = Harness::new();
    let id = harness.ready().await;
    harness.fake.set_foreign_window_in_front(true);
    let (status, body) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "checkpoint_failed");
    assert!(
        body["message"].as_str().unwrap().contains("dialog"),
        "{body}"
    );
    assert_eq!(harness.fake.n_inputs(), 0);

    harness.fake.set_foreign_window_in_front(false);
    harness
        .fake
        .set_save(desk_desktop::fake::FakeSave::Disabled);
    let (status, body) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("checkpoint_failed"))
    );
    assert_eq!(harness.fake.n_inputs(), 1, "the save chord was sent once");
}

#[tokio::test]
async fn unmaximized_handoff_is_refused() {
    let harness = Harness::new();
    harness.fake.set_unmaximized_handoff(true);
    let id = harness.lease("t", "a").await;
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/reset"),
            Some(json!({"request_id": "r"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("app_not_maximized"))
    );
    assert_eq!(
        harness.status(&id).await["last_error"]["code"],
        "app_not_maximized"
    );
    // The session stays leased, so a later reset may succeed.
    harness.fake.set_unmaximized_handoff(false);
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/reset"),
            Some(json!({"request_id": "r2"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn expired_leases_are_refused_and_reaped() {
    let harness = Harness::with(|config| config.lease_ttl = std::time::Duration::ZERO);
    let id = harness.lease("t", "a").await;
    tokio::time::sleep(SHORT).await;
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/reset"),
            Some(json!({"request_id": "r"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("lease_expired"))
    );
    assert_eq!(harness.broker.release_expired().await.unwrap(), 1);
    assert_eq!(harness.status(&id).await["state"], "released");
    let (status, body) = harness
        .call("GET", &format!("/v1/sessions/{id}/events"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("lease_expired"))
    );
}

#[tokio::test]
async fn leases_are_idempotent_per_identity() {
    let harness = Harness::new();
    let (status, first) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "a"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["idempotent_replay"], false);
    let (status, again) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "a", "profile": "fake"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["session_id"], first["session_id"]);
    assert_eq!(again["idempotent_replay"], true);
    let (status, conflict) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "a", "profile": "other"})),
        )
        .await;
    assert_eq!(
        (status, conflict["code"].as_str()),
        (StatusCode::CONFLICT, Some("lease_conflict"))
    );
    let (status, missing) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "b", "profile": "nope"})),
        )
        .await;
    assert_eq!(
        (status, missing["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn capacity_is_bounded() {
    let harness = Harness::with(|config| config.max_sessions = 1);
    harness.lease("t", "a").await;
    let (status, body) = harness
        .call(
            "POST",
            "/v1/leases",
            Some(json!({"task_id": "t", "attempt_id": "b"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("lease_conflict"))
    );
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json() {
    let harness = Harness::new();
    let (status, body) = harness.call("GET", "/v1/nope", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, body) = harness.call("PUT", "/v1/leases", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("invalid_request"))
    );
    // An unknown session id gets the answer of a wrong lease token: no existence oracle.
    let (status, body) = harness.call("GET", "/v1/sessions/s_missing", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized"))
    );
}

#[tokio::test]
async fn openapi_documents_every_route() {
    let harness = Harness::new();
    let (status, served) = harness.call("GET", "/v1/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    let document: Value = serde_json::from_str(openapi_json()).unwrap();
    assert_eq!(served, document);
    assert_eq!(document["openapi"], "3.1.0");
    for route in ROUTES {
        let (method, path) = (route.method, route.path);
        let operation = &document["paths"][path][method.to_lowercase()];
        assert!(
            operation.is_object(),
            "{method} {path} missing from openapi.json"
        );
    }
    let n_documented: usize = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(
        n_documented,
        ROUTES.len(),
        "openapi.json documents a route the router lacks"
    );
    // Every error code, from the contract's own list.
    assert_eq!(
        document["components"]["schemas"]["ErrorBody"]["properties"]["code"]["$ref"],
        "#/components/schemas/ErrorCode"
    );
    let codes: Vec<&str> = desk_contract::ErrorCode::ALL
        .iter()
        .map(|code| code.as_str())
        .collect();
    assert_eq!(
        document["components"]["schemas"]["ErrorCode"]["enum"],
        serde_json::json!(codes)
    );
}

#[tokio::test]
async fn reaper_releases_expired_leases() {
    let harness = Harness::with(|config| {
        config.lease_ttl = std::time::Duration::from_millis(100);
        config.reaper_interval = std::time::Duration::from_millis(20);
    });
    let id = harness.lease("t", "a").await;
    let reaper = harness.broker.spawn_reaper();
    let mut state = Value::Null;
    for _ in 0..300 {
        state = harness.status(&id).await["state"].clone();
        if state == "released" {
            break;
        }
        tokio::time::sleep(SHORT).await;
    }
    reaper.abort();
    assert_eq!(state, "released");
    let (status, body) = harness
        .call(
            "POST",
            &format!("/v1/sessions/{id}/reset"),
            Some(json!({"request_id": "r"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::GONE, Some("lease_expired"))
    );
}

#[tokio::test]
async fn input_released_after_an_action_is_logged() {
    let harness = Harness::new();
    let id = harness.ready().await;
    harness
        .fake
        .leave_held_after_next(vec!["ctrl".into(), "mouse_left".into(), "a".into()]);
    let (status, answer) = harness.act(&id, "a0", 0, click(30, 40)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["receipt"]["released_after"],
        json!(["ctrl", "mouse_left", "a"])
    );
    let (_, events) = harness
        .raw("GET", &format!("/v1/sessions/{id}/events"), None)
        .await;
    let rows: Vec<Value> = events
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let released: Vec<&Value> = rows
        .iter()
        .filter(|row| row["origin"] == "release")
        .collect();
    assert_eq!(released.len(), 3, "{events}");
    for row in &released {
        assert_eq!(row["provenance"], "broker_action");
        assert_eq!(row["actionIndex"], 0);
        assert_eq!(row["sourcePid"], -1);
    }
    assert_eq!(
        (
            released[0]["type"].as_str(),
            released[0]["modifier"].as_str(),
            released[0]["pressed"].as_bool()
        ),
        (Some("modifier_change"), Some("ctrl"), Some(false))
    );
    assert_eq!(
        (
            released[1]["type"].as_str(),
            released[1]["x"].as_u64(),
            released[1]["y"].as_u64(),
            released[1]["button"].as_str()
        ),
        (Some("click"), Some(30), Some(40), Some("left"))
    );
    assert_eq!(
        (released[2]["type"].as_str(), released[2]["key"].as_str()),
        (Some("key"), Some("a"))
    );
    // Released input follows the action's own input, in its frame row too.
    assert_eq!(rows.last().unwrap()["origin"], "release");
    let (_, frames) = harness
        .raw("GET", &format!("/v1/sessions/{id}/frame-events"), None)
        .await;
    let row: Value = serde_json::from_str(frames.lines().last().unwrap()).unwrap();
    assert_eq!(row["events"].as_array().unwrap().len(), rows.len());
}

#[tokio::test]
async fn a_failed_event_log_write_after_input_is_named_and_the_action_counts() {
    let harness = Harness::new();
    let id = harness.ready().await;
    // A full disk under events.json: appends fail with ENOSPC, reads see an empty log.
    let events = harness.session_file(&id, "events.json");
    std::fs::remove_file(&events).unwrap();
    std::os::unix::fs::symlink("/dev/full", &events).unwrap();
    let (status, answer) = harness.act(&id, "a0", 0, click(5, 6)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["receipt"]["delivery"], "input_injected");
    assert_eq!(
        answer["receipt"]["observation_failures"],
        json!(["event_log"])
    );
    assert!(
        !answer["screenshot"]["png_base64"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    assert_eq!(harness.fake.n_inputs(), 1);
    assert_eq!(harness.status(&id).await["state"], "ready");
    // The identical retry replays the same answer; the session takes the next action.
    let (status, replay) = harness.act(&id, "a0", 0, click(5, 6)).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["idempotent_replay"], true);
    assert_eq!(
        replay["receipt"]["observation_failures"],
        json!(["event_log"])
    );
    std::fs::remove_file(&events).unwrap();
    let (status, next) = harness.act(&id, "a1", 1, click(7, 8)).await;
    assert_eq!(status, StatusCode::OK, "{next}");
    assert!(next["receipt"].get("observation_failures").is_none());
    assert_eq!(harness.fake.n_inputs(), 2);
}

#[tokio::test]
async fn receipts_compare_the_pointer_with_the_target_and_report_input_focus() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let (status, clicked) = harness.act(&id, "a0", 0, click(21, 34)).await;
    assert_eq!(status, StatusCode::OK, "{clicked}");
    let receipt = &clicked["receipt"];
    assert_eq!(receipt["pointer_target"], json!({"x": 21, "y": 34}));
    assert_eq!(receipt["pointer_on_target"], true);
    let focus = &receipt["focus_after"];
    assert_eq!(focus["focused"], focus["active"]["window_id"]);
    let drag =
        json!({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 50, "y": 60}], "intent": "draw"});
    let (_, dragged) = harness.act(&id, "a1", 1, drag).await;
    assert_eq!(
        dragged["receipt"]["pointer_target"],
        json!({"x": 50, "y": 60})
    );
    let key = json!({"type": "key", "keys": ["escape"], "intent": "cancel"});
    let (_, pressed) = harness.act(&id, "a2", 2, key).await;
    assert!(
        pressed["receipt"].get("pointer_target").is_none(),
        "{pressed}"
    );
    assert!(pressed["receipt"].get("pointer_on_target").is_none());
}
