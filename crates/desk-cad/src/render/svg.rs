//! SVG primitives of the render: strokes, fonts and sizes, escaping, and the line, arrowhead
//! and label elements every drawing part writes.

use std::fmt::Write as _;

use crate::model::Point;

pub(super) const ARROW_PX: f64 = 16.0;
pub(super) const LABEL_PX: f64 = 24.0;
pub(super) const GEOMETRY_STROKE: &str = "2.5";
pub(super) const DIM_STROKE: &str = "1.5";
pub(super) const FONT: &str = "DejaVu Sans";

/// Writes one SVG element; writing into a `String` cannot fail.
macro_rules! put {
    ($svg:expr, $($arg:tt)*) => {
        let _ = write!($svg, $($arg)*);
    };
}
pub(super) use put;

pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn line(svg: &mut String, a: Point, b: Point, width: &str) {
    put!(
        svg,
        "<line x1=\"{:.2}\" y1=\"{:.2}\" x2=\"{:.2}\" y2=\"{:.2}\" stroke-width=\"{width}\"/>\n",
        a.x,
        a.y,
        b.x,
        b.y
    );
}

/// A filled arrowhead with its tip at `tip`, pointing along pixel direction `dir`.
pub(crate) fn arrow(svg: &mut String, tip: Point, dir: Point) {
    let len = dir.x.hypot(dir.y).max(1e-9);
    let (ux, uy) = (dir.x / len, dir.y / len);
    let base = Point::new(tip.x - ux * ARROW_PX, tip.y - uy * ARROW_PX);
    let half = ARROW_PX * 0.3;
    put!(
        svg,
        "<path d=\"M{:.2} {:.2} L{:.2} {:.2} L{:.2} {:.2} Z\" fill=\"black\" stroke=\"none\"/>\n",
        tip.x,
        tip.y,
        base.x - uy * half,
        base.y + ux * half,
        base.x + uy * half,
        base.y - ux * half
    );
}

/// A label centered at `at`, rotated by `angle_deg` (pixel space, clockwise positive).
pub(crate) fn label(svg: &mut String, at: Point, angle_deg: f64, text: &str, size: f64) {
    put!(
        svg,
        "<text x=\"{:.2}\" y=\"{:.2}\" font-family=\"{FONT}\" font-size=\"{:.2}\" \
         text-anchor=\"middle\" fill=\"black\" stroke=\"none\" \
         transform=\"rotate({:.3} {:.2} {:.2})\">{}</text>\n",
        at.x,
        at.y,
        size,
        angle_deg,
        at.x,
        at.y,
        escape(text)
    );
}
