//! The worker's clipboard on a disposable Xvfb (each test starts its own): a write served to
//! another client and read back verbatim (Unicode, line endings), empty text and an unowned
//! clipboard read as "", the read cap cutting at a character boundary, an `INCR` transfer, an
//! owner that never answers ending at the deadline, and refusals that change nothing.

use std::time::{Duration, Instant};

use desk_contract::clipboard::DEADLINE_MS;
use desk_test_support::Xvfb;
use desk_x11::X11Error;
use desk_x11::clipboard::{read, write};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, PropMode, Property,
    SELECTION_NOTIFY_EVENT, SelectionNotifyEvent, WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

fn atom(conn: &RustConnection, name: &str) -> u32 {
    conn.intern_atom(false, name.as_bytes())
        .unwrap()
        .reply()
        .unwrap()
        .atom
}

fn window(conn: &RustConnection, mask: EventMask) -> u32 {
    let root = conn.setup().roots[0].root;
    let window = conn.generate_id().unwrap();
    conn.create_window(
        0,
        window,
        root,
        0,
        0,
        1,
        1,
        0,
        WindowClass::INPUT_ONLY,
        0,
        &CreateWindowAux::new().event_mask(mask),
    )
    .unwrap();
    conn.flush().unwrap();
    window
}

#[test]
fn a_write_is_served_verbatim_and_read_back() {
    let Some(xvfb) = Xvfb::start(320, 200) else {
        return;
    };
    let display = Some(xvfb.display());
    assert_eq!(
        read(display, 64).unwrap().text,
        "",
        "no owner reads as empty"
    );
    let text = "a\r\nb\rc\n文本🙂 $(touch /tmp/x);'\"`";
    let started = Instant::now();
    let written = write(display, text.to_string()).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(written.byte_length, text.len() as u64);
    let read_back = read(display, 65_536).unwrap();
    assert_eq!(read_back.text, text);
    assert!(!read_back.truncated);
    // Another client reads it the ordinary way: the owner serves UTF8_STRING and TARGETS.
    let conn = xvfb.connect();
    let requestor = window(&conn, EventMask::NO_EVENT);
    let clipboard = atom(&conn, "CLIPBOARD");
    for (target, expected) in [
        ("UTF8_STRING", true),
        ("TARGETS", true),
        ("image/png", false),
    ] {
        let property = atom(&conn, "OTHER");
        conn.convert_selection(requestor, clipboard, atom(&conn, target), property, 0u32)
            .unwrap();
        conn.flush().unwrap();
        let notify = loop {
            if let Event::SelectionNotify(notify) = conn.wait_for_event().unwrap() {
                break notify;
            }
        };
        assert_eq!(notify.property != x11rb::NONE, expected, "{target}");
        if target == "UTF8_STRING" {
            let value = conn
                .get_property(true, requestor, property, AtomEnum::ANY, 0, 1 << 20)
                .unwrap()
                .reply()
                .unwrap()
                .value;
            assert_eq!(value, text.as_bytes());
        }
    }
    // A cap cuts at a character boundary: "文" is 3 bytes from byte 7.
    let cut = read(display, 9).unwrap();
    assert_eq!(cut.text, "a\r\nb\rc\n");
    assert_eq!(cut.byte_length, text.len() as u64);
    assert!(cut.truncated);
    // A second write replaces the first owner; empty text reads back empty.
    write(display, String::new()).unwrap();
    let empty = read(display, 10).unwrap();
    assert_eq!((empty.text.as_str(), empty.byte_length), ("", 0));
}

