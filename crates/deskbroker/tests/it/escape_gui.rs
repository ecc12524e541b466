//! GUI escapes through the real broker with LibreCAD (issue 8): the window manager's system
//! chords, right and middle clicks on every free screen region (the desktop the app leaves
//! uncovered and its frame), title-bar double clicks and drags, and Alt+drags. Each is refused
//! with a typed code (a system chord `invalid_action`, input onto the bare desktop
//! `destination_not_app`) or has no effect: no new top-level window, no new process among the
//! session's, one desktop, and the app stays maximized where it was.
//!
//! The test reads the desktop as an outside observer: the X window tree of the session's display
//! and `/proc`. Under openbox's stock configuration it fails at once (four desktops; a right
//! click on the title bar opens the window menu; a title-bar double click unmaximizes). Openbox
//! moves and resizes no fully maximized window under any configuration, so the drags guard what
//! follows a lost maximization.

use std::collections::BTreeSet;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use desk_client::{Client, ClientError};
use desk_contract::ErrorCode;

use desk_desktop::launcher::{recorded_display, recorded_processes};
use serde_json::{Value, json};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, MapState, Window};
use x11rb::rust_connection::{DefaultStream, RustConnection};

use crate::librecad::librecad_available;
use crate::probe::act;
use crate::support::{Broker, lease_and_reset, xvfb_available};

/// Opens the session's display as an outside observer: its socket on the host, or inside the
/// sandbox's `/tmp` seen through `/proc/PID/root`; with the session's X cookie when it has one.
pub(crate) fn open_display(session_dir: &Path) -> RustConnection {
    let display = recorded_display(session_dir).unwrap();
    let socket = format!("tmp/.X11-unix/X{}", display.trim_start_matches(':'));
    let cookie = std::fs::read(session_dir.join("workspace/run/xauthority"))
        .ok()
        .filter(|bytes| bytes.len() >= 16)
        .map(|bytes| bytes[bytes.len() - 16..].to_vec());
    let (name, data) = match cookie {
        Some(cookie) => (b"MIT-MAGIC-COOKIE-1".to_vec(), cookie),
        None => (Vec::new(), Vec::new()),
    };
    // The X server's own view first (with the sandbox, its nsenter wrapper is in the sandbox's
    // mount namespace), the host's last: another test may run a host X server on the same
    // display number.
    let mut processes = recorded_processes(session_dir);
    processes.sort_by_key(|process| process.role != "xvfb");
    let candidates = processes
        .into_iter()
        .map(|process| format!("/proc/{}/root/{socket}", process.pid))
        .chain(std::iter::once(format!("/{socket}")));
    for path in candidates {
        if let Ok(stream) = UnixStream::connect(&path) {
            let (stream, _) = DefaultStream::from_unix_stream(stream).unwrap();
            return RustConnection::connect_to_stream_with_auth_info(
                stream,
                0,
                name.clone(),
                data.clone(),
            )
            .unwrap();
        }
    }
    panic!("the session's display {display} cannot be reached");
}

fn atom(conn: &RustConnection, name: &[u8]) -> u32 {
    conn.intern_atom(false, name).unwrap().reply().unwrap().atom
}

fn property32(conn: &RustConnection, window: Window, name: &[u8], kind: AtomEnum) -> Vec<u32> {
    conn.get_property(false, window, atom(conn, name), kind, 0, 1024)
        .unwrap()
        .reply()
        .unwrap()
        .value32()
        .map(Iterator::collect)
        .unwrap_or_default()
}

/// A rectangle in root coordinates: (x, y, width, height).
type Rect = (i32, i32, i32, i32);

fn rect_of(conn: &RustConnection, root: Window, window: Window) -> Rect {
    let geometry = conn.get_geometry(window).unwrap().reply().unwrap();
    let origin = conn
        .translate_coordinates(window, root, 0, 0)
        .unwrap()
        .reply()
        .unwrap();
    (
        i32::from(origin.dst_x),
        i32::from(origin.dst_y),
        i32::from(geometry.width),
        i32::from(geometry.height),
    )
}

fn contains((x, y, width, height): Rect, (px, py): (i32, i32)) -> bool {
    px >= x && py >= y && px < x + width && py < y + height
}

/// What an escape would change, seen from outside the app.
#[derive(Debug, PartialEq)]
struct Desktop {
    /// Viewable children of the root (menus, new windows, popups).
    top_level: BTreeSet<Window>,
    /// `_NET_CLIENT_LIST`.
    clients: Vec<u32>,
    desktops: Vec<u32>,
    current_desktop: Vec<u32>,
    /// The app window's `_NET_WM_STATE` atoms, sorted.
    app_state: Vec<u32>,
    /// Where the app window and its frame are.
    app_rect: Rect,
    frame_rect: Rect,
    /// (pid, command name) of every process of the session.
    processes: BTreeSet<(u32, String)>,
}

