//! FreeCAD through the broker: the built-in `freecad` profile resets to a maximized, locked-down
//! Part Design window on the attempt document, and the checkpoint gesture (Ctrl+S) saves a valid
//! `.FCStd` in place, which a trusted headless `freecadcmd` opens; the empty document re-saved
//! is not a proven save (`fcstd` validator), a TechDraw page inserted through the GUI is.

use std::process::Command;
use std::time::Instant;

use base64::Engine as _;
use desk_client::ClientError;
use desk_contract::ErrorCode;

use serde_json::json;

use crate::probe::act;
use crate::support::{Broker, lease_and_reset, xvfb_available};

pub(crate) fn freecad_available() -> bool {
    let found = Command::new("sh")
        .args(["-c", "command -v freecad && command -v freecadcmd"])
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var("DESK_REQUIRE_XVFB").as_deref() != Ok("1"),
            "freecad not found but DESK_REQUIRE_XVFB=1"
        );
        println!("skipped: freecad not found");
    }
    found
}

/// RGB at (x, y) of a PNG screenshot.
fn pixel(png_base64: &str, x: usize, y: usize) -> [u8; 3] {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(png_base64)
        .unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    let at = y * info.line_size + x * channels;
    [buffer[at], buffer[at + 1], buffer[at + 2]]
}

/// Opens View > Panels through broker clicks (coordinates of the pinned 1280x800 test desktop).
/// Unlocked, FreeCAD 0.20 lists four panels there (Combo View, Python console, Report view,
/// Selection view); locked down only the two harmless ones remain. The submenu opens right of
/// the View menu; its height, measured in menu-white pixels down a column just inside its left
/// edge, tells two rows (about 50 px) from four (about 96 px).
async fn panels_offer_no_console_or_report_view(client: &desk_client::Client, session: &str) {
    let view = json!({"type": "click", "x": 97, "y": 28, "intent": "open the View menu"});
    act(client, session, "view-menu", 0, view).await.unwrap();
    let panels = json!({"type": "click", "x": 126, "y": 587, "intent": "open View > Panels"});
    let shown = act(client, session, "panels", 1, panels).await.unwrap();
    let png = &shown.screenshot.as_ref().unwrap().png_base64;
    let white_rows = (400..800)
        .filter(|&y| pixel(png, 432, y) == [255, 255, 255])
        .count();
    assert!(
        (30..=70).contains(&white_rows),
        "View > Panels is {white_rows} px tall: expected two rows (no console, no report view)"
    );
    for (index, id) in [(2, "esc-1"), (3, "esc-2")] {
        let escape = json!({"type": "key", "keys": ["escape"], "intent": "close the menus"});
        act(client, session, id, index, escape).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn freecad_resets_maximized_locked_down_and_checkpoints_a_valid_fcstd() {
    if !xvfb_available() || !freecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path(), None, &root.path().join("probe.ndjson"));
    let client = broker.client();
    let started = Instant::now();
    let (session, reset) = lease_and_reset(&client, "freecad", "freecad-1", "freecad").await;
    println!(
        "freecad lease and reset to handoff: {} ms (broker says {} ms for the reset)",
        started.elapsed().as_millis(),
        reset.elapsed_ms
    );
    assert!(
        reset.window.maximized,
        "FreeCAD must be maximized at handoff"
    );
    assert!(reset.screenshot.app_maximized);
    assert_eq!(reset.window.class.to_lowercase(), "freecad");
    // The lockdown module sets this title only after it removed the console, report view,
    // macro menu and toolbar, add-on manager, parameter editor and customize dialog.
    assert_eq!(reset.window.title, "FreeCAD - attempt.FCStd");

    panels_offer_no_console_or_report_view(&client, &session).await;

    // The empty attempt document re-saved by the checkpoint gesture proves no save: the `fcstd`
    // validator wants a stored shape or a TechDraw page.
    let refused = client.checkpoint(&session).await.unwrap_err();
    assert!(
        matches!(refused, ClientError::Api(ref body)
            if body.code == ErrorCode::ArtifactInvalid && body.message.contains("save not proven")),
        "{refused:?}"
    );
    // A TechDraw page is something built (the oracle's measured workbench list and toolbar).
    let steps = [
        json!({"type": "click", "x": 580, "y": 58, "intent": "open the workbench list"}),
        json!({"type": "wait", "milliseconds": 300, "intent": "let the list open"}),
        json!({"type": "type", "text": "TechDraw", "intent": "find the TechDraw workbench"}),
        json!({"type": "key", "keys": ["return"], "intent": "switch to TechDraw"}),
        json!({"type": "wait", "milliseconds": 1500, "intent": "let the workbench load"}),
        json!({"type": "click", "x": 28, "y": 136, "intent": "Insert Default Page"}),
        json!({"type": "wait", "milliseconds": 2000, "intent": "let the page open"}),
    ];
    for (offset, step) in (4u64..).zip(steps) {
        act(&client, &session, &format!("page-{offset}"), offset, step)
            .await
            .unwrap();
    }
    let checkpoint = client.checkpoint(&session).await.unwrap();
    assert_ne!(checkpoint.sha256, checkpoint.reset_sha256, "Ctrl+S saved");
    let artifact = client.artifact(&session).await.unwrap();
    assert_eq!(artifact.filename, "attempt.FCStd");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&artifact.bytes_base64)
        .unwrap();
    assert!(bytes.starts_with(b"PK\x03\x04"));
    assert!(
        bytes.windows(15).any(|w| w == b"GuiDocument.xml"),
        "a GUI save writes GuiDocument.xml beside Document.xml"
    );
    let saved = root.path().join("saved.FCStd");
    std::fs::write(&saved, &bytes).unwrap();
    let script = root.path().join("open.py");
    std::fs::write(
        &script,
        format!(
            "import FreeCAD\nd = FreeCAD.openDocument({:?})\nprint('DOC', d.Name, len(d.Objects))\n",
            saved.display().to_string()
        ),
    )
    .unwrap();
    let out = Command::new("freecadcmd")
        .arg(&script)
        .env("HOME", root.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        (stdout.contains("DOC saved ") || stdout.contains("DOC attempt "))
            && !stdout.contains(" 0\n"),
        "freecadcmd could not open the checkpoint: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    client.release(&session).await.unwrap();
}
