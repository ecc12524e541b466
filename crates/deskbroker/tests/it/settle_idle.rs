//! The idle-aware settle on a real sandboxed desktop (issue 28 item 1, `docs/settle.md`).
//!
//! The probe runs as its own process inside the session's sandbox. With
//! `--paint-after-press-ms 150` its event loop blocks in `ppoll` with the time left as its
//! timeout after each press, then repaints the window in another color: an app with a timer
//! due soon is not idle, so the settled frame must already show the repaint. Without a timer
//! the same click settles by the idle rule, well before the quiet-time rule could. With
//! `--compute-after-press-ms` it computes on the CPU before it repaints, and the quiet-time
//! rule waits for it.

use desk_client::Client;
use desk_contract::settle::SettleOutcome;
use desk_test_support::PROBE_RGB;
use serde_json::json;

use crate::probe::{act, leased_profile, write_probe_profile};
use crate::support::{Broker, png_pixels, xvfb_available};

/// The probe's repaint color (`FLICKER_PIXEL` of desk-test-support's probe).
const REPAINT_RGB: (u8, u8, u8) = (0xcc, 0x66, 0x33);

/// A broker whose `timer` profile runs the probe with `probe_args`, leased and reset.
async fn timer_session(root: &std::path::Path, probe_args: &[&str]) -> (Broker, Client, String) {
    timer_session_with(root, probe_args, &[]).await
}

/// [`timer_session`] with extra `serve` arguments.
async fn timer_session_with(
    root: &std::path::Path,
    probe_args: &[&str],
    serve_args: &[&str],
) -> (Broker, Client, String) {
    let log = root.join("probe.ndjson");
    write_probe_profile(root, "timer", &log, probe_args);
    let broker = Broker::start_with(root, None, &log, serve_args);
    let client = broker.client();
    let session = leased_profile(&broker, "timer", "idle").await;
    (broker, client, session)
}

