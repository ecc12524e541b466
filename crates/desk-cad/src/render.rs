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
use crate::model::{Geometry, Model};

mod dims;
mod drafting;
pub mod overlay;
pub(crate) mod presentation;
mod svg;
mod view;

use svg::{FONT, GEOMETRY_STROKE, escape, put};
pub(crate) use svg::{arrow, label, line};
pub use view::{HEIGHT, WIDTH};
pub(crate) use view::{View, arc_sweep};

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
