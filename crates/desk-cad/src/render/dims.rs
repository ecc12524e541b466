//! Linear and radial dimensions in the render: extension lines, dimension line, arrows, label.

use super::svg::{DIM_STROKE, LABEL_PX, arrow, label, line};
use super::view::{View, linear_dim_frame};
use crate::model::{DimKind, Geometry, Point};

pub(super) fn draw_linear_dim(
    svg: &mut String,
    view: &View,
    p1: Point,
    p2: Point,
    dl: Point,
    kind: DimKind,
    geometry: &Geometry,
) {
    let (d1, d2, _, _) = linear_dim_frame(p1, p2, dl, kind);
    let (p1, p2, d1, d2) = (view.px(p1), view.px(p2), view.px(d1), view.px(d2));
    for (origin, end) in [(p1, d1), (p2, d2)] {
        let len = origin.dist(end);
        if len > 1e-6 {
            let (ux, uy) = ((end.x - origin.x) / len, (end.y - origin.y) / len);
            let start = Point::new(origin.x + ux * 4.0, origin.y + uy * 4.0);
            let stop = Point::new(end.x + ux * 6.0, end.y + uy * 6.0);
            line(svg, start, stop, DIM_STROKE);
        }
    }
    line(svg, d1, d2, DIM_STROKE);
    arrow(svg, d1, Point::new(d1.x - d2.x, d1.y - d2.y));
    arrow(svg, d2, Point::new(d2.x - d1.x, d2.y - d1.y));
    let mut angle = (d2.y - d1.y).atan2(d2.x - d1.x).to_degrees();
    // Keep labels readable: left to right, or bottom to top for vertical dimensions.
    if angle >= 90.0 - 1e-9 {
        angle -= 180.0;
    } else if angle < -90.0 - 1e-9 {
        angle += 180.0;
    }
    // Place the label just above the dimension line in its own (rotated) frame.
    let rad = angle.to_radians();
    let mid = d1.mid(d2);
    let at = Point::new(mid.x + rad.sin() * 8.0, mid.y - rad.cos() * 8.0);
    if let Some(text) = geometry.dimension_label() {
        label(svg, at, angle, &text, LABEL_PX);
    }
}

pub(super) fn draw_radial_dim(
    svg: &mut String,
    view: &View,
    center: Point,
    point_on_circle: Point,
    diameter: bool,
    geometry: &Geometry,
) {
    let c = view.px(center);
    let p = view.px(point_on_circle);
    let len = c.dist(p).max(1e-9);
    let (ux, uy) = ((p.x - c.x) / len, (p.y - c.y) / len);
    let start = if diameter {
        Point::new(2.0 * c.x - p.x, 2.0 * c.y - p.y)
    } else {
        c
    };
    let elbow = Point::new(p.x + ux * 40.0, p.y + uy * 40.0);
    let landing_dir = if ux >= 0.0 { 1.0 } else { -1.0 };
    let landing = Point::new(elbow.x + landing_dir * 70.0, elbow.y);
    line(svg, start, elbow, DIM_STROKE);
    line(svg, elbow, landing, DIM_STROKE);
    arrow(svg, p, Point::new(ux, uy));
    if diameter {
        arrow(svg, start, Point::new(-ux, -uy));
    }
    if let Some(text) = geometry.dimension_label() {
        let at = Point::new(elbow.mid(landing).x, elbow.y - 8.0);
        label(svg, at, 0.0, &text, LABEL_PX);
    }
}
