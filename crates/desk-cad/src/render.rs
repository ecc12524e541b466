//! Model → SVG → PNG rendering for reference images and candidate previews.
//!
//! Fixed 1600x1200 raster, white background, black strokes, extents fit with a 120 px
//! margin. Dimensions are drawn with extension lines, dimension lines, arrowheads and their
//! measured value (`120`, `R20`, `Ø40`, `45°`); text entities are drawn as text in DejaVu Sans
//! from the system font database; linetypes as dash patterns, hatches, leaders and
//! multi-line text by [`drafting`]. Output bytes depend only on the model and the installed
//! fonts. [`presentation`] compares two renders for the scorer.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

use crate::error::CadError;
use crate::model::{DimKind, Geometry, Model, Point};

mod dims;
mod drafting;
pub mod overlay;
pub(crate) mod presentation;

/// Raster width in pixels.
pub const WIDTH: u32 = 1600;
/// Raster height in pixels.
pub const HEIGHT: u32 = 1200;
const MARGIN_PX: f64 = 120.0;
const ARROW_PX: f64 = 16.0;
const LABEL_PX: f64 = 24.0;
const GEOMETRY_STROKE: &str = "2.5";
const DIM_STROKE: &str = "1.5";
const FONT: &str = "DejaVu Sans";

/// World-to-pixel mapping (y flipped).
#[derive(Clone, Copy)]
pub(crate) struct View {
    scale: f64,
    min: Point,
    offset: Point,
}

impl View {
    pub(crate) fn fit(model: &Model) -> View {
        let points: Vec<Point> = model
            .entities
            .iter()
            .flat_map(|e| extent_points(&e.geometry))
            .collect();
        let (mut min, mut max) = (Point::new(0.0, 0.0), Point::new(1.0, 1.0));
        if let Some(first) = points.first() {
            min = *first;
            max = *first;
            for p in &points {
                min = Point::new(min.x.min(p.x), min.y.min(p.y));
                max = Point::new(max.x.max(p.x), max.y.max(p.y));
            }
        }
        let span_x = (max.x - min.x).max(1e-6);
        let span_y = (max.y - min.y).max(1e-6);
        let avail_x = f64::from(WIDTH) - 2.0 * MARGIN_PX;
        let avail_y = f64::from(HEIGHT) - 2.0 * MARGIN_PX;
        let scale = (avail_x / span_x).min(avail_y / span_y);
        let offset = Point::new(
            (f64::from(WIDTH) - span_x * scale) / 2.0,
            (f64::from(HEIGHT) - span_y * scale) / 2.0,
        );
        View { scale, min, offset }
    }

    /// The view that fits two drawings together (gold and candidate, for comparing them).
    pub(crate) fn fit_both(first: &Model, second: &Model) -> View {
        View::fit(&Model {
            entities: first
                .entities
                .iter()
                .chain(&second.entities)
                .cloned()
                .collect(),
        })
    }

    pub(crate) fn px(&self, p: Point) -> Point {
        Point::new(
            (p.x - self.min.x) * self.scale + self.offset.x,
            f64::from(HEIGHT) - ((p.y - self.min.y) * self.scale + self.offset.y),
        )
    }
}

/// Points whose bounding box covers the entity's drawn extent (labels excluded).
fn extent_points(geometry: &Geometry) -> Vec<Point> {
    match geometry {
        Geometry::Line { a, b } => vec![*a, *b],
        Geometry::Circle { center, r } => vec![
            Point::new(center.x - r, center.y - r),
            Point::new(center.x + r, center.y + r),
        ],
        Geometry::Arc {
            center,
            r,
            start_deg,
            end_deg,
        } => {
            let sweep = arc_sweep(*start_deg, *end_deg);
            (0..=64)
                .map(|step| center.polar(*r, start_deg + sweep * f64::from(step) / 64.0))
                .collect()
        }
        Geometry::Polyline { points, .. } => points.clone(),
        Geometry::Text {
            insert,
            height,
            value,
        } => {
            let width = 0.62 * height * value.chars().count() as f64;
            vec![*insert, Point::new(insert.x + width, insert.y + height)]
        }
        Geometry::LinearDim {
            p1,
            p2,
            dim_line_point,
            kind,
        } => {
            let (d1, d2, _, _) = linear_dim_frame(*p1, *p2, *dim_line_point, *kind);
            vec![*p1, *p2, d1, d2]
        }
        Geometry::RadialDim {
            center,
            point_on_circle,
            ..
        } => vec![*center, *point_on_circle],
        other => drafting::extent_points(other),
    }
}

/// Counter-clockwise sweep from `start` to `end` in degrees, in (0, 360].
pub(crate) fn arc_sweep(start: f64, end: f64) -> f64 {
    let sweep = (end - start).rem_euclid(360.0);
    if sweep < 1e-9 { 360.0 } else { sweep }
}

