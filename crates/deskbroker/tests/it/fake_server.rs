//! `deskbroker serve --backend fake`: the real binary serving the whole HTTP API over fake
//! desktops (no Xvfb), driven over its Unix socket as a harness in any language would.

use std::process::Command;

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::api::{LeaseRequest, ResetRequest, SaveMethod, SessionState};
use serde_json::{Value, json};

use crate::probe::act;
use crate::support::{FakeServer, deskbroker};

fn code(error: ClientError) -> ErrorCode {
    error.api_body().expect("an API error").code
}

fn ndjson(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn serve_help_teaches_the_fake_backend() {
    let output = Command::new(deskbroker())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(help.contains("--backend"), "{help}");
    assert!(help.contains("fake"), "{help}");
}

#[tokio::test]
async fn fake_backend_serves_the_whole_lifecycle() {
    let root = tempfile::tempdir().unwrap();
    let server = FakeServer::start(root.path(), &["--display", "640x480"]);
    let client = Client::new(server.socket.clone());

    let lease = client
        .lease(&LeaseRequest {
            task_id: "fake".into(),
            attempt_id: "a1".into(),
            profile: None,
        })
        .await
        .unwrap();
    let session = lease.session_id.clone();
    let early = act(
        &client,
        &session,
        "early",
        0,
        json!({"type": "wait", "milliseconds": 1, "intent": "before reset"}),
    )
    .await;
    assert_eq!(code(early.unwrap_err()), ErrorCode::InvalidState);

    let reset = client
        .reset(
            &session,
            &ResetRequest {
                request_id: "r1".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(reset.state, SessionState::Ready);
    assert!(reset.window.maximized);
    assert!(reset.screenshot.app_maximized);
    assert_eq!(
        (reset.screenshot.width, reset.screenshot.height),
        (640, 480)
    );
    let png = desk_contract::b64::decode(&reset.screenshot.png_base64).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let info = decoder.read_info().unwrap().info().clone();
    assert_eq!((info.width, info.height), (640, 480));

    // Validation: out of bounds and a refused chord change nothing.
    let outside = act(
        &client,
        &session,
        "x",
        0,
        json!({"type": "click", "x": 640, "y": 10, "intent": "outside"}),
    )
    .await;
    assert_eq!(code(outside.unwrap_err()), ErrorCode::InvalidAction);
    let chord = act(
        &client,
        &session,
        "y",
        0,
        json!({"type": "key", "keys": ["alt", "f4"], "intent": "close"}),
    )
    .await;
    assert_eq!(code(chord.unwrap_err()), ErrorCode::InvalidAction);

    let click = json!({"type": "click", "x": 100, "y": 200, "intent": "focus the drawing"});
    let first = act(&client, &session, "a0", 0, click.clone())
        .await
        .unwrap();
    assert!(!first.idempotent_replay);
    assert_eq!(first.receipt.delivery.as_str(), "input_injected");
    assert!(first.screenshot.as_ref().unwrap().sequence > reset.screenshot.sequence);
    assert_ne!(
        first.screenshot.as_ref().unwrap().sha256,
        reset.screenshot.sha256,
        "frames are synthetic per action"
    );
    // Exactly once: the identical retry replays, anything else conflicts.
    let replay = act(&client, &session, "a0", 0, click.clone())
        .await
        .unwrap();
    assert!(replay.idempotent_replay);
    assert_eq!(
        replay.screenshot.as_ref().unwrap().sha256,
        first.screenshot.as_ref().unwrap().sha256
    );
    let conflict = act(
        &client,
        &session,
        "a0",
        0,
        json!({"type": "click", "x": 1, "y": 2, "intent": "other"}),
    )
    .await;
    assert_eq!(
        code(conflict.unwrap_err()),
        ErrorCode::ActionSequenceConflict
    );
    let skipped = act(&client, &session, "a5", 5, click.clone()).await;
    assert_eq!(
        code(skipped.unwrap_err()),
        ErrorCode::ActionSequenceConflict
    );
    act(
        &client,
        &session,
        "a1",
        1,
        json!({"type": "type", "text": "L", "intent": "line tool"}),
    )
    .await
    .unwrap();

    // Checkpoint before retrieval.
    assert_eq!(
        code(client.artifact(&session).await.unwrap_err()),
        ErrorCode::CheckpointRequired
    );
    let checkpoint = client.checkpoint(&session).await.unwrap();
    assert_eq!(checkpoint.method, SaveMethod::ControllerSave);
    assert_ne!(checkpoint.sha256, checkpoint.reset_sha256);
    let artifact = client.artifact(&session).await.unwrap();
    assert_eq!(artifact.filename, "attempt.dxf");
    assert_eq!(artifact.sha256, checkpoint.sha256);
    let bytes = desk_contract::b64::decode(&artifact.bytes_base64).unwrap();
    assert_eq!(bytes, desk_desktop::fake_dxf::fixture_dxf(3).into_bytes());
    let saved = root.path().join("candidate.dxf");
    std::fs::write(&saved, &bytes).unwrap();
    let drawing = desk_cad::read_dxf(&saved).unwrap();
    assert_eq!(drawing.model.entities.len(), 4, "{:?}", drawing.notes);
    assert!(drawing.forbidden.is_empty());

    // Both logs: the click and the typed key, each row marked as the contract asks.
    let events = ndjson(&client.events(&session).await.unwrap());
    let agent_rows: Vec<_> = events
        .iter()
        .filter(|row| row["provenance"] == "broker_action")
        .collect();
    assert!(
        agent_rows
            .iter()
            .any(|row| row["type"] == "click" && row["x"] == 100 && row["actionIndex"] == 0)
    );
    assert!(
        agent_rows
            .iter()
            .any(|row| row["type"] == "key" && row["key"] == "L" && row["actionIndex"] == 1)
    );
    assert!(events.iter().all(|row| row["sourcePid"] == -1));
    let frames = ndjson(&client.frame_events(&session).await.unwrap());
    assert!(
        frames
            .iter()
            .any(|row| row["frame"] == first.screenshot.as_ref().unwrap().sequence)
    );

    let released = client.release(&session).await.unwrap();
    assert_eq!(released.state, SessionState::Released);
    client.release(&session).await.unwrap();
}
