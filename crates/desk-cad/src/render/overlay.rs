//! The candidate drawn over the gold, by the scorer's own matching: matched items green (the
//! candidate's), gold-only items red, candidate-only items blue, both drawings in one view
//! fitted to their union. The report shows it beside the per-category scores.

use std::fmt::Write as _;

use super::{HEIGHT, View, WIDTH, draw, svg_to_png};
use crate::error::CadError;
use crate::model::{Geometry, Model};
use crate::normalize::{Item, Placed, items};
use crate::score::{CategoryMatch, MATCHED_CATEGORIES, match_by_category};

/// Matched items (the candidate's), in green.
pub const MATCHED: &str = "#1a9e1a";
/// Gold items the candidate lacks, in red.
pub const GOLD_ONLY: &str = "#d62020";
/// Candidate items the gold lacks, in blue.
pub const CANDIDATE_ONLY: &str = "#2050e0";

/// Each scorable item of `model` with the geometry that draws it (a polyline's edge as a
/// line, anything else as its entity).
fn parts(model: &Model) -> Vec<(Item, Geometry)> {
    let mut out = Vec::new();
    for entity in &model.entities {
        let single = Model {
            entities: vec![entity.clone()],
        };
        for Placed { item, .. } in items(&single) {
            let geometry = match &item {
                Item::Segment(a, b) => Geometry::Line { a: *a, b: *b },
                _ => entity.geometry.clone(),
            };
            out.push((item, geometry));
        }
    }
    out
}

/// The overlay as an SVG document of [`WIDTH`] x [`HEIGHT`] pixels.
pub fn render_overlay_svg(gold: &Model, candidate: &Model) -> String {
    let view = View::fit_both(gold, candidate);
    let (gold_parts, candidate_parts) = (parts(gold), parts(candidate));
    let mut layers = [String::new(), String::new(), String::new()];
    for category in MATCHED_CATEGORIES {
        let CategoryMatch {
            gold: gold_of,
            candidate: candidate_of,
            pairs,
        } = match_by_category(category, &gold_parts, &candidate_parts, |(item, _)| item);
        for (idx, (_, geometry)) in gold_of.iter().enumerate() {
            if !pairs.iter().any(|(g, _)| *g == idx) {
                draw(&mut layers[0], &view, geometry);
            }
        }
        for (idx, (_, geometry)) in candidate_of.iter().enumerate() {
            let layer = if pairs.iter().any(|(_, c)| *c == idx) {
                2
            } else {
                1
            };
            draw(&mut layers[layer], &view, geometry);
        }
    }
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\">\n<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         fill=\"white\"/>\n"
    );
    for (layer, colour) in layers.iter().zip([GOLD_ONLY, CANDIDATE_ONLY, MATCHED]) {
        // Labels are drawn filled black; here they take their layer's colour.
        let layer = layer.replace("fill=\"black\"", &format!("fill=\"{colour}\""));
        let _ = write!(
            svg,
            "<g fill=\"none\" stroke=\"{colour}\" stroke-linecap=\"round\" \
             stroke-linejoin=\"round\">\n{layer}</g>\n"
        );
    }
    for (row, (colour, text)) in [
        (MATCHED, "matched"),
        (GOLD_ONLY, "gold only"),
        (CANDIDATE_ONLY, "candidate only"),
    ]
    .iter()
    .enumerate()
    {
        let y = 30 + row * 30;
        let _ = writeln!(
            svg,
            "<rect x=\"20\" y=\"{}\" width=\"24\" height=\"16\" fill=\"{colour}\"/>\
             <text x=\"52\" y=\"{}\" font-family=\"DejaVu Sans\" font-size=\"20\" \
             fill=\"#222\">{text}</text>",
            y - 14,
            y
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The overlay as PNG bytes.
pub fn render_overlay_png(gold: &Model, candidate: &Model) -> Result<Vec<u8>, CadError> {
    svg_to_png(&render_overlay_svg(gold, candidate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Entity, Point};

    fn line(ax: f64, ay: f64, bx: f64, by: f64) -> Entity {
        Entity::new(Geometry::Line {
            a: Point::new(ax, ay),
            b: Point::new(bx, by),
        })
    }

    #[test]
    fn colours_follow_the_matching() {
        let gold = Model {
            entities: vec![line(0.0, 0.0, 100.0, 0.0), line(0.0, 0.0, 0.0, 50.0)],
        };
        let candidate = Model {
            entities: vec![line(0.0, 0.0, 100.0, 0.0), line(10.0, 10.0, 90.0, 40.0)],
        };
        let svg = render_overlay_svg(&gold, &candidate);
        let group = |colour: &str| {
            let start = svg
                .find(&format!("<g fill=\"none\" stroke=\"{colour}\""))
                .unwrap();
            let end = start + svg[start..].find("</g>").unwrap();
            svg[start..end].matches("<line").count() + svg[start..end].matches("<path").count()
        };
        assert_eq!(group(MATCHED), 1, "{svg}");
        assert_eq!(group(GOLD_ONLY), 1, "{svg}");
        assert_eq!(group(CANDIDATE_ONLY), 1, "{svg}");
        assert!(
            render_overlay_png(&gold, &candidate)
                .unwrap()
                .starts_with(b"\x89PNG")
        );
    }
}