/// Dimension line ends `d1`, `d2`, measuring direction `u` and normal `n` (world units).
fn linear_dim_frame(
    p1: Point,
    p2: Point,
    dl: Point,
    kind: DimKind,
) -> (Point, Point, Point, Point) {
    let u = match kind {
        DimKind::Horizontal => Point::new(1.0, 0.0),
        DimKind::Vertical => Point::new(0.0, 1.0),
        DimKind::Aligned => {
            let len = p1.dist(p2).max(1e-9);
            Point::new((p2.x - p1.x) / len, (p2.y - p1.y) / len)
        }
    };
    let n = Point::new(-u.y, u.x);
    let project = |p: Point| {
        let t = (dl.x - p.x) * n.x + (dl.y - p.y) * n.y;
        Point::new(p.x + n.x * t, p.y + n.y * t)
    };
    (project(p1), project(p2), u, n)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes one SVG element; writing into a `String` cannot fail.
macro_rules! put {
    ($svg:expr, $($arg:tt)*) => {
        let _ = write!($svg, $($arg)*);
    };
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

fn draw(svg: &mut String, view: &View, geometry: &Geometry) {
    match geometry {
        Geometry::Line { a, b } => line(svg, view.px(*a), view.px(*b), GEOMETRY_STROKE),
        Geometry::Circle { center, r } => {
            let c = view.px(*center);
            put!(
                svg,
                "<circle cx=\"{:.2}\" cy=\"{:.2}\" r=\"{:.2}\" stroke-width=\"{GEOMETRY_STROKE}\"/>\n",
                c.x,
                c.y,
                r * view.scale
            );
        }
        Geometry::Arc {
            center,
            r,
            start_deg,
            end_deg,
        } => {
            let sweep = arc_sweep(*start_deg, *end_deg);
            let mut d = String::new();
            for step in 0..=96 {
                let p = view.px(center.polar(*r, start_deg + sweep * f64::from(step) / 96.0));
                put!(
                    d,
                    "{}{:.2} {:.2} ",
                    if step == 0 { "M" } else { "L" },
                    p.x,
                    p.y
                );
            }
            put!(
                svg,
                "<path d=\"{}\" stroke-width=\"{GEOMETRY_STROKE}\"/>\n",
                d.trim_end()
            );
        }
        Geometry::Polyline { points, closed } => {
            let mut d = String::new();
            for (idx, p) in points.iter().enumerate() {
                let p = view.px(*p);
                put!(
                    d,
                    "{}{:.2} {:.2} ",
                    if idx == 0 { "M" } else { "L" },
                    p.x,
                    p.y
                );
            }
            if *closed {
                d.push('Z');
            }
            put!(
                svg,
                "<path d=\"{}\" stroke-width=\"{GEOMETRY_STROKE}\"/>\n",
                d.trim_end()
            );
        }
        Geometry::Text {
            insert,
            height,
            value,
        } => {
            let at = view.px(*insert);
            put!(
                svg,
                "<text x=\"{:.2}\" y=\"{:.2}\" font-family=\"{FONT}\" font-size=\"{:.2}\" \
                 fill=\"black\" stroke=\"none\">{}</text>\n",
                at.x,
                at.y,
                height * view.scale / 0.73,
                escape(value)
            );
        }
        Geometry::LinearDim {
            p1,
            p2,
            dim_line_point,
            kind,
        } => dims::draw_linear_dim(svg, view, *p1, *p2, *dim_line_point, *kind, geometry),
        Geometry::RadialDim {
            center,
            point_on_circle,
            diameter,
        } => dims::draw_radial_dim(svg, view, *center, *point_on_circle, *diameter, geometry),
        other => drafting::draw(svg, view, other),
    }
}

/// Renders `model` as an SVG document of [`WIDTH`] x [`HEIGHT`] pixels.
pub fn render_svg(model: &Model) -> String {
    svg_in_view(model, &View::fit(model))
}

/// Renders `model` as an SVG document through `view`.
pub(crate) fn svg_in_view(model: &Model, view: &View) -> String {
    let mut svg = String::new();
    put!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\">\n<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"white\"/>\n\
         <g fill=\"none\" stroke=\"black\" stroke-linecap=\"round\" stroke-linejoin=\"round\">\n"
    );
    for entity in &model.entities {
        let dashes = entity
            .linetype
            .as_deref()
            .and_then(|name| drafting::dasharray(name, view));
        if let Some(dashes) = &dashes {
            put!(svg, "<g stroke-dasharray=\"{dashes}\">\n");
        }
        draw(&mut svg, view, &entity.geometry);
        if dashes.is_some() {
            svg.push_str("</g>\n");
        }
    }
    svg.push_str("</g>\n</svg>\n");
    svg
}

/// The system font database, loaded once per process.
fn font_database() -> Arc<usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            db.set_sans_serif_family(FONT);
            Arc::new(db)
        })
        .clone()
}

/// Renders `model` to PNG bytes.
pub fn render_png(model: &Model) -> Result<Vec<u8>, CadError> {
    svg_to_png(&render_svg(model))
}

/// Rasterizes an SVG document of [`WIDTH`] x [`HEIGHT`] pixels to PNG bytes.
pub(crate) fn svg_to_png(svg: &str) -> Result<Vec<u8>, CadError> {
    svg_to_pixmap(svg)?
        .encode_png()
        .map_err(|err| CadError::Render(format!("failed to encode png: {err}")))
}

/// Rasterizes an SVG document of [`WIDTH`] x [`HEIGHT`] pixels.
pub(crate) fn svg_to_pixmap(svg: &str) -> Result<tiny_skia::Pixmap, CadError> {
    let options = usvg::Options {
        fontdb: font_database(),
        font_family: FONT.to_owned(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(svg, &options)
        .map_err(|err| CadError::Render(format!("invalid svg: {err}")))?;
    let mut pixmap = tiny_skia::Pixmap::new(WIDTH, HEIGHT)
        .ok_or_else(|| CadError::Render("failed to allocate pixmap".to_owned()))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    Ok(pixmap)
}
