//! `deskbroker perf`, small: one pass of every measurement (no peers) on real LibreCAD desktops
//! and one FreeCAD reset, sandboxed and not, and the screenshot gate's rows (every frame allowed).
//! Checks that the command runs and reports each row with a number; the
//! numbers themselves belong to the closing notes, not to a test.

use std::process::Command;

use crate::freecad::freecad_available;
use crate::librecad::librecad_available;
use crate::support::{deskbroker, xvfb_available};

#[test]
fn perf_measures_every_row_with_and_without_the_sandbox() {
    if !xvfb_available() || !librecad_available() || !freecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let output = Command::new(deskbroker())
        .current_dir(root.path())
        .args(["perf", "--no-peers", "--samples", "2", "--resets", "1"])
        .args(["--freecad-resets", "1"])
        .args(["--display", "1280x800"])
        .env("DESKBROKER_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "perf failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for row in [
        "capture+PNG, in-process",
        "  X server copy alone (one ShmGetImage)",
        "  encode+SHA-256 alone",
        "capture+PNG via worker pipe",
        "click→settled frame via worker (total)",
        "LibreCAD reset → verified handoff",
        "FreeCAD reset → verified handoff",
        "GET screenshot over the socket",
        "POST click → settled screenshot (total)",
        "sandbox off: LibreCAD reset → verified handoff",
        "sandbox off: FreeCAD reset → verified handoff",
        "sandbox off: GET screenshot over the socket",
        "sandbox off: POST click → settled screenshot (total)",
    ] {
        let line = stdout
            .lines()
            .find(|line| line.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?} in:\n{stdout}"));
        let median: f64 = line
            .split_whitespace()
            .rev()
            .nth(1)
            .and_then(|field| field.parse().ok())
            .unwrap_or_else(|| panic!("no median in {line:?}"));
        assert!(median > 0.0, "{line}");
    }
    // The screenshot gate's rows (`perf/gate.rs`): label, then median, p95, OCR median; for the
    // tesseract CLI always, and for the long-lived desk-ocr when it was built beside deskbroker
    // (a workspace build, as in CI).
    let mut engines = vec!["tesseract CLI"];
    if deskbroker().with_file_name("desk-ocr").is_file() {
        engines.push("desk-ocr");
    }
    let rows: Vec<String> = engines
        .iter()
        .flat_map(|engine| {
            [
                "identical frame",
                "48×12 box changed, no text",
                "Open dialog appears (Ctrl+O)",
            ]
            .map(|what| format!("gate ({engine}): {what}"))
        })
        .collect();
    for row in &rows {
        let row = row.as_str();
        let line = stdout
            .lines()
            .find(|line| line.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?} in:\n{stdout}"));
        let numbers: Vec<f64> = line[row.len()..]
            .split_whitespace()
            .take(3)
            .map(|field| field.parse().unwrap_or_else(|_| panic!("{line:?}")))
            .collect();
        assert!(numbers[0] > 0.0, "{line}");
    }
    assert!(
        !stdout.contains("not allowed on a harmless frame"),
        "{stdout}"
    );
}
