//! Capture, settle and facts on a real display.

use desk_contract::settle::SettleOutcome;
use desk_contract::validate::InputAction;
use desk_test_support::PROBE_RGB;

use crate::desk::{desk, point};

fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    (info.width, info.height, buffer)
}

#[test]
fn capture_shows_probe_color_at_display_size() {
    let Some(mut desk) = desk(1280, 800) else {
        return;
    };
    let hello = desk.session.hello();
    assert_eq!(hello.capture_path, "mit-shm");
    assert_eq!((hello.display.width, hello.display.height), (1280, 800));
    let frame = desk.session.capture().unwrap();
    assert_eq!((frame.width, frame.height), (1280, 800));
    assert_eq!(frame.sha256, desk_x11::sha256_hex(&frame.png));
    assert!(frame.app_maximized);
    let (width, height, rgb) = decode(&frame.png);
    assert_eq!((width, height), (1280, 800));
    // The maximized client covers everything below openbox's title bar.
    for (x, y) in [(640, 400), (10, 100), (1270, 790), (900, 200)] {
        let offset = (y * 1280 + x) * 3;
        assert_eq!(
            (rgb[offset], rgb[offset + 1], rgb[offset + 2]),
            PROBE_RGB,
            "pixel ({x}, {y})"
        );
    }
}

#[test]
fn settle_is_stable_on_static_screen() {
    let Some(mut desk) = desk(800, 600) else {
        return;
    };
    let (outcome, _) = desk.run(InputAction::Move {
        to: point(20, 300),
        duration_ms: 0,
    });
    assert_eq!(outcome.settle.outcome, SettleOutcome::Stable);
    assert!(outcome.settle.post_action_visual_stable);
    // Nothing runs on the display (the probe is a thread of this test, not watched): the
    // idle rule decides, well before the 400 ms of the quiet-time rule (dated or not: a thread
    // of the window manager may have begun its call before the first sample).
    assert!(outcome.settle.rule.is_app_idle(), "{:?}", outcome.settle);
    println!("static screen settled after {} ms", outcome.settle.wait_ms);
    assert_eq!(outcome.settle.changed_pixels, 0);
    assert!(outcome.settle.n_samples >= 1);
}

#[test]
fn settled_frame_is_the_exact_screen_after_settling() {
    let Some(mut desk) = desk(800, 600) else {
        return;
    };
    // On a static screen the PNG is encoded during the quiet wait; it must still be exactly the
    // screen's pixels: identical to encoding a fresh capture (PNG encoding is deterministic).
    let (outcome, _) = desk.run(InputAction::Move {
        to: point(40, 200),
        duration_ms: 0,
    });
    let fresh = desk.session.capture().unwrap();
    let frame = outcome.frame.expect("a frame");
    // Its SHA-256, taken from the encode, is the digest of exactly its bytes.
    assert_eq!(frame.sha256, desk_x11::sha256_hex(&frame.png));
    assert_eq!(frame.sha256, fresh.sha256);
    assert_eq!(frame.png, fresh.png);
}

#[test]
fn done_skips_settle_and_sends_nothing() {
    let Some(mut desk) = desk(800, 600) else {
        return;
    };
    let (outcome, events) = desk.run(InputAction::Done);
    assert_eq!(outcome.settle.outcome, SettleOutcome::Skipped);
    assert!(outcome.events.is_empty());
    assert!(events.is_empty());
    let frame = outcome.frame.expect("a frame");
    assert_eq!((frame.width, frame.height), (800, 600));
}