/// The app's client window (the only managed client) and its frame (its root child).
fn app_and_frame(conn: &RustConnection, root: Window) -> (Window, Window) {
    let clients = property32(conn, root, b"_NET_CLIENT_LIST", AtomEnum::WINDOW);
    assert_eq!(clients.len(), 1, "one managed window, the app: {clients:?}");
    let app = clients[0];
    let mut frame = app;
    loop {
        let parent = conn.query_tree(frame).unwrap().reply().unwrap().parent;
        if parent == root {
            return (app, frame);
        }
        frame = parent;
    }
}

fn observe(conn: &RustConnection, root: Window, session_dir: &Path) -> Desktop {
    let top_level = conn
        .query_tree(root)
        .unwrap()
        .reply()
        .unwrap()
        .children
        .into_iter()
        .filter(|&window| {
            conn.get_window_attributes(window)
                .unwrap()
                .reply()
                .is_ok_and(|attributes| attributes.map_state == MapState::VIEWABLE)
        })
        .collect();
    let (app, frame) = app_and_frame(conn, root);
    let mut app_state = property32(conn, app, b"_NET_WM_STATE", AtomEnum::ATOM);
    app_state.sort_unstable();
    Desktop {
        top_level,
        clients: property32(conn, root, b"_NET_CLIENT_LIST", AtomEnum::WINDOW),
        desktops: property32(conn, root, b"_NET_NUMBER_OF_DESKTOPS", AtomEnum::CARDINAL),
        current_desktop: property32(conn, root, b"_NET_CURRENT_DESKTOP", AtomEnum::CARDINAL),
        app_state,
        app_rect: rect_of(conn, root, app),
        frame_rect: rect_of(conn, root, frame),
        processes: session_processes(session_dir),
    }
}

/// Every process descended from, or in the process group of, a recorded session process.
fn session_processes(session_dir: &Path) -> BTreeSet<(u32, String)> {
    let recorded: BTreeSet<u32> = recorded_processes(session_dir)
        .iter()
        .map(|process| process.pid)
        .collect();
    // pid -> (ppid, pgid, comm)
    let mut table = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let ppid: u32 = fields[1].parse().unwrap();
        let pgid: u32 = fields[2].parse().unwrap();
        table.insert(pid, (ppid, pgid, comm));
    }
    let in_session = |mut pid: u32| {
        let mut hops = 0;
        loop {
            let Some((ppid, pgid, _)) = table.get(&pid) else {
                return false;
            };
            if recorded.contains(&pid) || recorded.contains(pgid) {
                return true;
            }
            hops += 1;
            if *ppid <= 1 || hops > 64 {
                return false;
            }
            pid = *ppid;
        }
    };
    // The sandbox's pid 1 (the lease-deadline loop, a shell) runs `sleep` and `date` as its
    // own timer; those come and go by themselves and are not the desktop's.
    let holder_timer = |ppid: &u32, comm: &str| {
        table
            .get(ppid)
            .is_some_and(|(_, _, parent)| parent == "sh" && recorded.contains(&table[ppid].0))
            && (comm == "sleep" || comm == "date")
    };
    table
        .iter()
        .filter(|(pid, _)| in_session(**pid))
        .filter(|(_, (ppid, _, comm))| !holder_timer(ppid, comm))
        .map(|(pid, (_, _, comm))| (*pid, comm.clone()))
        .collect()
}

/// Points in free screen regions, where a click reaches the desktop or the window frame and not
/// the app: sampled across each row through the frame's top strip (a title bar), its bottom
/// strip and the screen's edges, keeping those outside the app window, at most three of the
/// frame and three of the desktop. Both ends of a title bar are where a stock title bar has its
/// icon and buttons.
fn free_points(before: &Desktop, width: i32, height: i32) -> Vec<(i32, i32)> {
    let xs = [2, width - 3, width / 2, width / 4, 3 * width / 4];
    let (_, fy, _, fh) = before.frame_rect;
    let (_, ay, _, ah) = before.app_rect;
    let ys = [
        fy + (ay - fy) / 2,
        ay + ah + (fy + fh - ay - ah) / 2,
        2,
        height - 3,
    ];
    let (mut desktop, mut frame) = (Vec::new(), Vec::new());
    for y in ys {
        for x in xs {
            let point = (x, y);
            if contains(before.app_rect, point)
                || !contains((0, 0, width, height), point)
                || frame.contains(&point)
                || desktop.contains(&point)
            {
                continue;
            }
            if contains(before.frame_rect, point) {
                frame.push(point);
            } else {
                desktop.push(point);
            }
        }
    }
    frame.truncate(3);
    desktop.truncate(3);
    frame.into_iter().chain(desktop).collect()
}

