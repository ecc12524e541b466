//! Fixture self-tests: Xvfb display numbers, openbox management and the probe's event log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use desk_test_support::{ProbeEvent, ProbeOptions, Xvfb, read_probe_log, spawn_probe, typed_text};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _};

#[test]
fn two_servers_get_distinct_displays() {
    let Some(first) = Xvfb::start(320, 200) else {
        return;
    };
    let Some(second) = Xvfb::start(320, 200) else {
        return;
    };
    assert!(first.display().starts_with(':'));
    assert_ne!(first.display(), second.display());
    let conn = second.connect();
    let screen = &conn.setup().roots[0];
    assert_eq!(
        (screen.width_in_pixels, screen.height_in_pixels),
        (320, 200)
    );
}

#[test]
fn probe_is_managed_by_openbox() {
    let Some(xvfb) = Xvfb::start(640, 480) else {
        return;
    };
    let _openbox = xvfb.start_openbox();
    spawn_probe(
        xvfb.display(),
        &std::env::temp_dir(),
        ProbeOptions::default(),
    );
    let conn = xvfb.connect();
    let root = conn.setup().roots[0].root;
    let list = conn
        .intern_atom(false, b"_NET_CLIENT_LIST")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    let started = Instant::now();
    loop {
        let reply = conn
            .get_property(false, root, list, AtomEnum::WINDOW, 0, 64)
            .unwrap()
            .reply()
            .unwrap();
        if reply.value32().is_some_and(|values| values.count() == 1) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "probe never managed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn key(ch: &str) -> ProbeEvent {
    ProbeEvent {
        kind: "key_press".to_string(),
        root_x: 0,
        root_y: 0,
        button: None,
        keysym: None,
        keysym_name: None,
        char: Some(ch.to_string()),
        state: 0,
    }
}

#[test]
fn typed_text_uses_key_press_chars_only() {
    let mut release = key("x");
    release.kind = "key_release".to_string();
    let events = vec![key("a"), release, key("<"), key(" ")];
    assert_eq!(typed_text(&events), "a< ");
}

#[test]
fn probe_log_round_trips() {
    let path = std::env::temp_dir().join(format!("probe-roundtrip-{}.ndjson", std::process::id()));
    let event = key("~");
    std::fs::write(
        &path,
        format!("{}\n", serde_json::to_string(&event).unwrap()),
    )
    .unwrap();
    assert_eq!(read_probe_log(&path), vec![event]);
    std::fs::remove_file(&path).unwrap();
}