#[test]
fn release_held_releases_what_is_down() {
    let Some(mut desk) = desk(800, 600) else {
        return;
    };
    // Hold Shift and the left button behind the worker's back, through XTEST on another client.
    let conn = desk.xvfb.connect();
    use x11rb::connection::Connection;
    use x11rb::protocol::xtest::ConnectionExt as _;
    use x11rb::wrapper::ConnectionExt as _;
    let root = conn.setup().roots[0].root;
    let shift_keycode = desk_x11::Keymap::load(&conn)
        .unwrap()
        .lookup(desk_x11::XK_SHIFT_L)
        .unwrap()
        .keycode;
    conn.xtest_fake_input(2, shift_keycode, 0, root, 0, 0, 0)
        .unwrap();
    conn.xtest_fake_input(4, 1, 0, root, 0, 0, 0).unwrap();
    conn.sync().unwrap();
    let mut held = desk.session.facts().unwrap().held;
    held.sort();
    assert_eq!(held, ["mouse_left", "shift"]);
    let mut released = desk.session.release_held().unwrap();
    released.sort();
    assert_eq!(released, ["mouse_left", "shift"]);
    desk.assert_nothing_held();
}

#[test]
fn capture_encode_benchmark_1080p() {
    let Some(desk) = desk(1920, 1080) else { return };
    let stats = desk_x11::bench_capture(Some(desk.xvfb.display()), 30).unwrap();
    println!(
        "capture+encode 1920x1080 via {}: median {:?} (capture {:?}, encode {:?}), p95 {:?}, {} bytes",
        stats.capture_path,
        stats.total_median,
        stats.capture_median,
        stats.encode_median,
        stats.total_p95,
        stats.png_bytes
    );
    assert_eq!(stats.capture_path, "mit-shm");
    // Generous bound for debug builds on a busy 2-core machine; release is measured separately.
    assert!(stats.total_median < std::time::Duration::from_millis(250));
}

/// Paints rows `y0..y0 + rows` of the root window with noisy, UI-like pixels.
fn paint_rows(display: &str, width: u16, y0: u16, rows: u16, seed: u32) {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{ConnectionExt as _, CreateGCAux, ImageFormat};
    let (conn, screen_idx) = x11rb::connect(Some(display)).unwrap();
    let root = conn.setup().roots[screen_idx].root;
    let gc = conn.generate_id().unwrap();
    conn.create_gc(gc, root, &CreateGCAux::new()).unwrap();
    let mut state = seed | 1;
    let mut data = Vec::new();
    for y in 0..u32::from(rows) {
        for x in 0..u32::from(width) {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let flat = (x / 40 + y / 9) % 3 != 0;
            let value = if flat {
                (x / 40) as u8
            } else {
                (state >> 24) as u8
            };
            data.extend_from_slice(&[value, value / 2, 0xff - value, 0]);
        }
    }
    conn.put_image(
        ImageFormat::Z_PIXMAP,
        root,
        gc,
        width,
        rows,
        0,
        y0 as i16,
        0,
        24,
        &data,
    )
    .unwrap();
    conn.get_input_focus().unwrap().reply().unwrap();
    // The root keeps the painting while no one repaints it.
    std::mem::forget(conn);
}

#[test]
fn capture_in_two_parts_is_the_screen_byte_for_byte() {
    // `capture` copies the screen in two requests and encodes while the second is copied
    // (incrementally, against the last frame); its PNG must be byte-identical to a cold encode
    // of a raw capture of the same screen, before and after a change in either part.
    let Some(xvfb) = desk_test_support::Xvfb::start(1000, 700) else {
        return;
    };
    let mut session = desk_x11::X11Session::connect(Some(xvfb.display())).unwrap();
    paint_rows(xvfb.display(), 1000, 0, 700, 7);
    for (y0, rows, seed) in [(0, 0, 0), (3, 20, 11), (650, 50, 12), (100, 500, 13)] {
        if rows > 0 {
            paint_rows(xvfb.display(), 1000, y0, rows, seed);
        }
        let frame = session.capture().unwrap();
        let raw = session.capture_raw().unwrap();
        assert!(
            frame.png == raw.encode_png().unwrap(),
            "after painting rows {y0}+{rows}"
        );
        let (width, height, rgb) = decode(&frame.png);
        assert_eq!((width, height), (1000, 700));
        assert!(rgb == raw.to_rgb());
    }
    // No failure fell back to the core path on the way.
    assert_eq!(session.hello().capture_path, "mit-shm");
}
