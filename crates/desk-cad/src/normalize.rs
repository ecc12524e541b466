//! Normalization of drawings into scorable items, and the per-item match test.
//!
//! Polylines become their straight edges (so lines and polylines are interchangeable),
//! zero-length edges vanish, arcs are described by center, radius and end points, text is
//! whitespace-normalized, and layer names are upper-cased (DXF layer names are
//! case-insensitive). Tolerances come from [`mod@crate::score`].

use crate::model::{DimKind, Geometry, Model, Point};
use crate::render::arc_sweep;
use crate::score::{Category, POINT_TOL_MM, TEXT_TOL_MM, VALUE_TOL_REL};

/// A normalized, scorable item.
#[derive(Clone, Debug)]
pub(crate) enum Item {
    Segment(Point, Point),
    Circle(Point, f64),
    Arc {
        center: Point,
        r: f64,
        start: Point,
        end: Point,
    },
    Linear {
        kind: DimKind,
        p1: Point,
        p2: Point,
        value: f64,
    },
    Radial {
        diameter: bool,
        center: Point,
        value: f64,
    },
    Text {
        insert: Point,
        value: String,
    },
}

impl Item {
    pub(crate) fn category(&self) -> Category {
        match self {
            Item::Segment(..) | Item::Circle(..) | Item::Arc { .. } => Category::Geometry,
            Item::Linear { .. } | Item::Radial { .. } => Category::Dimensions,
            Item::Text { .. } => Category::Annotations,
        }
    }
}

/// Items with their layer.
pub(crate) fn items(model: &Model) -> Vec<(Item, String)> {
    let mut out = Vec::new();
    for entity in &model.entities {
        let mut push = |item: Item| out.push((item, entity.layer.to_ascii_uppercase()));
        match &entity.geometry {
            Geometry::Line { a, b } => {
                if a.dist(*b) > 1e-9 {
                    push(Item::Segment(*a, *b));
                }
            }
            Geometry::Polyline { points, closed } => {
                let n_points = points.len();
                let n_segments = if *closed {
                    n_points
                } else {
                    n_points.saturating_sub(1)
                };
                for idx in 0..n_segments {
                    let (a, b) = (points[idx], points[(idx + 1) % n_points]);
                    if a.dist(b) > 1e-9 {
                        push(Item::Segment(a, b));
                    }
                }
            }
            Geometry::Circle { center, r } => push(Item::Circle(*center, *r)),
            Geometry::Arc {
                center,
                r,
                start_deg,
                end_deg,
            } => {
                let sweep = arc_sweep(*start_deg, *end_deg);
                push(Item::Arc {
                    center: *center,
                    r: *r,
                    start: center.polar(*r, *start_deg),
                    end: center.polar(*r, start_deg + sweep),
                });
            }
            Geometry::Text { insert, value, .. } => push(Item::Text {
                insert: *insert,
                value: value.split_whitespace().collect::<Vec<_>>().join(" "),
            }),
            Geometry::LinearDim { p1, p2, kind, .. } => push(Item::Linear {
                kind: *kind,
                p1: *p1,
                p2: *p2,
                value: entity.geometry.measured_value().unwrap_or(0.0),
            }),
            Geometry::RadialDim {
                center, diameter, ..
            } => push(Item::Radial {
                diameter: *diameter,
                center: *center,
                value: entity.geometry.measured_value().unwrap_or(0.0),
            }),
        }
    }
    out
}

fn value_ok(gold: f64, candidate: f64) -> bool {
    (gold - candidate).abs() <= (gold.abs() * VALUE_TOL_REL).max(POINT_TOL_MM)
}

fn within(cost: f64, tol: f64) -> Option<f64> {
    (cost <= tol).then_some(cost)
}

/// Matching cost of a gold and a candidate item, `None` when they do not match.
pub(crate) fn item_cost(gold: &Item, candidate: &Item) -> Option<f64> {
    match (gold, candidate) {
        (Item::Segment(a, b), Item::Segment(c, d)) => {
            let same = a.dist(*c).max(b.dist(*d));
            let flipped = a.dist(*d).max(b.dist(*c));
            within(same.min(flipped), POINT_TOL_MM)
        }
        (Item::Circle(c1, r1), Item::Circle(c2, r2)) => {
            within(c1.dist(*c2).max((r1 - r2).abs()), POINT_TOL_MM)
        }
        (
            Item::Arc {
                center,
                r,
                start,
                end,
            },
            Item::Arc {
                center: c2,
                r: r2,
                start: s2,
                end: e2,
            },
        ) => within(
            center
                .dist(*c2)
                .max((r - r2).abs())
                .max(start.dist(*s2))
                .max(end.dist(*e2)),
            POINT_TOL_MM,
        ),
        (
            Item::Linear {
                kind,
                p1,
                p2,
                value,
            },
            Item::Linear {
                kind: k2,
                p1: q1,
                p2: q2,
                value: v2,
            },
        ) => {
            if kind != k2 || !value_ok(*value, *v2) {
                return None;
            }
            let same = p1.dist(*q1).max(p2.dist(*q2));
            let flipped = p1.dist(*q2).max(p2.dist(*q1));
            within(same.min(flipped), POINT_TOL_MM)
        }
        (
            Item::Radial {
                diameter,
                center,
                value,
            },
            Item::Radial {
                diameter: d2,
                center: c2,
                value: v2,
            },
        ) => {
            if diameter != d2 || !value_ok(*value, *v2) {
                return None;
            }
            within(center.dist(*c2), POINT_TOL_MM)
        }
        (
            Item::Text { insert, value },
            Item::Text {
                insert: i2,
                value: v2,
            },
        ) => {
            if value != v2 {
                return None;
            }
            within(insert.dist(*i2), TEXT_TOL_MM)
        }
        _ => None,
    }
}
