//! The sheet's trusted render and its `presentation` part.
//!
//! The judge recomputes `Layout1` headless and hands over its drawing in page millimetres
//! ([`SheetDrawing`]: each view's visible and hidden edges, a section's hatched cut faces, the
//! dimensions with their values, the notes). It is turned into this crate's 2D [`Model`]
//! (edges as polylines, hidden ones in the `HIDDEN` linetype, cut faces as `ANSI31` hatches,
//! a linear dimension as its line and its value, any other dimension as its value at its
//! label, notes as multi-line text) and drawn by the 2D renderer at 1600x1200, fitted to its
//! own content: the task fixes neither the page size nor the page scale, so the render is the
//! drawing's, not the page's.
//!
//! `presentation` compares the renders view by view: each matched pair of views (kind and
//! direction, as `views`) is rendered alone, each fitted to itself, and scored by the 2D
//! judge's ink F1 ([`crate::render::presentation`]); the part is the sum of these F1s over
//! the mean number of gold and candidate views, so a missing or extra view costs like an
//! unlike one. A view is its visible edges, its hidden edges (dashed) and its hatched cut
//! faces: what it shows of the part, line styles included. Where the views sit, their scale,
//! dimensions and notes have parts of their own; a whole-page F1 of pixels would mostly
//! measure the layout again (the GUI-built oracle page of task-034, in place by the
//! arrangement rule, scored 0.16 that way).

use crate::CadError;
use crate::model::{Entity, Geometry, HatchPattern, Model, Point, format_value};
use crate::render::{presentation, render_png};
use crate::solid::{DrawnView, PagePoint, SheetDrawing, SheetFacts};

/// Dimension and note text height when the drawing stores none, in page mm.
const DIMENSION_TEXT_MM: f64 = 3.5;

fn point(p: PagePoint) -> Option<Point> {
    (p[0].is_finite() && p[1].is_finite()).then(|| Point::new(p[0], p[1]))
}

fn polyline(points: &[PagePoint]) -> Option<Geometry> {
    polyline_by(points, &point)
}

/// A polyline of the points `map` keeps.
fn polyline_by(points: &[PagePoint], map: &dyn Fn(PagePoint) -> Option<Point>) -> Option<Geometry> {
    let points: Vec<Point> = points.iter().filter_map(|p| map(*p)).collect();
    (points.len() >= 2).then_some(Geometry::Polyline {
        points,
        closed: false,
    })
}

/// The label a dimension of this type shows for `value`.
fn dimension_label(kind: &str, value: f64) -> String {
    let text = format_value(value);
    match kind {
        "Diameter" => format!("Ø{text}"),
        "Radius" => format!("R{text}"),
        "Angle" | "Angle3Pt" => format!("{text}°"),
        _ => text,
    }
}

/// One drawn view's entities (edges, hidden edges, hatched cut faces), each page point placed
/// by `map`.
fn view_entities(
    view: &DrawnView,
    map: &dyn Fn(PagePoint) -> Option<Point>,
    entities: &mut Vec<Entity>,
) {
    {
        entities.extend(
            view.visible
                .iter()
                .filter_map(|line| polyline_by(line, map))
                .map(Entity::new),
        );
        for line in &view.hidden {
            if let Some(geometry) = polyline_by(line, map) {
                let mut entity = Entity::new(geometry);
                entity.linetype = Some("HIDDEN".to_owned());
                entities.push(entity);
            }
        }
        for face in &view.cut {
            let loops: Vec<Vec<Point>> = face
                .iter()
                .map(|ring| ring.iter().filter_map(|p| map(*p)).collect::<Vec<_>>())
                .filter(|ring| ring.len() >= 3)
                .collect();
            if loops.is_empty() {
                continue;
            }
            for ring in &loops {
                entities.push(Entity::new(Geometry::Polyline {
                    points: ring.clone(),
                    closed: true,
                }));
            }
            entities.push(Entity::new(Geometry::Hatch {
                loops,
                pattern: HatchPattern {
                    pattern: "ANSI31".to_owned(),
                    scale: 1.0,
                    angle_deg: 0.0,
                },
            }));
        }
    }
}

