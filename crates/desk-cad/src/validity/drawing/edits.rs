//! The edits that make a 2D perturbation: find an entity, change its geometry (moved, scaled,
//! another dimension value, other text), and the model with that one change.

use crate::model::{Geometry, Model, Point};

/// How far a moved entity goes (mm): well past the matcher's 0.05 mm tolerance.
const MOVE: Point = Point::new(3.0, 2.0);
/// How much a scaled entity grows.
const SCALE: f64 = 1.5;

pub(super) fn first_index(model: &Model, wanted: impl Fn(&Geometry) -> bool) -> Option<usize> {
    model.entities.iter().position(|e| wanted(&e.geometry))
}

/// `model` with entity `idx`'s geometry changed by `change` (None when it does not apply).
pub(super) fn with_changed(
    model: &Model,
    idx: usize,
    change: fn(&Geometry) -> Option<Geometry>,
) -> Option<Model> {
    let geometry = change(&model.entities.get(idx)?.geometry)?;
    let mut changed = model.clone();
    changed.entities[idx].geometry = geometry;
    Some(changed)
}

pub(super) fn shift(p: Point) -> Point {
    Point::new(p.x + MOVE.x, p.y + MOVE.y)
}

pub(super) fn moved(geometry: &Geometry) -> Option<Geometry> {
    Some(match geometry.clone() {
        Geometry::Line { a, b } => Geometry::Line {
            a: shift(a),
            b: shift(b),
        },
        Geometry::Circle { center, r } => Geometry::Circle {
            center: shift(center),
            r,
        },
        Geometry::Arc {
            center,
            r,
            start_deg,
            end_deg,
        } => Geometry::Arc {
            center: shift(center),
            r,
            start_deg,
            end_deg,
        },
        Geometry::Polyline { points, closed } => Geometry::Polyline {
            points: points.into_iter().map(shift).collect(),
            closed,
        },
        Geometry::Leader { points } => Geometry::Leader {
            points: points.into_iter().map(shift).collect(),
        },
        Geometry::Hatch { loops, pattern } => Geometry::Hatch {
            loops: loops
                .into_iter()
                .map(|points| points.into_iter().map(shift).collect())
                .collect(),
            pattern,
        },
        _ => return None,
    })
}

pub(super) fn scaled(geometry: &Geometry) -> Option<Geometry> {
    let about =
        |c: Point, p: Point| Point::new(c.x + SCALE * (p.x - c.x), c.y + SCALE * (p.y - c.y));
    Some(match geometry.clone() {
        Geometry::Line { a, b } => Geometry::Line { a, b: about(a, b) },
        Geometry::Circle { center, r } => Geometry::Circle {
            center,
            r: r * SCALE,
        },
        Geometry::Arc {
            center,
            r,
            start_deg,
            end_deg,
        } => Geometry::Arc {
            center,
            r: r * SCALE,
            start_deg,
            end_deg,
        },
        Geometry::Polyline { points, closed } => {
            let first = *points.first()?;
            Geometry::Polyline {
                points: points.into_iter().map(|p| about(first, p)).collect(),
                closed,
            }
        }
        _ => return None,
    })
}

pub(super) fn changed_dimension(geometry: &Geometry) -> Option<Geometry> {
    Some(match geometry.clone() {
        Geometry::LinearDim {
            p1,
            p2,
            dim_line_point,
            kind,
        } => Geometry::LinearDim {
            p1,
            p2: shift(p2),
            dim_line_point,
            kind,
        },
        Geometry::RadialDim {
            center,
            point_on_circle,
            diameter,
        } => Geometry::RadialDim {
            center,
            point_on_circle: Point::new(
                center.x + SCALE * (point_on_circle.x - center.x),
                center.y + SCALE * (point_on_circle.y - center.y),
            ),
            diameter,
        },
        // The second line turns about the vertex: the angle changes by about 10°.
        Geometry::AngularDim {
            line1,
            line2,
            arc_point,
        } => {
            let angle = geometry.angle()?;
            let turn = |p: Point| {
                let (dx, dy) = (p.x - angle.vertex.x, p.y - angle.vertex.y);
                let (sin, cos) = 10f64.to_radians().sin_cos();
                Point::new(
                    angle.vertex.x + dx * cos - dy * sin,
                    angle.vertex.y + dx * sin + dy * cos,
                )
            };
            Geometry::AngularDim {
                line1,
                line2: (turn(line2.0), turn(line2.1)),
                arc_point,
            }
        }
        _ => return None,
    })
}

pub(super) fn changed_text(geometry: &Geometry) -> Option<Geometry> {
    match geometry.clone() {
        Geometry::Text {
            insert,
            height,
            value,
        } => Some(Geometry::Text {
            insert,
            height,
            value: format!("{value} CHANGED"),
        }),
        Geometry::MText {
            insert,
            height,
            value,
        } => Some(Geometry::MText {
            insert,
            height,
            value: format!("{value}\nCHANGED"),
        }),
        _ => None,
    }
}
