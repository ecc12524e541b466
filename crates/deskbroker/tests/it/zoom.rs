//! Zoom on a real desktop (issue 13 item 3): a region of a current screenshot comes back as a
//! marked screenshot of its own, enlarged by a whole number, whose pixels are the region's
//! pixels replicated; a click given in the zoom's pixels lands on the mapped screen pixel, and
//! the full screenshot stays usable beside it. Empty, off-image and unknown regions are refused
//! with nothing captured (an oversized one is refused too: see the unit tests of `zoom.rs`).

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;
use desk_contract::control::{PixelRect, ProgramRequest, ZoomRequest};
use serde_json::json;

use crate::probe::{ProbeSession, of_type, wait_for_events};
use crate::support::{png_pixels, xvfb_available};

fn rgb((bytes, line, channels): &(Vec<u8>, usize, usize), x: u32, y: u32) -> [u8; 3] {
    let at = y as usize * line + x as usize * channels;
    [bytes[at], bytes[at + 1], bytes[at + 2]]
}

fn region(id: &str, x: u32, y: u32, width: u32, height: u32) -> ZoomRequest {
    ZoomRequest {
        screenshot_id: id.to_string(),
        x,
        y,
        width,
        height,
    }
}

async fn refused(client: &Client, session: &str, request: ZoomRequest, code: ErrorCode) {
    match client.zoom(session, &request).await {
        Err(ClientError::Api(body)) => assert_eq!(body.code, code, "{request:?}: {body:?}"),
        Err(other) => panic!("{request:?}: expected {code:?}, got {other:?}"),
        Ok(shot) => panic!("{request:?}: expected {code:?}, got zoom {:?}", shot.zoom),
    }
}

async fn click(client: &Client, session: &str, index: u64, shot: &str, x: u32, y: u32) {
    let request = ProgramRequest {
        request_id: format!("click-{index}"),
        expected_action_index: index,
        control: None,
        screenshot_id: Some(shot.to_string()),
        steps: serde_json::from_value(
            json!([{"type": "click", "x": x, "y": y, "intent": "a click in image pixels"}]),
        )
        .unwrap(),
    };
    let answer = client.program(session, &request).await.unwrap();
    assert_eq!(answer.receipt.submitted, 1, "{:?}", answer.receipt);
    // The program's final observation is its last step's: the settle wait at least, within
    // the whole program's time.
    let receipt = &answer.receipt;
    let last = receipt.steps.last().expect("the step's receipt");
    assert_eq!(receipt.observation_elapsed_ms, last.observation_elapsed_ms);
    assert!(
        last.observation_elapsed_ms + 1 >= last.settle.wait_ms
            && receipt.observation_elapsed_ms <= receipt.total_ms,
        "{receipt:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_zoom_is_a_marked_enlarged_region_whose_pixels_map_onto_it() {
    if !xvfb_available() {
        return;
    }
    let probe = ProbeSession::start("zoom").await;
    let capabilities = probe.client.capabilities().await.unwrap();
    assert!(
        capabilities
            .features
            .iter()
            .any(|feature| feature.feature == "zoom" && feature.supported),
        "{capabilities:?}"
    );
    let full = probe.client.screenshot(&probe.session).await.unwrap();
    let full_id = full.screenshot_id.clone().unwrap();
    let width = full.width;

    // Refused before any capture: the sequence does not move.
    let sequence = full.sequence;
    refused(
        &probe.client,
        &probe.session,
        region(&full_id, 10, 10, 0, 5),
        ErrorCode::InvalidParams,
    )
    .await;
    refused(
        &probe.client,
        &probe.session,
        region(&full_id, width - 10, 10, 20, 5),
        ErrorCode::PointOutsideImage,
    )
    .await;
    refused(
        &probe.client,
        &probe.session,
        region("shot_000000000000000000000000", 10, 10, 5, 5),
        ErrorCode::ScreenshotUnknown,
    )
    .await;

    let zoom = probe
        .client
        .zoom(&probe.session, &region(&full_id, 100, 100, 50, 40))
        .await
        .unwrap();
    assert_eq!(zoom.sequence, sequence + 1, "refusals captured nothing");
    let info = zoom.zoom.clone().expect("a zoom is marked");
    assert_eq!(info.source_screenshot_id, full_id);
    assert_eq!(info.scale, 8, "50 px long edge: the largest scale, 8");
    assert_eq!((zoom.width, zoom.height), (400, 320));
    assert_eq!(
        zoom.image_global_bounds,
        Some(PixelRect {
            x: 100,
            y: 100,
            width: 50,
            height: 40
        })
    );
    assert_eq!(
        zoom.image_content_rect,
        Some(PixelRect {
            x: 0,
            y: 0,
            width: 400,
            height: 320
        })
    );
    // Every zoom pixel is its screen pixel (the probe's screen does not change meanwhile).
    let (full_pixels, zoom_pixels) = (png_pixels(&full.png_base64), png_pixels(&zoom.png_base64));
    for y in (0..320).step_by(7) {
        for x in (0..400).step_by(7) {
            assert_eq!(
                rgb(&zoom_pixels, x, y),
                rgb(&full_pixels, 100 + x / 8, 100 + y / 8),
                "zoom pixel ({x}, {y})"
            );
        }
    }

    // A click in the zoom's pixels lands on the mapped screen pixel; then one in the full
    // screenshot's pixels still does (both images are current).
    let zoom_id = zoom.screenshot_id.clone().unwrap();
    click(&probe.client, &probe.session, 0, &zoom_id, 200, 160).await;
    click(&probe.client, &probe.session, 1, &full_id, 300, 200).await;
    let events = wait_for_events(&probe.log, 4);
    let presses: Vec<(i64, i64)> = of_type(&events, "button_press")
        .iter()
        .map(|event| {
            (
                event["root_x"].as_i64().unwrap(),
                event["root_y"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(presses, vec![(125, 120), (300, 200)]);
    // The zoom's `screenshot` record names its own frame's digest (taken once, for the answer
    // and the record): the bundle verifies every frame file against its record.
    let key = probe.broker.state_dir.join("evidence").join("evidence.pub");
    let bundle = probe.root.path().join("zoom-bundle");
    crate::evidence::export(&probe.broker.state_dir, &probe.session, &bundle);
    let (ok, output) = crate::evidence::verify(&bundle, &key);
    assert!(ok, "zoom bundle: {output}");
    let frames = bundle.join(desk_evidence::bundle::FRAMES_DIR);
    let frame = std::fs::read(frames.join(format!("{}.png", zoom.sequence)));
    assert_eq!(desk_evidence::sha256_hex(&frame.unwrap()), zoom.sha256);
    probe.client.release(&probe.session).await.unwrap();
}
