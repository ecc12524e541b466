//! Checkpoints that prove the edit: a stale save is saved again, an invalid artifact is refused.

use std::path::PathBuf;
use std::time::Duration;

use axum::http::StatusCode;
use desk_desktop::AppProfile;
use desk_desktop::fake::FakeSave;
use serde_json::json;

use crate::support::{Harness, click};

const DXF_PROFILE: &str = r#"
name = "fakedxf"
command = ["fake-app", "{attempt}"]
save_keys = ["ctrl", "s"]
save_timeout_ms = 300
[attempt]
filename = "attempt.dxf"
template = "initial\n"
format = "dxf"
[window]
maximize = true
"#;

fn attempt(harness: &Harness, id: &str, name: &str) -> PathBuf {
    harness
        .dir
        .path()
        .join("sessions")
        .join(id)
        .join("workspace/attempt")
        .join(name)
}

#[tokio::test]
async fn a_save_older_than_the_last_input_is_saved_again() {
    let harness = Harness::new();
    let id = harness.ready().await;
    let save = json!({"type": "key", "keys": ["ctrl", "s"], "intent": "save"});
    let (status, body) = harness.act(&id, "a0", 0, save).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(harness.fake.n_saves(), 1);
    // The agent keeps editing after its save: the saved file no longer proves the last edit.
    std::thread::sleep(Duration::from_millis(150));
    let (status, body) = harness.act(&id, "a1", 1, click(10, 10)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    harness.fake.set_foreign_window_in_front(true);
    let (status, refused) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["code"], "checkpoint_failed");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("before the last input"),
        "{refused}"
    );
    assert_eq!((harness.fake.n_saves(), harness.fake.n_inputs()), (1, 2));

    harness.fake.set_foreign_window_in_front(false);
    let (status, checkpoint) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{checkpoint}");
    assert_eq!(checkpoint["method"], "controller_save");
    assert_eq!(harness.fake.n_saves(), 2);
    let saved = std::fs::read_to_string(attempt(&harness, &id, "attempt.txt")).unwrap();
    assert!(saved.contains("saved by fake desktop 2"), "{saved}");
    // Nothing new since: the same checkpoint again, no third save.
    let (status, again) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, checkpoint);
    assert_eq!(harness.fake.n_saves(), 2);
}

#[tokio::test]
async fn a_dxf_that_does_not_parse_is_refused_and_changes_nothing() {
    let harness = Harness::with(|config| {
        config
            .profiles
            .insert(AppProfile::from_toml("fakedxf", DXF_PROFILE).unwrap());
        config.default_profile = "fakedxf".to_string();
    });
    harness.fake.set_save(FakeSave::FixtureDxf);
    let id = harness.ready().await;
    let path = attempt(&harness, &id, "attempt.dxf");
    let fixture = desk_desktop::fake_dxf::fixture_dxf(0);
    std::fs::write(&path, &fixture[..fixture.len() / 2]).unwrap();
    let (status, refused) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["code"], "artifact_invalid");
    assert_eq!(harness.fake.n_inputs(), 0);
    assert!(harness.status(&id).await["checkpoint"].is_null());
    let (status, body) = harness
        .call("GET", &format!("/v1/sessions/{id}/artifact"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("checkpoint_required"))
    );

    // A complete drawing is accepted as saved.
    std::fs::write(&path, &fixture).unwrap();
    let (status, checkpoint) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{checkpoint}");
    assert_eq!(checkpoint["method"], "already_saved");
}

#[tokio::test]
async fn a_controller_save_must_also_produce_a_valid_dxf() {
    let harness = Harness::with(|config| {
        config
            .profiles
            .insert(AppProfile::from_toml("fakedxf", DXF_PROFILE).unwrap());
        config.default_profile = "fakedxf".to_string();
    });
    // The simulated app appends a line to the template: not a DXF.
    harness.fake.set_save(FakeSave::AttemptFromArgv);
    let id = harness.ready().await;
    let (status, refused) = harness
        .call("POST", &format!("/v1/sessions/{id}/checkpoint"), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["code"], "artifact_invalid");
    assert_eq!(harness.fake.n_saves(), 1);
    assert!(harness.status(&id).await["checkpoint"].is_null());
}