/// The color at (`x`, `y`) of a response's screenshot.
fn color_at(response: &desk_contract::api::ActionResponse, x: usize, y: usize) -> (u8, u8, u8) {
    let screenshot = response.screenshot.as_ref().expect("a settled screenshot");
    let (pixels, row, channels) = png_pixels(&screenshot.png_base64);
    let at = y * row + x * channels;
    (pixels[at], pixels[at + 1], pixels[at + 2])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timer_due_soon_is_waited_for_and_an_idle_desktop_settles_at_once() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (_broker, client, session) =
        timer_session(root.path(), &["--paint-after-press-ms", "150"]).await;
    let click = json!({"type": "click", "x": 400, "y": 400, "intent": "starts the timer"});
    let response = act(&client, &session, "timer-1", 0, click).await.unwrap();
    let settle = &response.receipt.settle;
    println!("click with a 150 ms repaint timer: {settle:?}");
    assert_eq!(settle.outcome, SettleOutcome::Stable, "{settle:?}");
    assert_eq!(
        color_at(&response, 400, 400),
        REPAINT_RGB,
        "the settled frame shows the timer's repaint: {settle:?}"
    );
    assert!(settle.wait_ms >= 150, "{settle:?}");
    assert!(settle.changed_pixels > 0, "{settle:?}");
    // The observation's host time holds the settle wait (and the capture after it; 1 ms for
    // rounding each to whole milliseconds) and is part of the whole answer's.
    let receipt = &response.receipt;
    assert!(
        receipt.observation_elapsed_ms + 1 >= settle.wait_ms
            && receipt.observation_elapsed_ms <= receipt.total_ms,
        "observation {} ms, settle {} ms, total {} ms",
        receipt.observation_elapsed_ms,
        settle.wait_ms,
        receipt.total_ms
    );
    // The repaint is done and nothing else is scheduled: the next click's own timer repaints
    // in the same color, so the screen does not change and the desktop is idle once it fired.
    let quiet = json!({"type": "move", "x": 420, "y": 420, "intent": "nothing scheduled"});
    let response = act(&client, &session, "timer-2", 1, quiet).await.unwrap();
    let settle = &response.receipt.settle;
    println!("move with nothing scheduled: {settle:?}");
    assert_eq!(settle.outcome, SettleOutcome::Stable, "{settle:?}");
    assert!(settle.rule.is_app_idle(), "{settle:?}");
    assert_eq!(settle.changed_pixels, 0, "{settle:?}");
    assert_eq!(color_at(&response, 400, 400), REPAINT_RGB);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_static_window_settles_by_the_idle_rule() {
    if !xvfb_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (_broker, client, session) = timer_session(root.path(), &[]).await;
    let mut waits = Vec::new();
    for index in 0..5u64 {
        let click = json!({"type": "click", "x": 300 + index * 10, "y": 300, "intent": "static"});
        let response = act(&client, &session, &format!("static-{index}"), index, click)
            .await
            .unwrap();
        let settle = response.receipt.settle.clone();
        assert_eq!(settle.outcome, SettleOutcome::Stable, "{settle:?}");
        assert!(settle.rule.is_app_idle(), "{settle:?}");
        assert_eq!(color_at(&response, 300, 300), PROBE_RGB);
        waits.push(settle.wait_ms);
    }
    // A measurement, not a bound: the quiet-time rule alone would wait at least 250 ms.
    println!("static window, settle waits by the idle rule: {waits:?} ms");
}

#[tokio::test(flavor = "multi_thread")]
async fn validation_mode_sees_a_repaint_past_the_timer_horizon() {
    if !xvfb_available() {
        return;
    }
    // A repaint 600 ms after the press: past the 300 ms horizon, so the idle rule settles
    // before it (the documented limit), and validation mode, looking again 1 s later, reports
    // the change and where it is; the returned frame stays the settled one.
    let root = tempfile::tempdir().unwrap();
    let (_broker, client, session) = timer_session_with(
        root.path(),
        &["--paint-after-press-ms", "600"],
        &["--settle-validate-ms", "1000"],
    )
    .await;
    let click = json!({"type": "click", "x": 400, "y": 400, "intent": "a late repaint"});
    let response = act(&client, &session, "late-1", 0, click).await.unwrap();
    let settle = &response.receipt.settle;
    println!("click with a 600 ms repaint timer, validated: {settle:?}");
    assert_eq!(settle.outcome, SettleOutcome::Stable, "{settle:?}");
    assert_eq!(color_at(&response, 400, 400), PROBE_RGB, "{settle:?}");
    let validation = settle.validation.as_ref().expect("validation mode reports");
    assert!(validation.after_ms >= 1_000, "{validation:?}");
    assert!(validation.changed_pixels > 100_000, "{validation:?}");
    assert!(!validation.same_but_caret(), "{validation:?}");
    let [x, y, width, height] = validation.changed_box.expect("a changed box");
    assert!(
        x <= 400 && y <= 400 && x + width > 400 && y + height > 400,
        "{validation:?}"
    );
    // Without a timer the later frame is the settled one.
    let quiet = json!({"type": "move", "x": 420, "y": 420, "intent": "nothing scheduled"});
    let response = act(&client, &session, "late-2", 1, quiet).await.unwrap();
    let validation = response
        .receipt
        .settle
        .validation
        .clone()
        .expect("validation");
    assert_eq!(validation.changed_pixels, 0, "{validation:?}");
    assert!(validation.same_but_caret());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quiet_screen_while_the_app_computes_is_not_settled() {
    if !xvfb_available() {
        return;
    }
    // After the press the probe computes 700 ms on the CPU, then repaints: a long operation
    // (a boolean of solids) that paints only when it ends. The screen stays quiet past both
    // quiet-time horizons (250 ms after a change, 400 ms without one), so the quiet-time rule
    // alone would hand back the old frame; an app thread that runs holds it.
    let root = tempfile::tempdir().unwrap();
    let (_broker, client, session) =
        timer_session(root.path(), &["--compute-after-press-ms", "700"]).await;
    let click = json!({"type": "click", "x": 400, "y": 400, "intent": "a long operation"});
    let response = act(&client, &session, "compute-1", 0, click).await.unwrap();
    let settle = &response.receipt.settle;
    println!("click with 700 ms of computing before the repaint: {settle:?}");
    assert_eq!(settle.outcome, SettleOutcome::Stable, "{settle:?}");
    assert_eq!(
        color_at(&response, 400, 400),
        REPAINT_RGB,
        "the settled frame shows the repaint after the computation: {settle:?}"
    );
    assert!(settle.wait_ms >= 700, "{settle:?}");
    // Nothing computes after a move: the idle rule settles it.
    let quiet = json!({"type": "move", "x": 420, "y": 420, "intent": "nothing to compute"});
    let response = act(&client, &session, "compute-2", 1, quiet).await.unwrap();
    let settle = &response.receipt.settle;
    assert!(settle.rule.is_app_idle(), "{settle:?}");
}
