//! The reference sheet's dimensions, chosen as the gold sheet's are: the longest visible
//! horizontal and vertical straight edges of an orthographic view (collinear pieces joined)
//! and its largest visible full circle.

use super::view::ProjectedView;
use crate::model::{Point, format_value};
use crate::render::{arrow, label, line};

/// The longest visible straight edge that is horizontal (or vertical) in the view, collinear
/// touching pieces joined (hidden-line removal splits edges where others cross them); on a
/// tie the lowest horizontal or the rightmost vertical one, so its extension lines stay short.
pub(super) fn longest(view: &ProjectedView, horizontal: bool) -> Option<([f64; 2], [f64; 2])> {
    // Along: the coordinate that varies; across: the one that stays.
    let (along, across) = if horizontal { (0, 1) } else { (1, 0) };
    let mut spans: Vec<(f64, f64, f64)> = view
        .visible
        .iter()
        .filter(|line| line.len() == 2 && (line[0][across] - line[1][across]).abs() < 1e-6)
        .map(|line| {
            let (a, b) = (line[0][along], line[1][along]);
            (line[0][across], a.min(b), a.max(b))
        })
        .collect();
    spans.sort_by(|p, q| p.partial_cmp(q).unwrap_or(std::cmp::Ordering::Equal));
    let mut joined: Vec<(f64, f64, f64)> = Vec::new();
    for span in spans {
        match joined.last_mut() {
            Some(last) if (last.0 - span.0).abs() < 1e-6 && span.1 <= last.2 + 1e-6 => {
                last.2 = last.2.max(span.2);
            }
            _ => joined.push(span),
        }
    }
    let better = |candidate: &(f64, f64, f64), best: &(f64, f64, f64)| {
        let (length, best_length) = (candidate.2 - candidate.1, best.2 - best.1);
        if (length - best_length).abs() > 1e-6 {
            return length > best_length;
        }
        if horizontal {
            candidate.0 < best.0
        } else {
            candidate.0 > best.0
        }
    };
    let best = joined
        .iter()
        .fold(None, |best: Option<&(f64, f64, f64)>, span| match best {
            Some(current) if !better(span, current) => best,
            _ => Some(span),
        })?;
    let point = |t: f64| if horizontal { [t, best.0] } else { [best.0, t] };
    Some((point(best.1), point(best.2)))
}

/// The largest visible full circle (a closed polyline whose points share one centre).
pub(super) fn largest_circle(view: &ProjectedView) -> Option<([f64; 2], f64)> {
    let mut best: Option<([f64; 2], f64)> = None;
    for line in &view.visible {
        let (Some(first), Some(last)) = (line.first(), line.last()) else {
            continue;
        };
        if line.len() < 8 || (first[0] - last[0]).abs() > 1e-3 || (first[1] - last[1]).abs() > 1e-3
        {
            continue;
        }
        let n_points = (line.len() - 1) as f64;
        let cx = line[1..].iter().map(|p| p[0]).sum::<f64>() / n_points;
        let cy = line[1..].iter().map(|p| p[1]).sum::<f64>() / n_points;
        let radii: Vec<f64> = line.iter().map(|p| (p[0] - cx).hypot(p[1] - cy)).collect();
        let r = radii.iter().sum::<f64>() / radii.len() as f64;
        if radii.iter().all(|ri| (ri - r).abs() < 0.01) && best.is_none_or(|(_, br)| r > br + 1e-9)
        {
            best = Some(([cx, cy], r));
        }
    }
    best
}

/// Draws the dimensions the sheet carries: the longest horizontal edge below the view, the
/// longest vertical edge to its right, the largest circle's diameter on a leader.
pub(super) fn dimension_view(
    svg: &mut String,
    view: &ProjectedView,
    to_px: &dyn Fn(&[f64; 2]) -> Point,
) {
    let all = || view.visible.iter().chain(&view.hidden).flatten();
    let bottom = all().map(|p| to_px(p).y).fold(f64::NEG_INFINITY, f64::max);
    let right = all().map(|p| to_px(p).x).fold(f64::NEG_INFINITY, f64::max);
    if let Some((a, b)) = longest(view, true) {
        let (pa, pb) = (to_px(&a), to_px(&b));
        let y = bottom + 40.0;
        line(
            svg,
            Point::new(pa.x, pa.y + 4.0),
            Point::new(pa.x, y + 6.0),
            "1.2",
        );
        line(
            svg,
            Point::new(pb.x, pb.y + 4.0),
            Point::new(pb.x, y + 6.0),
            "1.2",
        );
        line(svg, Point::new(pa.x, y), Point::new(pb.x, y), "1.2");
        arrow(svg, Point::new(pa.x, y), Point::new(pa.x - pb.x, 0.0));
        arrow(svg, Point::new(pb.x, y), Point::new(pb.x - pa.x, 0.0));
        let text = format_value((a[0] - b[0]).abs());
        label(
            svg,
            Point::new((pa.x + pb.x) / 2.0, y - 8.0),
            0.0,
            &text,
            20.0,
        );
    }
    if let Some((a, b)) = longest(view, false) {
        let (pa, pb) = (to_px(&a), to_px(&b));
        let x = right + 40.0;
        line(
            svg,
            Point::new(pa.x + 4.0, pa.y),
            Point::new(x + 6.0, pa.y),
            "1.2",
        );
        line(
            svg,
            Point::new(pb.x + 4.0, pb.y),
            Point::new(x + 6.0, pb.y),
            "1.2",
        );
        line(svg, Point::new(x, pa.y), Point::new(x, pb.y), "1.2");
        arrow(svg, Point::new(x, pa.y), Point::new(0.0, pa.y - pb.y));
        arrow(svg, Point::new(x, pb.y), Point::new(0.0, pb.y - pa.y));
        let text = format_value((a[1] - b[1]).abs());
        label(
            svg,
            Point::new(x - 8.0, (pa.y + pb.y) / 2.0),
            -90.0,
            &text,
            20.0,
        );
    }
    if let Some((center, r)) = largest_circle(view) {
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let rim = to_px(&[center[0] + r * s, center[1] + r * s]);
        let elbow = Point::new(rim.x + 40.0, rim.y - 40.0);
        let end = Point::new(elbow.x + 70.0, elbow.y);
        line(svg, rim, elbow, "1.2");
        line(svg, elbow, end, "1.2");
        arrow(svg, rim, Point::new(rim.x - elbow.x, rim.y - elbow.y));
        let text = format!("\u{d8}{}", format_value(2.0 * r));
        label(
            svg,
            Point::new((elbow.x + end.x) / 2.0, elbow.y - 8.0),
            0.0,
            &text,
            20.0,
        );
    }
}
