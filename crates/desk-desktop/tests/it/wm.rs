//! The pinned window-manager configuration (`wm/openbox.xml`): no click or chord on the desktop
//! opens a menu or switches desktops. Each case first runs against openbox's stock
//! configuration and must have an effect there, so the test fails if the pinned file stops
//! mattering (or stops being passed). And what the pin must not take away: a window still
//! receives every press of a double click and a drag (a Frame-context binding once swallowed
//! them).

use std::time::Duration;

use desk_test_support::{Openbox, ProbeOptions, Xvfb, read_probe_log, spawn_probe};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, MapState, Window};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

const BUTTON_PRESS: u8 = 4;
const BUTTON_RELEASE: u8 = 5;
const KEY_PRESS: u8 = 2;
const KEY_RELEASE: u8 = 3;
const MOTION: u8 = 6;

const CONTROL_L: u32 = 0xffe3;
const ALT_L: u32 = 0xffe9;
const RIGHT: u32 = 0xff53;

/// One gesture on a desktop.
type Gesture = fn(&RustConnection, Window);

/// What the desktop looks like after one gesture.
#[derive(Debug, PartialEq)]
struct Observed {
    viewable_top_level: usize,
    current_desktop: u32,
    desktops: u32,
}

fn observe(conn: &RustConnection, root: Window) -> Observed {
    let children = conn.query_tree(root).unwrap().reply().unwrap().children;
    let viewable_top_level = children
        .iter()
        .filter(|&&w| {
            // The fixture's 10x10 scratch windows come and go on their own; a menu is larger.
            let viewable = conn
                .get_window_attributes(w)
                .unwrap()
                .reply()
                .is_ok_and(|a| a.map_state == MapState::VIEWABLE);
            viewable
                && conn
                    .get_geometry(w)
                    .unwrap()
                    .reply()
                    .is_ok_and(|g| g.width > 20 && g.height > 20)
        })
        .count();
    Observed {
        viewable_top_level,
        current_desktop: cardinal(conn, root, b"_NET_CURRENT_DESKTOP"),
        desktops: cardinal(conn, root, b"_NET_NUMBER_OF_DESKTOPS"),
    }
}

fn cardinal(conn: &RustConnection, root: Window, name: &[u8]) -> u32 {
    let atom = conn.intern_atom(false, name).unwrap().reply().unwrap().atom;
    conn.get_property(false, root, atom, AtomEnum::CARDINAL, 0, 1)
        .unwrap()
        .reply()
        .unwrap()
        .value32()
        .and_then(|mut v| v.next())
        .unwrap_or(0)
}

fn keycode(conn: &RustConnection, keysym: u32) -> u8 {
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .unwrap()
        .reply()
        .unwrap();
    let per = usize::from(map.keysyms_per_keycode);
    let index = map
        .keysyms
        .iter()
        .position(|&k| k == keysym)
        .expect("keysym in the keyboard map");
    min + u8::try_from(index / per).unwrap()
}

fn fake(conn: &RustConnection, root: Window, kind: u8, detail: u8, x: i16, y: i16) {
    conn.xtest_fake_input(kind, detail, 0, root, x, y, 0)
        .unwrap();
    conn.flush().unwrap();
    std::thread::sleep(Duration::from_millis(30));
}

fn click(conn: &RustConnection, root: Window, button: u8) {
    move_to(conn, root, 600, 400);
    fake(conn, root, BUTTON_PRESS, button, 0, 0);
    fake(conn, root, BUTTON_RELEASE, button, 0, 0);
}

fn move_to(conn: &RustConnection, root: Window, x: i16, y: i16) {
    fake(conn, root, MOTION, 0, x, y);
}

fn ctrl_alt_right(conn: &RustConnection, root: Window) {
    let codes = [CONTROL_L, ALT_L, RIGHT].map(|k| keycode(conn, k));
    for code in codes {
        fake(conn, root, KEY_PRESS, code, 0, 0);
    }
    for code in codes.iter().rev() {
        fake(conn, root, KEY_RELEASE, *code, 0, 0);
    }
}

/// Runs one gesture on a fresh desktop under `args` (up to `attempts` times, until it has an
/// effect) and returns (before, after).
fn gesture(args: &[&str], act: Gesture, attempts: u32) -> Option<(Observed, Observed)> {
    let xvfb = Xvfb::start(1280, 800)?;
    let _openbox = Openbox::start_with_args(&xvfb, args);
    let conn = xvfb.connect();
    let root = conn.setup().roots[0].root;
    let before = observe(&conn, root);
    let mut after = observe(&conn, root);
    for _ in 0..attempts {
        if after != before {
            break;
        }
        act(&conn, root);
        after = wait_for_change(&conn, root, &before);
    }
    // Close whatever opened (a menu holds a pointer grab) before the display goes away.
    fake(&conn, root, KEY_PRESS, keycode(&conn, 0xff1b), 0, 0);
    fake(&conn, root, KEY_RELEASE, keycode(&conn, 0xff1b), 0, 0);
    Some((before, after))
}

