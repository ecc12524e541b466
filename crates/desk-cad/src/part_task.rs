//! Building a 3D task's files: the scorer-private gold `.FCStd`, made by our own script
//! (`solid/build_part.py`) in headless FreeCAD inside the judge's sandbox, and the public
//! reference PNG: the part's views as OCCT's hidden-line removal projects them (visible edges
//! solid, hidden edges dashed), laid out on one sheet at one common scale by our own renderer.
//!
//! Invariant: the public PNG is a pure function of the spec and the views (coordinates rounded
//! to 0.001 mm by the builder, fixed layout, fixed fonts), so the same seed gives the same
//! bytes; the gold file itself is private and not byte-stable (FreeCAD stamps it).

use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

use crate::CadError;
use crate::generate3d::{PartSpec, SheetSpec, View};
use crate::model::{Point, format_value};
use crate::render::{HEIGHT, WIDTH, arrow, label, line, svg_to_png};
use crate::solid::sandbox;

const BUILD: &str = include_str!("solid/build_part.py");
const CELL_MARGIN_PX: f64 = 95.0;
const NOTES_PX: f64 = 100.0;
const LABEL_PX: f64 = 26.0;

/// One projected view: polylines in view coordinates (mm, x right, y up).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectedView {
    /// The view's label.
    pub name: String,
    /// An orthographic view (dimensioned, hidden edges shown), not the pictorial one.
    pub orthographic: bool,
    /// Visible edges.
    pub visible: Vec<Vec<[f64; 2]>>,
    /// Hidden edges.
    pub hidden: Vec<Vec<[f64; 2]>>,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum BuildReport {
    Ok {
        volume: f64,
        views: Vec<ProjectedView>,
    },
    Failed {
        reason: String,
    },
}

/// What a gold build made.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltPart {
    /// The gold solid's volume in mm³.
    pub volume: f64,
    /// The projected views, in the requested order.
    pub views: Vec<ProjectedView>,
}