#[test]
fn large_text_is_served_and_capped_and_refusals_change_nothing() {
    let Some(xvfb) = Xvfb::start(320, 200) else {
        return;
    };
    let display = Some(xvfb.display());
    let big = "é".repeat(1024 * 1024); // 2 MiB
    write(display, big.clone()).unwrap();
    let read_back = read(display, 1024 * 1024).unwrap();
    assert_eq!(read_back.byte_length, big.len() as u64);
    assert_eq!(read_back.text.len(), 1024 * 1024);
    assert!(read_back.truncated);
    for refused in ["a\0b".to_string(), "x".repeat(16 * 1024 * 1024 + 1)] {
        let error = write(display, refused).unwrap_err();
        assert!(matches!(error, X11Error::InvalidRequest(_)), "{error}");
    }
    for cap in [0, 1024 * 1024 + 1] {
        assert!(matches!(
            read(display, cap),
            Err(X11Error::InvalidRequest(_))
        ));
    }
    assert_eq!(
        read(display, 4).unwrap().byte_length,
        big.len() as u64,
        "unchanged"
    );
}

#[test]
fn an_incremental_transfer_is_read_whole() {
    let Some(xvfb) = Xvfb::start(320, 200) else {
        return;
    };
    let display = xvfb.display().to_string();
    let conn = xvfb.connect();
    let owner = window(&conn, EventMask::PROPERTY_CHANGE);
    let (clipboard, incr, utf8) = (
        atom(&conn, "CLIPBOARD"),
        atom(&conn, "INCR"),
        atom(&conn, "UTF8_STRING"),
    );
    conn.set_selection_owner(owner, clipboard, 0u32).unwrap();
    conn.flush().unwrap();
    let reader = std::thread::spawn(move || read(Some(&display), 1024 * 1024));
    let text: String = (0..30_000).map(|n| format!("{n:05} ")).collect();
    // Serve one request by INCR in 64 KiB chunks, then an empty one.
    let request = loop {
        if let Event::SelectionRequest(request) = conn.wait_for_event().unwrap() {
            break request;
        }
    };
    assert_eq!(request.target, utf8);
    conn.change_window_attributes(
        request.requestor,
        &x11rb::protocol::xproto::ChangeWindowAttributesAux::new()
            .event_mask(EventMask::PROPERTY_CHANGE),
    )
    .unwrap();
    conn.change_property32(
        PropMode::REPLACE,
        request.requestor,
        request.property,
        incr,
        &[u32::try_from(text.len()).unwrap()],
    )
    .unwrap();
    let notify = SelectionNotifyEvent {
        response_type: SELECTION_NOTIFY_EVENT,
        sequence: 0,
        time: request.time,
        requestor: request.requestor,
        selection: clipboard,
        target: utf8,
        property: request.property,
    };
    conn.send_event(false, request.requestor, EventMask::NO_EVENT, notify)
        .unwrap();
    conn.flush().unwrap();
    let mut chunks = text.as_bytes().chunks(64 * 1024).map(<[u8]>::to_vec);
    let mut finished = false;
    while !finished {
        let Event::PropertyNotify(notify) = conn.wait_for_event().unwrap() else {
            continue;
        };
        if notify.window != request.requestor
            || notify.atom != request.property
            || notify.state != Property::DELETE
        {
            continue;
        }
        let chunk = chunks.next().unwrap_or_default();
        finished = chunk.is_empty();
        conn.change_property8(
            PropMode::REPLACE,
            request.requestor,
            request.property,
            utf8,
            &chunk,
        )
        .unwrap();
        conn.flush().unwrap();
    }
    let read_back = reader.join().unwrap().unwrap();
    assert_eq!(read_back.byte_length, text.len() as u64);
    assert_eq!(read_back.text, text);
}

#[test]
fn an_owner_that_never_answers_ends_at_the_deadline() {
    let Some(xvfb) = Xvfb::start(320, 200) else {
        return;
    };
    let conn = xvfb.connect();
    let owner = window(&conn, EventMask::NO_EVENT);
    conn.set_selection_owner(owner, atom(&conn, "CLIPBOARD"), 0u32)
        .unwrap();
    conn.flush().unwrap();
    let started = Instant::now();
    let error = read(Some(xvfb.display()), 100).unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(error, X11Error::ClipboardUnavailable(_)),
        "{error}"
    );
    let deadline = Duration::from_millis(DEADLINE_MS);
    assert!(
        waited >= deadline && waited < deadline + Duration::from_millis(500),
        "{waited:?}"
    );
}
