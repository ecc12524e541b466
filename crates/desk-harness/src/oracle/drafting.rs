//! LibreCAD recipes for the drafting entities (`docs/librecad-recipes.md`, sections 12–16,
//! broker-desktop coordinates): multi-line text through the MText dialog, leaders and angular
//! dimensions at the command line (the angle's two lines picked by click), hatches (boundary
//! picked by click, then the hatch dialog), and linetypes, on a layer as it is created or per
//! entity through the pen toolbar.

use serde_json::Value;

use desk_cad::model::{Geometry, HatchPattern, Point};

use super::steps::{
    click, command, drawing_to_screen, key, num, open_dialog, place_after_dialog, pt, type_text,
    typeable, wait,
};

/// MText dialog: Height, Angle, top-left alignment, OK.
const MTEXT_HEIGHT: (i64, i64) = (828, 360);
const MTEXT_ANGLE: (i64, i64) = (848, 498);
const MTEXT_TOP_LEFT: (i64, i64) = (678, 498);
const MTEXT_OK: (i64, i64) = (1121, 712);
/// Choose Hatch Attributes dialog: pattern combo, scale, angle, OK.
const HATCH_PATTERN: (i64, i64) = (843, 476);
const HATCH_SCALE: (i64, i64) = (865, 522);
const HATCH_ANGLE: (i64, i64) = (865, 568);
const HATCH_OK: (i64, i64) = (1030, 633);
/// Layer Settings dialog: the line type combo.
const LAYER_LINETYPE: (i64, i64) = (982, 560);
/// Pen toolbar: the line type combo (the one left of it is the line width).
const PEN_LINETYPE: (i64, i64) = (370, 96);
/// How far from the angle's vertex a line is clicked, in mm.
const PICK_FROM_VERTEX_MM: f64 = 6.0;

/// The line type combo's entry for a DXF linetype, `None` when LibreCAD has no such type.
pub(super) fn linetype_entry(linetype: &str) -> Option<&'static str> {
    Some(match linetype {
        "CENTER" => "Center",
        "DASHED" => "Dash",
        "DOT" => "Dot",
        "DASHDOT" => "Dash dot",
        "DIVIDE" => "Divide",
        "BORDER" => "Border",
        _ => return None,
    })
}

/// Picks `entry` (the first entry when `None`) in the combo at `at`: open it, go to the top,
/// type to search, choose.
fn choose(at: (i64, i64), entry: Option<&str>, what: &str) -> Vec<Value> {
    let mut steps = vec![
        click(at, &format!("open the {what} list")),
        wait(400, "let the list open"),
        key(&["home"], "to the first entry"),
    ];
    if let Some(entry) = entry {
        steps.push(type_text(entry, &format!("jump to {entry}")));
    }
    steps.extend([
        key(&["return"], "choose it and close the list"),
        wait(200, "let the list close"),
    ]);
    steps
}

/// The Layer Settings dialog's steps that give the new layer `linetype` (before its OK).
pub(super) fn layer_linetype(linetype: &str) -> Vec<Value> {
    linetype_entry(linetype).map_or_else(Vec::new, |entry| {
        choose(LAYER_LINETYPE, Some(entry), "layer's line type")
    })
}

/// Sets the pen's linetype for the entities drawn next (`None`: back to By Layer).
pub(super) fn pen_linetype(linetype: Option<&str>) -> Vec<Value> {
    // "By Layer" is the list's first entry.
    let entry = linetype.and_then(linetype_entry);
    let mut batch = choose(PEN_LINETYPE, entry, "pen's line type");
    batch.push(key(&["ctrl", "m"], "back to the command line"));
    batch
}

pub(super) fn batches(geometry: &Geometry, batches: &mut Vec<Vec<Value>>) {
    match geometry {
        Geometry::Leader { points } => {
            let entries: Vec<(String, &str)> = points
                .iter()
                .enumerate()
                .map(|(idx, p)| {
                    (
                        pt(*p),
                        if idx == 0 {
                            "arrowhead point"
                        } else {
                            "next leader point"
                        },
                    )
                })
                .collect();
            batches.push(command("dimleader", &entries));
        }
        Geometry::MText {
            insert,
            height,
            value,
        } => mtext(*insert, *height, value, batches),
        Geometry::AngularDim {
            line1,
            line2,
            arc_point,
        } => angular(*line1, *line2, *arc_point, geometry, batches),
        Geometry::Hatch { loops, pattern } => hatch(loops, pattern, batches),
        _ => {}
    }
}