async fn refused(client: &Client, session: &str, keys: &[&str]) {
    let chord = json!({"type": "key", "keys": keys, "intent": "system chord"});
    let request_id = format!("refused-{}", keys.join("-"));
    let error = act(client, session, &request_id, 0, chord)
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Api(ref body) if body.code == ErrorCode::InvalidAction),
        "{keys:?} must be refused with invalid_action: {error:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn system_chords_clicks_and_drags_outside_the_app_escape_nothing() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root_dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(root_dir.path(), None, &root_dir.path().join("probe.ndjson"));
    let client = broker.client();
    let (session, reset) = lease_and_reset(&client, "escape", "escape-gui", "librecad").await;
    assert!(reset.window.maximized, "LibreCAD maximized at handoff");
    let (width, height) = (
        i32::try_from(reset.screenshot.width).unwrap(),
        i32::try_from(reset.screenshot.height).unwrap(),
    );
    let session_dir = broker.session_dir(&session);
    let conn = open_display(&session_dir);
    let root = conn.setup().roots[0].root;
    let before = observe(&conn, root, &session_dir);
    assert_eq!(before.desktops, vec![1], "one desktop");
    assert_eq!(before.current_desktop, vec![0]);
    assert!(
        before
            .app_state
            .contains(&atom(&conn, b"_NET_WM_STATE_MAXIMIZED_VERT"))
            && before
                .app_state
                .contains(&atom(&conn, b"_NET_WM_STATE_MAXIMIZED_HORZ")),
        "the window manager has the app maximized"
    );

    // The desktop's system chords: refused before anything reaches the desktop.
    let chords = [
        &["ctrl", "alt", "left"][..],
        &["ctrl", "alt", "right"],
        &["ctrl", "alt", "up"],
        &["ctrl", "alt", "down"],
        &["shift", "alt", "right"],
        &["print"],
        &["alt", "tab"],
        &["alt", "space"],
        &["alt", "esc"],
        &["alt", "f4"],
        &["super"],
        &["super", "e"],
    ];
    for keys in chords {
        refused(&client, &session, keys).await;
    }
    assert_eq!(client.status(&session).await.unwrap().next_action_index, 0);

    // Then (after those refusals) every free region, and gestures a window manager binds.
    let points = free_points(&before, width, height);
    assert!(!points.is_empty(), "no free region found around {before:?}");
    // Double clicks and drags go to the free point nearest the top centre (a title's label).
    let title = *points
        .iter()
        .min_by_key(|(x, y)| (x - width / 2).abs() + y)
        .unwrap();
    let centre = (width / 2, height / 2);
    // Each gesture with whether it starts on the bare desktop, where the destination check
    // refuses it (`destination_not_app`); on the app's frame it is sent and must do nothing.
    let mut gestures: Vec<(String, Value, bool)> = Vec::new();
    for (x, y) in &points {
        for button in ["right", "middle"] {
            gestures.push((
                format!("{button} click at ({x}, {y})"),
                json!({"type": "click", "x": x, "y": y, "button": button, "intent": "free region"}),
                !contains(before.frame_rect, (*x, *y)),
            ));
        }
    }
    let title_on_desktop = !contains(before.frame_rect, title);
    let drag = |from: (i32, i32), to: (i32, i32), button: &str, modifiers: &[&str]| {
        json!({"type": "drag", "path": [{"x": from.0, "y": from.1}, {"x": to.0, "y": to.1}],
               "button": button, "duration_ms": 80, "modifiers": modifiers, "intent": "drag"})
    };
    gestures.extend([
        (
            "double click on the frame".to_string(),
            json!({"type": "double_click", "x": title.0, "y": title.1, "intent": "frame"}),
            title_on_desktop,
        ),
        (
            "drag the frame".to_string(),
            drag(title, (title.0 + 150, title.1 + 200), "left", &[]),
            title_on_desktop,
        ),
        (
            "alt+drag the frame with the right button".to_string(),
            drag(title, (title.0 + 150, title.1 + 200), "right", &["alt"]),
            title_on_desktop,
        ),
        (
            "alt+drag inside the app".to_string(),
            drag(centre, (centre.0 + 120, centre.1 + 90), "left", &["alt"]),
            false,
        ),
    ]);
    let mut index = 0;
    for (n, (name, gesture, on_desktop)) in gestures.iter().enumerate() {
        let result = act(&client, &session, &format!("g-{n}"), index, gesture.clone()).await;
        if *on_desktop {
            assert!(
                matches!(result, Err(ClientError::Api(ref body))
                    if body.code == ErrorCode::DestinationNotApp),
                "{name} starts on the bare desktop: {result:?}"
            );
        } else {
            let response = result.unwrap_or_else(|error| panic!("{name}: {error:?}"));
            assert!(
                response.screenshot.as_ref().unwrap().app_maximized,
                "{name}: app maximized"
            );
            index += 1;
        }
        assert_eq!(
            observe(&conn, root, &session_dir),
            before,
            "{name} changed the desktop"
        );
    }
    // Anything slower than the settle (a program that maps its window late) shows up here.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(observe(&conn, root, &session_dir), before);
    println!(
        "escape: {} refused chords, {} gestures on free points {points:?} (frame {:?}, app {:?}), \
         no effect",
        chords.len(),
        gestures.len(),
        before.frame_rect,
        before.app_rect
    );
    client.release(&session).await.unwrap();
}
