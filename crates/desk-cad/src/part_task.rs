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
use crate::model::Point;
use crate::render::{HEIGHT, WIDTH, svg_to_png};
use crate::solid::sandbox;

mod dims;
mod view;

use dims::dimension_view;
pub use view::ProjectedView;

const BUILD: &str = include_str!("solid/build_part.py");
const CELL_MARGIN_PX: f64 = 95.0;
const NOTES_PX: f64 = 100.0;
const LABEL_PX: f64 = 26.0;

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
    let frames: Vec<serde_json::Value> = views.iter().map(view_request).collect();
    let sheet = sheet.map(|sheet| {
        let views: Vec<serde_json::Value> = sheet.views.iter().map(view_request).collect();
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
    match sandbox::parse_report(&stdout.finished()?)? {
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

/// One view as the builder takes it: `[label, direction, right, orthographic, section plane Y,
/// section symbol]` (a pictorial view shows no hidden edges; orthographic views do, sections
/// excepted).
fn view_request(view: &View) -> serde_json::Value {
    let (direction, right) = view.frame();
    serde_json::json!([
        view.label(),
        direction,
        right,
        view.orthographic(),
        view.section_plane_y(),
        view.section_symbol()
    ])
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
         fill=\"white\"/>\n<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" \
         width=\"12\" height=\"12\" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" \
         x2=\"0\" y2=\"12\" stroke=\"black\" stroke-width=\"1.2\"/></pattern></defs>\n\
         <g fill=\"none\" stroke=\"black\" stroke-linecap=\"round\" stroke-linejoin=\"round\">\n"
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
        // A section's cut faces: hatched, holes left open (even-odd).
        for face in &view.cut {
            let mut d = String::new();
            for ring in face {
                for (point_idx, point) in ring.iter().enumerate() {
                    let (x, y) = to_px(point);
                    let _ = write!(
                        d,
                        "{}{x:.2} {y:.2} ",
                        if point_idx == 0 { "M" } else { "L" }
                    );
                }
                d.push_str("Z ");
            }
            let _ = writeln!(
                svg,
                "<path d=\"{}\" fill=\"url(#hatch)\" fill-rule=\"evenodd\" stroke=\"none\"/>",
                d.trim_end()
            );
        }
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
        if let Some(y) = view.cutting_plane {
            cutting_plane(&mut svg, to_px(&[b[0], y]), to_px(&[b[2], y]));
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

/// A chain line across the view from `left` to `right` (pixels), extended past the outline,
/// with the section's letter at both ends.
fn cutting_plane(svg: &mut String, left: (f64, f64), right: (f64, f64)) {
    let y = left.1;
    let (x0, x1) = (left.0 - 30.0, right.0 + 30.0);
    let _ = writeln!(
        svg,
        "<path d=\"M{x0:.2} {y:.2} L{x1:.2} {y:.2}\" stroke-width=\"1.5\" \
         stroke-dasharray=\"24 6 4 6\"/>"
    );
    for x in [x0 - 14.0, x1 + 14.0] {
        let _ = writeln!(
            svg,
            "<text x=\"{x:.2}\" y=\"{:.2}\" font-family=\"DejaVu Sans\" font-size=\"22\" \
             text-anchor=\"middle\" fill=\"black\" stroke=\"none\">A</text>",
            y + 8.0
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
