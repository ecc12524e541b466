//! `await_app`: finding and maximizing the app window (covering the work area), overlays,
//! timeouts, a screen that never settles.

use desk_contract::desktop::OverlayRule;
use desk_contract::settle::SettlePolicy;
use desk_test_support::{ProbeOptions, spawn_probe};
use desk_x11::X11Session;

use crate::desk::{desk, desk_with, probe_rules};

#[test]
fn await_app_finds_probe_by_pid_and_maximizes_it() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    let handoff = &desk.handoff;
    assert_eq!(handoff.window.pid, Some(std::process::id()));
    assert_eq!(handoff.window.class, "deskprobe");
    assert_eq!(handoff.window.title, "deskbroker probe");
    assert!(handoff.window.maximized);
    assert!(handoff.window.is_app);
    assert_eq!(handoff.window.rect.width, 1280);
    assert!(handoff.frame.app_maximized);
    assert!(handoff.settle.post_action_visual_stable);
    // The settle at the handoff samples a static screen for its quiet time, so the frame is
    // the one encoded (and hashed) during that wait: its digest is of exactly its bytes, and
    // those are the screen's.
    assert_eq!(
        handoff.frame.sha256,
        desk_x11::sha256_hex(&handoff.frame.png)
    );
    assert_eq!(handoff.frame.png, desk.session.capture().unwrap().png);
    let facts = desk.session.facts().unwrap();
    assert_eq!(
        facts.app_window.unwrap().window_id,
        handoff.window.window_id
    );
    let active = facts.focus.active.unwrap();
    assert_eq!(active.window_id, handoff.window.window_id);
    assert!(active.is_app);
}

#[test]
fn await_app_dismisses_overlay_first() {
    let mut rules = probe_rules();
    rules.overlays = vec![OverlayRule {
        title_contains: "Tip of the Day".to_string(),
        dismiss_keys: vec!["escape".to_string()],
    }];
    let Some(desk) = desk_with(1024, 768, rules, |xvfb| {
        let options = ProbeOptions {
            title: "Tip of the Day".to_string(),
            close_on_keysym: Some(0xff1b),
            size: (200, 100),
            ..ProbeOptions::default()
        };
        spawn_probe(xvfb.display(), &std::env::temp_dir(), options);
        std::thread::sleep(std::time::Duration::from_millis(300));
    }) else {
        return;
    };
    assert_eq!(desk.handoff.dismissed_overlays, ["Tip of the Day"]);
    assert!(desk.handoff.window.maximized);
}

#[test]
fn await_app_times_out_for_unknown_pid() {
    let Some(xvfb) = desk_test_support::Xvfb::start(640, 480) else {
        return;
    };
    let _openbox = xvfb.start_openbox();
    let mut session = X11Session::connect(Some(xvfb.display())).unwrap();
    let mut rules = probe_rules();
    rules.timeout_ms = 300;
    let error = session
        .await_app(1, &rules, &SettlePolicy::default())
        .unwrap_err();
    assert!(
        matches!(error, desk_x11::X11Error::AppWindowNotFound(_)),
        "{error}"
    );
    assert_eq!(
        error.to_failure().kind,
        desk_contract::worker::WorkerFailureKind::AppWindowNotFound
    );
}

#[test]
fn await_app_refuses_a_window_that_cannot_cover_the_work_area() {
    let Some(xvfb) = desk_test_support::Xvfb::start(1024, 768) else {
        return;
    };
    let _openbox = xvfb.start_openbox();
    let options = ProbeOptions {
        max_size: Some((600, 400)),
        ..ProbeOptions::default()
    };
    spawn_probe(xvfb.display(), &std::env::temp_dir(), options);
    let mut session = X11Session::connect(Some(xvfb.display())).unwrap();
    let error = session
        .await_app(std::process::id(), &probe_rules(), &SettlePolicy::default())
        .unwrap_err();
    assert!(
        matches!(error, desk_x11::X11Error::AppNotMaximized(ref message) if message.contains("does not cover the work area")),
        "{error}"
    );
    assert_eq!(
        error.to_failure().kind,
        desk_contract::worker::WorkerFailureKind::AppNotMaximized
    );
}

#[test]
fn await_app_refuses_a_screen_that_never_settles_after_retrying() {
    let Some(xvfb) = desk_test_support::Xvfb::start(640, 480) else {
        return;
    };
    let _openbox = xvfb.start_openbox();
    let options = ProbeOptions {
        repaint_ms: Some(40),
        ..ProbeOptions::default()
    };
    spawn_probe(xvfb.display(), &std::env::temp_dir(), options);
    let mut session = X11Session::connect(Some(xvfb.display())).unwrap();
    let policy = SettlePolicy {
        max_ms: 400,
        ..SettlePolicy::default()
    };
    let started = std::time::Instant::now();
    let error = session
        .await_app(std::process::id(), &probe_rules(), &policy)
        .unwrap_err();
    assert!(
        matches!(error, desk_x11::X11Error::HandoffUnstable(_)),
        "{error}"
    );
    assert_eq!(
        error.to_failure().kind,
        desk_contract::worker::WorkerFailureKind::HandoffUnstable
    );
    // Every settle wait ran to its bound before the refusal.
    let bound = u128::from(policy.max_ms) * u128::from(desk_x11::HANDOFF_SETTLE_ATTEMPTS);
    assert!(
        started.elapsed().as_millis() >= bound,
        "{:?}",
        started.elapsed()
    );
    assert!(
        session.app_pid().is_none(),
        "a refused handoff remembers no app"
    );
}
