//! Drafting entities in the render: hatches (pattern lines clipped to their loops, or a solid
//! fill), angular dimensions, leaders, multi-line text, and linetype dash patterns.

use std::fmt::Write as _;

use super::svg::{ARROW_PX, DIM_STROKE, FONT, LABEL_PX, arrow, escape, label, line};
use super::view::{MTEXT_LINE_PITCH, View};
use crate::model::{Geometry, HatchPattern, Point, dash_pattern};

/// Pattern line spacing of the ANSI patterns at scale 1, in mm (1/8 inch).
const ANSI_SPACING_MM: f64 = 3.175;
const HATCH_STROKE: &str = "1";
/// The cap height of DejaVu Sans as a share of its font size.
const CAP_HEIGHT: f64 = 0.73;

/// The SVG `stroke-dasharray` of a linetype in `view`, `None` when continuous or unknown.
pub(super) fn dasharray(linetype: &str, view: &View) -> Option<String> {
    let pattern = dash_pattern(linetype)?;
    let parts: Vec<String> = pattern
        .iter()
        .map(|len| format!("{:.2}", (len.abs() * view.scale).max(1.0)))
        .collect();
    Some(parts.join(","))
}

/// Draws the drafting geometry the render's `draw` hands here.
pub(super) fn draw(svg: &mut String, view: &View, geometry: &Geometry) {
    match geometry {
        Geometry::AngularDim { arc_point, .. } => {
            if let Some(text) = geometry.dimension_label()
                && let Some(angle) = geometry.angle()
            {
                draw_angular(svg, view, angle, *arc_point, &text);
            }
        }
        Geometry::Leader { points } => draw_leader(svg, view, points),
        Geometry::MText {
            insert,
            height,
            value,
        } => {
            for (idx, text) in value.lines().enumerate() {
                let baseline = Point::new(
                    insert.x,
                    insert.y - height * (1.0 + idx as f64 * MTEXT_LINE_PITCH),
                );
                let at = view.px(baseline);
                let _ = writeln!(
                    svg,
                    "<text x=\"{:.2}\" y=\"{:.2}\" font-family=\"{FONT}\" font-size=\"{:.2}\" \
                     fill=\"black\" stroke=\"none\">{}</text>",
                    at.x,
                    at.y,
                    height * view.scale / CAP_HEIGHT,
                    escape(text)
                );
            }
        }
        Geometry::Hatch { loops, pattern } => draw_hatch(svg, view, loops, pattern),
        _ => {}
    }
}

fn draw_angular(svg: &mut String, view: &View, angle: crate::model::Angle, arc: Point, text: &str) {
    let r = angle.vertex.dist(arc);
    let mut d = String::new();
    for step in 0..=48 {
        let p = view.px(angle.vertex.polar(
            r,
            angle.start_deg + angle.sweep_deg * f64::from(step) / 48.0,
        ));
        let _ = write!(
            d,
            "{}{:.2} {:.2} ",
            if step == 0 { "M" } else { "L" },
            p.x,
            p.y
        );
    }
    let _ = writeln!(
        svg,
        "<path d=\"{}\" stroke-width=\"{DIM_STROKE}\"/>",
        d.trim_end()
    );
    // Arrowheads at both ends, tangent to the arc (pixel y points down).
    let end = angle.start_deg + angle.sweep_deg;
    for (at_deg, sign) in [(angle.start_deg, -1.0), (end, 1.0)] {
        let tip = view.px(angle.vertex.polar(r, at_deg));
        let rad = at_deg.to_radians();
        let tangent = Point::new(-rad.sin() * sign, -rad.cos() * sign);
        arrow(svg, tip, tangent);
    }
    let mid = angle.start_deg + angle.sweep_deg / 2.0;
    let at = view.px(angle.vertex.polar(r, mid));
    let rad = mid.to_radians();
    let out = Point::new(
        at.x + rad.cos() * LABEL_PX,
        at.y - rad.sin() * LABEL_PX + 8.0,
    );
    label(svg, out, 0.0, text, LABEL_PX);
}

