//! LibreCAD end to end: the demo (the main job) resets LibreCAD, draws through broker actions,
//! checkpoints and retrieves the DXF; this test parses that DXF on its own and finds the
//! entities at the expected coordinates.

use std::process::Command;

use dxf::entities::EntityType;

use crate::support::{deskbroker, xvfb_available};

pub(crate) fn librecad_available() -> bool {
    desk_test_support::tools_available("librecad", &["librecad"])
}

#[test]
fn librecad_drawing_reaches_the_saved_dxf() {
    if !xvfb_available() || !librecad_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("run");
    let output = Command::new(deskbroker())
        .arg("demo")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "demo failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let drawing = dxf::Drawing::load_file(out.join("attempt.dxf")).unwrap();
    let mut lines = Vec::new();
    let mut circles = Vec::new();
    for entity in drawing.entities() {
        match &entity.specific {
            EntityType::Line(line) => lines.push([line.p1.x, line.p1.y, line.p2.x, line.p2.y]),
            EntityType::Circle(circle) => {
                circles.push([circle.center.x, circle.center.y, circle.radius])
            }
            _ => {}
        }
    }
    let has_line = |a: (f64, f64), b: (f64, f64)| {
        lines.iter().any(|l| {
            let close =
                |p: (f64, f64), q: (f64, f64)| (p.0 - q.0).abs() < 1e-6 && (p.1 - q.1).abs() < 1e-6;
            (close((l[0], l[1]), a) && close((l[2], l[3]), b))
                || (close((l[0], l[1]), b) && close((l[2], l[3]), a))
        })
    };
    for (a, b) in [
        ((0.0, 0.0), (100.0, 0.0)),
        ((100.0, 0.0), (100.0, 50.0)),
        ((100.0, 50.0), (0.0, 50.0)),
        ((0.0, 50.0), (0.0, 0.0)),
    ] {
        assert!(has_line(a, b), "line {a:?}-{b:?} missing from {lines:?}");
    }
    assert!(
        circles.iter().any(|c| (c[0] - 50.0).abs() < 1e-6
            && (c[1] - 25.0).abs() < 1e-6
            && (c[2] - 20.0).abs() < 1e-6),
        "circle missing: {circles:?}"
    );
    assert!(
        lines.len() >= 5,
        "the mouse-drawn line is missing: {lines:?}"
    );
    for name in [
        "events.json",
        "frame_events.json",
        "summary.json",
        "screenshots/000-reset.png",
    ] {
        assert!(
            out.join(name).exists(),
            "{name} missing from the run folder"
        );
    }
    let events = std::fs::read_to_string(out.join("events.json")).unwrap();
    assert!(
        events.lines().count() > 50,
        "events.json records every input"
    );
}
