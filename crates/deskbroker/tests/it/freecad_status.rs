//! FreeCAD's timed status-bar messages stay until the app replaces them in the pinned `freecad`
//! profile (docs/settle.md, "Per-profile tuning"): a message that FreeCAD 0.20 would clear on a
//! timer seconds after the action that showed it (after that action's settle) is still on the
//! screen, pixel for pixel, once the timer has run out. Both of FreeCAD's ways are covered: the
//! start's Addon Manager warning (`MainWindow::showStatus`: the status bar's own 5 s timer and
//! the orange colour's; it shows around the handoff, so the test looks for it first), and TechDraw's "Selected: attempt.Annotation." after a click on an
//! annotation (`MainWindow::showMessage(text, 3000)`: the action label's timer). Without the
//! profile's pinning both bands change after the wait (checked by hand with the previous profile
//! in the broker's profile directory).

use desk_client::Client;
use desk_contract::api::ActionResponse;
use serde_json::{Value, json};

use crate::freecad::freecad_available;
use crate::probe::act;
use crate::support::{Broker, lease_and_reset, png_pixels, xvfb_available};

/// Rows of the status bar at the bottom of the pinned 1280x800 test desktop.
const STATUS_BAND: std::ops::Range<usize> = 776..800;

/// The status bar's rows of a screenshot, as raw pixels.
fn status_band(png_base64: &str) -> Vec<u8> {
    let (pixels, row, _) = png_pixels(png_base64);
    pixels[STATUS_BAND.start * row..STATUS_BAND.end * row].to_vec()
}

/// Pixels of the band left of `max_x` for which `hit` holds (RGB).
fn count_in_band(png_base64: &str, max_x: usize, hit: impl Fn(u8, u8, u8) -> bool) -> usize {
    let (pixels, row, channels) = png_pixels(png_base64);
    STATUS_BAND
        .flat_map(|y| (0..max_x).map(move |x| y * row + x * channels))
        .filter(|&at| hit(pixels[at], pixels[at + 1], pixels[at + 2]))
        .count()
}

fn png(response: &ActionResponse) -> &str {
    &response
        .screenshot
        .as_ref()
        .expect("a settled screenshot")
        .png_base64
}

/// The session's next action (`index`, then one more).
async fn step(client: &Client, session: &str, index: &mut u64, action: Value) -> ActionResponse {
    let at = *index;
    *index += 1;
    act(client, session, &format!("status-{at}"), at, action)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn freecad_status_bar_messages_outlast_their_timers() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let client = broker.client();
    let (session, reset) =
        lease_and_reset(&client, "freecad-status", "freecad-status-1", "freecad").await;
    let session = session.as_str();
    let mut index = 0u64;

    // The start's warning (orange, #ffaa00): FreeCAD shows it before the handoff or, on some
    // starts, up to a few seconds after it (measured on oracle rollouts). Looked for every
    // half second, up to 8 s; then its 5 s timers run out within 5.5 s.
    let orange = |png: &str| {
        count_in_band(png, 1000, |r, g, b| {
            r > 200 && (120..200).contains(&g) && b < 80
        })
    };
    let mut shown = reset.screenshot.png_base64.clone();
    for _ in 0..16 {
        if orange(&shown) > 200 {
            break;
        }
        let look = json!({"type": "wait", "milliseconds": 500, "intent": "look for the warning"});
        shown = png(&step(&client, session, &mut index, look).await).to_string();
    }
    assert!(
        orange(&shown) > 200,
        "FreeCAD's start warning did not show on the status bar within 8 s of the handoff"
    );
    let wait = json!({"type": "wait", "milliseconds": 5500, "intent": "past 5 s"});
    let waited = step(&client, session, &mut index, wait).await;
    assert!(
        status_band(png(&waited)) == status_band(&shown),
        "the start's warning changed after its 5 s timer"
    );

    // TechDraw: a default page, an annotation at its centre, and a click on it.
    let steps = [
        json!({"type": "click", "x": 580, "y": 58, "intent": "open the workbench list"}),
        json!({"type": "wait", "milliseconds": 300, "intent": "let the list open"}),
        json!({"type": "type", "text": "TechDraw", "intent": "find the TechDraw workbench"}),
        json!({"type": "key", "keys": ["return"], "intent": "switch to TechDraw"}),
        json!({"type": "wait", "milliseconds": 1500, "intent": "let the workbench load"}),
        json!({"type": "click", "x": 28, "y": 136, "intent": "Insert Default Page"}),
        json!({"type": "wait", "milliseconds": 2000, "intent": "let the page open"}),
        json!({"type": "click", "x": 198, "y": 28, "intent": "open the TechDraw menu"}),
        json!({"type": "wait", "milliseconds": 300, "intent": "let the menu open"}),
        json!({"type": "click", "x": 297, "y": 646, "intent": "Annotations"}),
        json!({"type": "wait", "milliseconds": 300, "intent": "let the submenu open"}),
        json!({"type": "click", "x": 639, "y": 646, "intent": "Insert Annotation"}),
        json!({"type": "wait", "milliseconds": 1000, "intent": "let the annotation draw"}),
    ];
    let mut before = None;
    for action in steps {
        before = Some(step(&client, session, &mut index, action).await);
    }
    let before = before.unwrap();
    let select = json!({"type": "click", "x": 767, "y": 456, "intent": "select the annotation"});
    let selected = step(&client, session, &mut index, select).await;
    let dark = count_in_band(png(&selected), 400, |r, g, b| r < 100 && g < 100 && b < 100);
    assert!(
        dark > 100 && status_band(png(&selected)) != status_band(png(&before)),
        "no selection message on the status bar after the click ({dark} dark px)"
    );
    let wait = json!({"type": "wait", "milliseconds": 4000, "intent": "past 3 s"});
    let later = step(&client, session, &mut index, wait).await;
    assert!(
        status_band(png(&later)) == status_band(png(&selected)),
        "the selection message changed after its 3 s timer"
    );
    client.release(session).await.unwrap();
}