fn draw_leader(svg: &mut String, view: &View, points: &[Point]) {
    let px: Vec<Point> = points.iter().map(|p| view.px(*p)).collect();
    for pair in px.windows(2) {
        line(svg, pair[0], pair[1], DIM_STROKE);
    }
    if let [tip, next, ..] = px.as_slice()
        && tip.dist(*next) > ARROW_PX * 0.5
    {
        arrow(svg, *tip, Point::new(tip.x - next.x, tip.y - next.y));
    }
}

/// The pattern's line families: (angle in degrees, spacing in mm) at scale 1 and angle 0.
fn families(pattern: &str) -> &'static [(f64, f64)] {
    match pattern {
        "ANSI37" => &[(45.0, ANSI_SPACING_MM), (135.0, ANSI_SPACING_MM)],
        "ANSI32" => &[(45.0, ANSI_SPACING_MM * 2.0), (45.0, ANSI_SPACING_MM * 2.0)],
        "NET" => &[(0.0, ANSI_SPACING_MM), (90.0, ANSI_SPACING_MM)],
        "LINE" => &[(0.0, ANSI_SPACING_MM)],
        _ => &[(45.0, ANSI_SPACING_MM)],
    }
}

fn draw_hatch(svg: &mut String, view: &View, loops: &[Vec<Point>], pattern: &HatchPattern) {
    if pattern.pattern == "SOLID" {
        let mut d = String::new();
        for points in loops {
            for (idx, p) in points.iter().enumerate() {
                let p = view.px(*p);
                let _ = write!(
                    d,
                    "{}{:.2} {:.2} ",
                    if idx == 0 { "M" } else { "L" },
                    p.x,
                    p.y
                );
            }
            d.push_str("Z ");
        }
        let _ = writeln!(
            svg,
            "<path d=\"{}\" fill=\"black\" fill-rule=\"evenodd\" stroke=\"none\"/>",
            d.trim_end()
        );
        return;
    }
    let scale = if pattern.scale > 1e-6 {
        pattern.scale
    } else {
        1.0
    };
    for (family_deg, spacing) in families(&pattern.pattern) {
        // Never more than a few hundred lines, however small the scale.
        let spacing = (spacing * scale).max(0.05);
        for (a, b) in clipped_lines(loops, family_deg + pattern.angle_deg, spacing, 600) {
            line(svg, view.px(a), view.px(b), HATCH_STROKE);
        }
    }
}

/// Parallel lines at `angle_deg`, `spacing` apart through the origin's lattice, clipped to
/// the inside of `loops` (even-odd); at most `max_lines` lines.
fn clipped_lines(
    loops: &[Vec<Point>],
    angle_deg: f64,
    spacing: f64,
    max_lines: usize,
) -> Vec<(Point, Point)> {
    let rad = angle_deg.to_radians();
    let (u, n) = (
        Point::new(rad.cos(), rad.sin()),
        Point::new(-rad.sin(), rad.cos()),
    );
    let along = |p: Point| p.x * u.x + p.y * u.y;
    let across = |p: Point| p.x * n.x + p.y * n.y;
    let edges: Vec<(Point, Point)> = loops
        .iter()
        .flat_map(|points| {
            (0..points.len()).map(move |idx| (points[idx], points[(idx + 1) % points.len()]))
        })
        .collect();
    let (lo, hi) = edges
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |acc, (a, _)| {
            (acc.0.min(across(*a)), acc.1.max(across(*a)))
        });
    if !lo.is_finite() || (hi - lo) / spacing > max_lines as f64 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut k = (lo / spacing).ceil();
    while k * spacing <= hi {
        let c = k * spacing;
        let mut hits: Vec<f64> = edges
            .iter()
            .filter_map(|(a, b)| {
                let (ca, cb) = (across(*a) - c, across(*b) - c);
                // Half-open rule so a vertex on the line counts once.
                if (ca > 0.0) == (cb > 0.0) {
                    return None;
                }
                let t = ca / (ca - cb);
                Some(along(*a) + t * (along(*b) - along(*a)))
            })
            .collect();
        hits.sort_by(f64::total_cmp);
        for pair in hits.chunks_exact(2) {
            let at = |s: f64| Point::new(u.x * s + n.x * c, u.y * s + n.y * c);
            out.push((at(pair[0]), at(pair[1])));
        }
        k += 1.0;
    }
    out
}