fn mtext(insert: Point, height: f64, value: &str, batches: &mut Vec<Vec<Value>>) {
    open_dialog("mtext", "MText", batches);
    let mut batch = vec![key(&["ctrl", "a"], "select the remembered text")];
    for (idx, line) in value.lines().enumerate() {
        if idx > 0 {
            batch.push(key(&["return"], "a new line in the text box"));
        }
        batch.push(type_text(&typeable(line), "one line of the note"));
    }
    batch.extend([
        click(MTEXT_HEIGHT, "the Height field"),
        key(&["ctrl", "a"], "select the old height"),
        type_text(&num(height), "text height"),
        click(MTEXT_ANGLE, "the Angle field"),
        key(&["ctrl", "a"], "select the old angle"),
        type_text("0", "text angle"),
        click(MTEXT_TOP_LEFT, "attach at the top-left corner"),
        click(MTEXT_OK, "OK: close the dialog"),
    ]);
    batches.push(batch);
    place_after_dialog(
        insert,
        "insertion point (top-left corner)",
        &[key(&["ctrl", "m"], "focus the command line")],
        batches,
    );
}

/// A point on the line through `far` and `vertex`, [`PICK_FROM_VERTEX_MM`] from the vertex
/// (its middle on a short line), clear of the other line.
fn pick_point(far: Point, vertex: Point) -> Point {
    let len = far.dist(vertex);
    let t = if len > 2.0 * PICK_FROM_VERTEX_MM {
        PICK_FROM_VERTEX_MM / len
    } else {
        0.5
    };
    Point::new(
        vertex.x + (far.x - vertex.x) * t,
        vertex.y + (far.y - vertex.y) * t,
    )
}

fn angular(
    line1: (Point, Point),
    line2: (Point, Point),
    arc_point: Point,
    geometry: &Geometry,
    batches: &mut Vec<Vec<Value>>,
) {
    let Some(angle) = geometry.angle() else {
        return;
    };
    // Pick each line on the end away from the vertex.
    let far = |(a, b): (Point, Point)| {
        if a.dist(angle.vertex) > b.dist(angle.vertex) {
            a
        } else {
            b
        }
    };
    batches.push(vec![
        key(&["ctrl", "m"], "focus the command line"),
        type_text("dimangular", "start the dimangular command"),
        key(&["return"], "confirm the command"),
    ]);
    batches.push(vec![click(
        drawing_to_screen(pick_point(far(line1), angle.vertex)),
        "select the first line",
    )]);
    batches.push(vec![click(
        drawing_to_screen(pick_point(far(line2), angle.vertex)),
        "select the second line",
    )]);
    batches.push(vec![
        key(
            &["ctrl", "m"],
            "the clicks took focus; back to the command line",
        ),
        type_text(
            &pt(arc_point),
            "dimension arc location (its sector picks the angle)",
        ),
        key(&["return"], "confirm the arc location"),
        key(&["escape"], "finish the command"),
        key(&["escape"], "back to idle"),
    ]);
}

fn hatch(loops: &[Vec<Point>], pattern: &HatchPattern, batches: &mut Vec<Vec<Value>>) {
    batches.push(vec![
        key(&["escape"], "leave any command"),
        key(&["escape"], "idle, nothing selected"),
    ]);
    // Select each loop's boundary by the middle of its first edge.
    for points in loops {
        if let [a, b, ..] = points.as_slice() {
            batches.push(vec![click(
                drawing_to_screen(a.mid(*b)),
                "select the hatch boundary by an edge",
            )]);
        }
    }
    batches.push(vec![
        key(&["ctrl", "m"], "focus the command line"),
        type_text("hatch", "hatch the selection"),
        key(&["return"], "open the hatch dialog"),
    ]);
    batches.push(vec![wait(500, "let the hatch dialog map")]);
    let name = pattern.pattern.to_ascii_lowercase();
    let mut batch = choose(HATCH_PATTERN, Some(&name), "hatch pattern");
    batch.extend([
        click(HATCH_SCALE, "the Scale field"),
        key(&["ctrl", "a"], "select the old scale"),
        type_text(&num(pattern.scale), "pattern scale"),
        click(HATCH_ANGLE, "the Angle field"),
        key(&["ctrl", "a"], "select the old angle"),
        type_text(&num(pattern.angle_deg), "pattern angle in degrees"),
        click(HATCH_OK, "OK: hatch the selected boundary"),
        wait(300, "let the hatch be created"),
        key(&["escape"], "drop the selection"),
        key(&["escape"], "back to idle"),
    ]);
    batches.push(batch);
}