/// The drawing as a 2D model in page mm.
pub(crate) fn sheet_model(drawing: &SheetDrawing) -> Model {
    let mut entities = Vec::new();
    for view in &drawing.views {
        view_entities(view, &point, &mut entities);
    }
    for dimension in &drawing.dimensions {
        let Some(value) = dimension.value.filter(|v| v.is_finite()) else {
            continue;
        };
        let label = dimension_label(&dimension.kind, value);
        let line = dimension.line.as_deref().and_then(polyline);
        let at = match &line {
            Some(Geometry::Polyline { points, .. }) => {
                points.first().zip(points.last()).map(|(a, b)| {
                    Point::new(
                        (a.x + b.x) / 2.0 - 0.3 * DIMENSION_TEXT_MM * label.chars().count() as f64,
                        (a.y + b.y) / 2.0 + 0.5 * DIMENSION_TEXT_MM,
                    )
                })
            }
            _ => dimension.at.and_then(point),
        };
        if let Some(line) = line {
            entities.push(Entity::new(line));
        }
        if let Some(insert) = at {
            entities.push(Entity::new(Geometry::Text {
                insert,
                height: DIMENSION_TEXT_MM,
                value: label,
            }));
        }
    }
    for note in &drawing.notes {
        let (Some(insert), true) = (point(note.at), note.size.is_finite() && note.size > 0.0)
        else {
            continue;
        };
        let value = note.lines.join("\n");
        if value.trim().is_empty() {
            continue;
        }
        entities.push(Entity::new(Geometry::MText {
            insert,
            height: note.size * 0.7,
            value,
        }));
    }
    Model { entities }
}

/// The trusted render of a drawn sheet as PNG bytes (1600x1200, fitted to its content).
pub fn render_sheet_png(drawing: &SheetDrawing) -> Result<Vec<u8>, CadError> {
    render_png(&sheet_model(drawing))
}

/// The drawn view of facts view `index`, as a model in the part's millimetres (page
/// millimetres over the view's scale) from the lower left of its visible edges, so that hatch
/// spacing, the hatch lattice and dash lengths sit the same on the part wherever the view is
/// placed and whatever its scale.
fn view_model(sheet: &SheetFacts, drawing: &SheetDrawing, index: usize) -> Option<Model> {
    let view = drawing.views.iter().find(|v| v.view == Some(index))?;
    let scale = sheet
        .views
        .get(index)
        .and_then(|v| v.scale)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0);
    let corner = view
        .visible
        .iter()
        .flatten()
        .filter(|p| p[0].is_finite() && p[1].is_finite())
        .fold([f64::INFINITY; 2], |c, p| [c[0].min(p[0]), c[1].min(p[1])]);
    let corner = if corner[0].is_finite() {
        corner
    } else {
        [0.0; 2]
    };
    let map = |p: PagePoint| point([(p[0] - corner[0]) / scale, (p[1] - corner[1]) / scale]);
    let mut entities = Vec::new();
    view_entities(view, &map, &mut entities);
    Some(Model { entities })
}

/// The `presentation` part: the matched views' render F1s summed over the mean view count;
/// `None` when the gold has no drawing.
pub(crate) fn presentation(
    gold: &SheetFacts,
    candidate: &SheetFacts,
    matched: &[(usize, usize)],
) -> Option<f64> {
    let gold_drawing = gold.drawing.as_ref()?;
    let n_views = (gold.views.len() + candidate.views.len()) as f64 / 2.0;
    let Some(candidate_drawing) = candidate.drawing.as_ref() else {
        return Some(0.0);
    };
    if n_views <= 0.0 {
        return Some(1.0);
    }
    let pair = |(g, c): &(usize, usize)| match (
        view_model(gold, gold_drawing, *g),
        view_model(candidate, candidate_drawing, *c),
    ) {
        (Some(gold), Some(candidate)) => presentation::similarity_each_fitted(&gold, &candidate),
        // A gold view the judge could not draw is nothing to compare against.
        (None, _) => 1.0,
        (Some(_), None) => 0.0,
    };
    // Two renders per pair, the pairs on threads of their own (a scoped thread that panics
    // counts its pair as unlike).
    let sum: f64 = std::thread::scope(|scope| {
        let handles: Vec<_> = matched
            .iter()
            .map(|matched_pair| scope.spawn(move || pair(matched_pair)))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or(0.0))
            .sum()
    });
    Some((sum / n_views).min(1.0))
}