/// Builds `spec` (and `sheet`, a TechDraw page, when given) with sandboxed freecadcmd, writes
/// the document to `gold_out` and returns the projections of `views`.
pub fn build_part(
    spec: &PartSpec,
    sheet: Option<&SheetSpec>,
    views: &[View],
    gold_out: &Path,
) -> Result<BuiltPart, CadError> {
    let work = sandbox::work_dir()?;
    let result = build_in(&work, spec, sheet, views, gold_out);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn build_in(
    work: &Path,
    spec: &PartSpec,
    sheet: Option<&SheetSpec>,
    views: &[View],
    gold_out: &Path,
) -> Result<BuiltPart, CadError> {
    // A pictorial view shows no hidden edges; orthographic views do.
    let frames: Vec<(&str, [f64; 3], [f64; 3], bool)> = views
        .iter()
        .map(|view| {
            let (direction, right) = view.frame();
            (view.label(), direction, right, *view != View::Isometric)
        })
        .collect();
    let sheet = sheet.map(|sheet| {
        let views: Vec<_> = sheet
            .views
            .iter()
            .map(|view| {
                let (direction, right) = view.frame();
                (view.label(), direction, right, *view != View::Isometric)
            })
            .collect();
        serde_json::json!({ "name": sheet.name, "views": views, "notes": sheet.notes })
    });
    let request = serde_json::json!({ "spec": spec, "views": frames, "sheet": sheet });
    let request_path = work.join("spec.json");
    let bytes = serde_json::to_vec(&request).map_err(|source| CadError::Json {
        op: "encode",
        path: request_path.clone(),
        source,
    })?;
    std::fs::write(&request_path, bytes).map_err(|source| CadError::Io {
        op: "write",
        path: request_path.clone(),
        source,
    })?;
    let out_dir = work.join("out");
    std::fs::create_dir(&out_dir).map_err(|source| CadError::Io {
        op: "create directory",
        path: out_dir.clone(),
        source,
    })?;
    let stdout = sandbox::run_freecad(BUILD, &[(&request_path, "/in/spec.json")], Some(&out_dir))?;
    match sandbox::parse_report(&stdout)? {
        BuildReport::Failed { reason } => Err(CadError::Judge(format!("gold build: {reason}"))),
        BuildReport::Ok { volume, views } => {
            let made = out_dir.join("gold.FCStd");
            std::fs::copy(&made, gold_out).map_err(|source| CadError::Io {
                op: "copy",
                path: gold_out.to_path_buf(),
                source,
            })?;
            Ok(BuiltPart { volume, views })
        }
    }
}

/// Lays the views out on a 2 x 2 grid at one common scale, writes the note lines in the lower
/// left corner and renders the sheet to PNG.
pub fn render_views_png(views: &[ProjectedView], notes: &[String]) -> Result<Vec<u8>, CadError> {
    svg_to_png(&render_views_svg(views, notes))
}

fn bounds(view: &ProjectedView) -> Option<[f64; 4]> {
    let mut points = view.visible.iter().chain(&view.hidden).flatten();
    let first = points.next()?;
    let mut b = [first[0], first[1], first[0], first[1]];
    for p in points {
        b = [
            b[0].min(p[0]),
            b[1].min(p[1]),
            b[2].max(p[0]),
            b[3].max(p[1]),
        ];
    }
    Some(b)
}

/// The sheet as SVG: one cell per view (row-major), visible edges solid, hidden edges dashed,
/// each orthographic view dimensioned as the gold sheet is.
pub fn render_views_svg(views: &[ProjectedView], notes: &[String]) -> String {
    // Two rows of cells above a strip for the notes.
    let (cell_w, cell_h) = (f64::from(WIDTH) / 2.0, (f64::from(HEIGHT) - NOTES_PX) / 2.0);
    let fit = |b: [f64; 4]| {
        let span_x = (b[2] - b[0]).max(1e-6);
        let span_y = (b[3] - b[1]).max(1e-6);
        ((cell_w - 2.0 * CELL_MARGIN_PX) / span_x).min((cell_h - 2.0 * CELL_MARGIN_PX) / span_y)
    };
    let scale = views
        .iter()
        .filter_map(bounds)
        .map(fit)
        .fold(f64::INFINITY, f64::min);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\">\n<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         fill=\"white\"/>\n<g fill=\"none\" stroke=\"black\" stroke-linecap=\"round\" \
         stroke-linejoin=\"round\">\n"
    );
    for (view_idx, view) in views.iter().take(4).enumerate() {
        let Some(b) = bounds(view) else { continue };
        let origin_x = cell_w * (view_idx % 2) as f64;
        let origin_y = cell_h * (view_idx / 2) as f64;
        let center = ((b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0);
        let to_px = |p: &[f64; 2]| {
            (
                origin_x + cell_w / 2.0 + (p[0] - center.0) * scale,
                origin_y + cell_h / 2.0 - 12.0 - (p[1] - center.1) * scale,
            )
        };
        for (lines, style) in [
            (&view.visible, "stroke-width=\"2.5\""),
            (
                &view.hidden,
                "stroke-width=\"1.5\" stroke-dasharray=\"10 6\"",
            ),
        ] {
            for line in lines {
                let mut d = String::new();
                for (point_idx, point) in line.iter().enumerate() {
                    let (x, y) = to_px(point);
                    let _ = write!(
                        d,
                        "{}{x:.2} {y:.2} ",
                        if point_idx == 0 { "M" } else { "L" }
                    );
                }
                let _ = writeln!(svg, "<path d=\"{}\" {style}/>", d.trim_end());
            }
        }
        if view.orthographic {
            dimension_view(&mut svg, view, &|p: &[f64; 2]| {
                let (x, y) = to_px(p);
                Point::new(x, y)
            });
        }
        let label_gap = if view.orthographic { 84.0 } else { 44.0 };
        let label_y = origin_y + cell_h / 2.0 - 12.0 + (b[3] - b[1]) * scale / 2.0 + label_gap;
        let _ = writeln!(
            svg,
            "<text x=\"{:.2}\" y=\"{label_y:.2}\" font-family=\"DejaVu Sans\" font-size=\"{LABEL_PX}\" \
             text-anchor=\"middle\" fill=\"black\" stroke=\"none\">{}</text>",
            origin_x + cell_w / 2.0,
            escape_text(&view.name)
        );
    }
    for (line_idx, note) in notes.iter().enumerate() {
        let y = f64::from(HEIGHT) - NOTES_PX + 30.0 + 26.0 * line_idx as f64;
        let _ = writeln!(
            svg,
            "<text x=\"24\" y=\"{y:.2}\" font-family=\"DejaVu Sans\" font-size=\"20\" \
             fill=\"black\" stroke=\"none\">{}</text>",
            escape_text(note)
        );
    }
    svg.push_str("</g>\n</svg>\n");
    svg
}

/// The longest visible straight edge that is horizontal (or vertical) in the view, collinear
/// touching pieces joined (hidden-line removal splits edges where others cross them); on a
/// tie the lowest horizontal or the rightmost vertical one, so its extension lines stay short.
fn longest(view: &ProjectedView, horizontal: bool) -> Option<([f64; 2], [f64; 2])> {
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
fn largest_circle(view: &ProjectedView) -> Option<([f64; 2], f64)> {
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
fn dimension_view(svg: &mut String, view: &ProjectedView, to_px: &dyn Fn(&[f64; 2]) -> Point) {
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

fn escape_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests;
