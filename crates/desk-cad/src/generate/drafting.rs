//! The drafting categories corpus v3 adds to the L3 and L4 drawings, each with its prompt
//! sentence:
//! - L3 and L4: a leader callout on the first hole (`2X Ø10 THRU`) and, on a chamfered
//!   corner, an angular dimension of the chamfer against the top edge (45°).
//! - L4: centre lines through every hole (layer CENTER, linetype CENTER), a hidden back-side
//!   spot face on the last hole (layer HIDDEN, linetype DASHED, LibreCAD has no HIDDEN), the section A-A through the
//!   first hole beside the plate (two hatched rectangles, ANSI31, layer HATCH) with its title,
//!   and a multi-line note (MTEXT).
//!
//! Every point stays on a 0.5 mm grid (the callout's arc start excepted, which the prompt
//! gives to two decimals) and everything the oracle must click stays inside LibreCAD's first
//! view.

use super::builder::{Builder, Corner, Plate, fmt_point};
use crate::corpus::Level;
use crate::model::{Geometry, HatchPattern, Point, format_value};

/// The L4 layer sentence of corpus v3.
pub(super) const LAYERS_STEP: &str = "Put the outline and the section outline on layer \
     OUTLINE, the hole circles on layer HOLES, the dimensions and the leader on layer DIMS, \
     all text on layer TEXT, the centre lines on layer CENTER with linetype CENTER, the spot \
     face on layer HIDDEN with linetype DASHED and the hatches on layer HATCH (create these \
     layers; set each linetype on its layer).";

/// Section view: its distance right of the plate and its thickness (the plate's), in mm.
const SECTION_GAP: f64 = 35.0;
const THICKNESS: f64 = 10.0;
/// Text height of callouts, titles and notes.
const NOTE_HEIGHT: f64 = 3.5;

fn half_grid(value: f64) -> f64 {
    (value * 2.0).round() / 2.0
}

pub(super) fn add(
    builder: &mut Builder,
    level: Level,
    plate: Plate,
    corner: Corner,
    holes: &[(Point, f64)],
) {
    if let Some((center, r)) = holes.first() {
        callout(builder, *center, *r, holes.len());
    }
    if let Corner::Chamfered(c) = corner {
        chamfer_angle(builder, plate, c);
    }
    if level == Level::L4 {
        centre_lines(builder, holes);
        if let Some((center, r)) = holes.last() {
            spot_face(builder, *center, *r);
        }
        if let Some((center, r)) = holes.first() {
            section(builder, plate, *center, *r);
        }
        note(builder, plate);
    }
}

fn callout(builder: &mut Builder, center: Point, r: f64, n_holes: usize) {
    let tip = center.polar(r, 135.0);
    let knee = Point::new(half_grid(tip.x - 10.0), half_grid(tip.y + 10.0));
    let end = Point::new(knee.x - 8.0, knee.y);
    builder.add(
        "DIMS",
        Geometry::Leader {
            points: vec![tip, knee, end],
        },
    );
    let count = if n_holes > 1 {
        format!("{n_holes}X ")
    } else {
        String::new()
    };
    let text = format!("{count}Ø{} THRU", format_value(2.0 * r));
    let insert = Point::new(end.x - 26.0, knee.y + 1.5);
    builder.add(
        "TEXT",
        Geometry::Text {
            insert,
            height: NOTE_HEIGHT,
            value: text.clone(),
        },
    );
    builder.step(format!(
        "Call out the hole centered at {} with a leader whose arrowhead touches the circle at \
         {} and which runs to {} and then to {}, and the single-line text \"{text}\" with \
         height {} mm at {} (left baseline).",
        fmt_point(center),
        fmt_point(tip),
        fmt_point(knee),
        fmt_point(end),
        format_value(NOTE_HEIGHT),
        fmt_point(insert)
    ));
}

fn chamfer_angle(builder: &mut Builder, plate: Plate, c: f64) {
    let vertex = Point::new(plate.x1() - c, plate.y1());
    let top = (Point::new(plate.x0, plate.y1()), vertex);
    let chamfer = (Point::new(plate.x1(), plate.y1() - c), vertex);
    let arc_point = vertex.polar(c + 5.0, 337.5);
    builder.add(
        "DIMS",
        Geometry::AngularDim {
            line1: top,
            line2: chamfer,
            arc_point,
        },
    );
    builder.step(format!(
        "Add an angular dimension of the 45° angle between the chamfer and the extension of the \
         top edge beyond {} (draw the outline's edges as separate lines so each can be picked; \
         its arc lies {} mm from that corner).",
        fmt_point(vertex),
        format_value(c + 5.0)
    ));
}

