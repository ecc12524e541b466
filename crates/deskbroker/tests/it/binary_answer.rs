//! Binary answers (`Accept: application/vnd.deskbroker.answer+png`) on a real desktop with the
//! probe window, through desk-client's `*_png` methods: a reset (replayed by its request id), a
//! screenshot and a click each carry the raw PNG after their JSON, whose SHA-256 is the
//! screenshot's `sha256` and which decodes to the screenshot's size; a retried click (the
//! journal's replay, which reads the frame file back) answers the same bytes in both forms.

use desk_client::binary::WithPng;
use desk_contract::api::{ActionRequest, ResetRequest, Screenshot};
use serde_json::json;
use sha2::Digest as _;

use crate::probe::ProbeSession;
use crate::support::xvfb_available;

/// Checks a binary answer's PNG bytes: present, hashed as the screenshot says, of its size.
fn checked<T>(answered: &WithPng<T>, shot: &Screenshot) -> Vec<u8> {
    assert!(answered.binary, "the broker answered plain JSON");
    let png = answered.png.as_deref().expect("the answer carries its PNG");
    assert!(shot.png_base64.is_empty(), "base64 in a binary answer");
    assert_eq!(hex::encode(sha2::Sha256::digest(png)), shot.sha256);
    let reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .expect("the bytes are a PNG");
    let info = reader.info();
    assert_eq!((info.width, info.height), (shot.width, shot.height));
    png.to_vec()
}

fn click(request_id: &str) -> ActionRequest {
    ActionRequest {
        request_id: request_id.to_string(),
        expected_action_index: 0,
        screenshot_id: None,
        action: serde_json::from_value(
            json!({"type": "click", "x": 300, "y": 200, "button": "left", "intent": "probe click"}),
        )
        .unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn shot_answers_come_binary_and_replay_binary() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("binary-answer").await;
    let (client, session) = (&probe.client, probe.session.as_str());

    // The reset (done by JSON with `reset-1`), retried: its replay reads the frame file back.
    let reset = client
        .reset_png(
            session,
            &ResetRequest {
                request_id: "reset-1".into(),
            },
        )
        .await
        .unwrap();
    assert!(reset.answer.idempotent_replay);
    checked(&reset, &reset.answer.screenshot);

    let shot = client.screenshot_png(session).await.unwrap();
    let shot_png = checked(&shot, &shot.answer);
    assert_eq!(
        (shot.answer.width, shot.answer.height),
        (
            reset.answer.screenshot.width,
            reset.answer.screenshot.height
        )
    );

    let first = client.act_png(session, &click("click-1")).await.unwrap();
    assert!(!first.answer.idempotent_replay);
    let first_shot = first.answer.screenshot.as_ref().expect("a settled frame");
    let first_png = checked(&first, first_shot);
    assert!(first_shot.sequence > shot.answer.sequence);
    assert!(!shot_png.is_empty());

    // The same request id again: the journal's replay, binary, the same bytes.
    let again = client.act_png(session, &click("click-1")).await.unwrap();
    assert!(again.answer.idempotent_replay);
    let again_shot = again.answer.screenshot.as_ref().expect("the cached frame");
    assert_eq!(checked(&again, again_shot), first_png);
    assert_eq!(again_shot.sequence, first_shot.sequence);

    // And as JSON: the base64 of the same bytes.
    let json = client.act(session, &click("click-1")).await.unwrap();
    assert!(json.idempotent_replay);
    let json_png = desk_contract::b64::decode(&json.screenshot.unwrap().png_base64).unwrap();
    assert_eq!(json_png, first_png);
}