fn wait_for_change(conn: &RustConnection, root: Window, before: &Observed) -> Observed {
    // Wait for an effect for up to 3 s (the stock configuration shows one well within that;
    // under the pinned one nothing may appear in the whole window).
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut after = observe(conn, root);
    while after == *before && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        after = observe(conn, root);
    }
    after
}

fn pinned_config() -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, desk_desktop::OPENBOX_CONFIG.as_bytes()).unwrap();
    file
}

#[test]
fn no_click_or_chord_on_the_desktop_opens_a_menu_or_switches_desktops() {
    let config = pinned_config();
    let pinned = ["--config-file", config.path().to_str().unwrap()];
    let cases: [(&str, Gesture); 3] = [
        ("right click on the root window", |c, r| click(c, r, 3)),
        ("middle click on the root window", |c, r| click(c, r, 2)),
        ("ctrl+alt+right", ctrl_alt_right),
    ];
    for (name, act) in cases {
        // The control may take a retry (openbox can miss a gesture right after it starts).
        let Some((stock_before, stock_after)) = gesture(&[], act, 3) else {
            return;
        };
        assert_ne!(
            stock_before, stock_after,
            "{name}: the stock configuration should react (control case)"
        );
        let (before, after) = gesture(&pinned, act, 1).unwrap();
        assert_eq!(before, after, "{name}: the pinned configuration reacted");
        assert_eq!(after.desktops, 1, "{name}: one desktop");
    }
}

/// The centre of the probe's managed window in root coordinates, once openbox lists it.
fn managed_client_centre(conn: &RustConnection, root: Window) -> (i16, i16) {
    let list = conn
        .intern_atom(false, b"_NET_CLIENT_LIST")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let clients: Vec<u32> = conn
            .get_property(false, root, list, AtomEnum::WINDOW, 0, 64)
            .unwrap()
            .reply()
            .unwrap()
            .value32()
            .map(Iterator::collect)
            .unwrap_or_default();
        // Openbox's start-up check maps and destroys 10x10 windows; one may still be listed
        // (or already gone) when the probe's window arrives, so only a live, larger window counts.
        let probe = clients.iter().find_map(|&client| {
            let geometry = conn.get_geometry(client).ok()?.reply().ok()?;
            (geometry.width > 10 && geometry.height > 10).then_some((client, geometry))
        });
        if let Some((client, geometry)) = probe {
            let origin = conn
                .translate_coordinates(client, root, 0, 0)
                .unwrap()
                .reply()
                .unwrap();
            let half = |size: u16| i16::try_from(size / 2).unwrap();
            return (
                origin.dst_x + half(geometry.width),
                origin.dst_y + half(geometry.height),
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the probe window was never managed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn double_clicks_and_drags_inside_a_window_reach_it_under_the_pinned_configuration() {
    let config = pinned_config();
    let Some(xvfb) = Xvfb::start(1280, 800) else {
        return;
    };
    let _openbox =
        Openbox::start_with_args(&xvfb, &["--config-file", config.path().to_str().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    let log = spawn_probe(xvfb.display(), dir.path(), ProbeOptions::default());
    let conn = xvfb.connect();
    let root = conn.setup().roots[0].root;
    let (x, y) = managed_client_centre(&conn, root);

    // A double click, then a left drag: all unmodified, as an agent sends them.
    move_to(&conn, root, x, y);
    for _ in 0..2 {
        fake(&conn, root, BUTTON_PRESS, 1, 0, 0);
        fake(&conn, root, BUTTON_RELEASE, 1, 0, 0);
    }
    move_to(&conn, root, x - 60, y - 40);
    fake(&conn, root, BUTTON_PRESS, 1, 0, 0);
    move_to(&conn, root, x, y);
    move_to(&conn, root, x + 50, y + 30);
    fake(&conn, root, BUTTON_RELEASE, 1, 0, 0);

    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut events = read_probe_log(&log);
    let count = |events: &[desk_test_support::ProbeEvent], kind: &str| {
        events.iter().filter(|event| event.kind == kind).count()
    };
    while count(&events, "button_release") < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        events = read_probe_log(&log);
    }
    let presses: Vec<(i32, i32)> = events
        .iter()
        .filter(|event| event.kind == "button_press" && event.button == Some(1))
        .map(|event| (event.root_x, event.root_y))
        .collect();
    let (x, y) = (i32::from(x), i32::from(y));
    assert_eq!(
        presses,
        vec![(x, y), (x, y), (x - 60, y - 40)],
        "double click and drag presses at the window"
    );
    assert_eq!(count(&events, "button_release"), 3);
    assert!(
        events.iter().any(|event| event.kind == "motion"
            && event.button_held(1)
            && (event.root_x, event.root_y) == (x + 50, y + 30)),
        "the drag's motion reaches the window with the button held"
    );
}