fn centre_lines(builder: &mut Builder, holes: &[(Point, f64)]) {
    for (center, r) in holes {
        let reach = r + 5.0;
        for (a, b) in [
            (
                Point::new(center.x - reach, center.y),
                Point::new(center.x + reach, center.y),
            ),
            (
                Point::new(center.x, center.y - reach),
                Point::new(center.x, center.y + reach),
            ),
        ] {
            builder.add_styled("CENTER", Some("CENTER"), Geometry::Line { a, b });
        }
    }
    builder.step(
        "Draw centre lines (linetype CENTER) through every hole: a horizontal and a vertical \
         line through its center, each reaching 5 mm beyond the circle on both sides."
            .to_owned(),
    );
}

fn spot_face(builder: &mut Builder, center: Point, r: f64) {
    let spot = r + 2.5;
    builder.add_styled(
        "HIDDEN",
        Some("DASHED"),
        Geometry::Circle { center, r: spot },
    );
    builder.step(format!(
        "Show the back-side spot face of the hole at {} as a hidden circle (linetype DASHED) \
         of diameter {} mm around it.",
        fmt_point(center),
        format_value(2.0 * spot)
    ));
}

fn section(builder: &mut Builder, plate: Plate, center: Point, r: f64) {
    let x0 = plate.x1() + SECTION_GAP;
    let x1 = x0 + THICKNESS;
    let pattern = HatchPattern {
        pattern: "ANSI31".to_owned(),
        scale: 1.0,
        angle_deg: 0.0,
    };
    let mut corners = Vec::new();
    for (y0, y1) in [(plate.y0, center.y - r), (center.y + r, plate.y1())] {
        let points = vec![
            Point::new(x0, y0),
            Point::new(x1, y0),
            Point::new(x1, y1),
            Point::new(x0, y1),
        ];
        builder.add(
            "OUTLINE",
            Geometry::Polyline {
                points: points.clone(),
                closed: true,
            },
        );
        builder.add(
            "HATCH",
            Geometry::Hatch {
                loops: vec![points],
                pattern: pattern.clone(),
            },
        );
        corners.push((Point::new(x0, y0), Point::new(x1, y1)));
    }
    let title = Point::new(x0 - 8.0, plate.y0 - 10.0);
    builder.add(
        "TEXT",
        Geometry::Text {
            insert: title,
            height: NOTE_HEIGHT,
            value: "SECTION A-A".to_owned(),
        },
    );
    builder.step(format!(
        "Draw the section A-A through the hole at {} beside the plate: two rectangles, from {} \
         to {} and from {} to {}, each hatched with pattern ANSI31 at scale 1 and angle 0, and \
         the single-line text \"SECTION A-A\" with height {} mm at {} (left baseline).",
        fmt_point(center),
        fmt_point(corners[0].0),
        fmt_point(corners[0].1),
        fmt_point(corners[1].0),
        fmt_point(corners[1].1),
        format_value(NOTE_HEIGHT),
        fmt_point(title)
    ));
}

fn note(builder: &mut Builder, plate: Plate) {
    let insert = Point::new(plate.x1() + SECTION_GAP + THICKNESS + 15.0, plate.y1());
    let lines = [
        "NOTES:".to_owned(),
        "1. BREAK SHARP EDGES".to_owned(),
        format!("2. THICKNESS {} MM", format_value(THICKNESS)),
    ];
    builder.add(
        "TEXT",
        Geometry::MText {
            insert,
            height: NOTE_HEIGHT,
            value: lines.join("\n"),
        },
    );
    builder.step(format!(
        "Add a multi-line text (MTEXT) with height {} mm, its top-left corner at {}, of three \
         lines: \"{}\", \"{}\" and \"{}\".",
        format_value(NOTE_HEIGHT),
        fmt_point(insert),
        lines[0],
        lines[1],
        lines[2]
    ));
}
