//! Normalization of drawings into scorable items, and the per-item match test.
//!
//! Polylines become their straight edges (so lines and polylines are interchangeable),
//! zero-length edges vanish, arcs are described by center, radius and end points, text is
//! whitespace-normalized line by line (TEXT and MTEXT alike), an angular dimension becomes
//! its vertex, its two rays and its angle, a hatch loop loses repeated and collinear
//! vertices, and layer names are upper-cased (DXF layer names are case-insensitive).
//! Tolerances come from [`mod@crate::score`].

use crate::model::{DimKind, Geometry, Model, Point};

mod loops;

use crate::category::{
    ANGLE_TOL_DEG, Category, POINT_TOL_MM, SCALE_TOL_REL, TEXT_TOL_MM, VALUE_TOL_REL,
};
use crate::render::arc_sweep;
use loops::loops_cost;

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
    Angular {
        vertex: Point,
        /// The two ray directions in degrees, `[0, 360)`.
        rays: [f64; 2],
        value: f64,
    },
    Text {
        insert: Point,
        value: String,
    },
    Leader(Vec<Point>),
    Hatch {
        pattern: String,
        scale: f64,
        angle_deg: f64,
        loops: Vec<Vec<Point>>,
    },
}

impl Item {
    pub(crate) fn category(&self) -> Category {
        match self {
            Item::Segment(..) | Item::Circle(..) | Item::Arc { .. } => Category::Geometry,
            Item::Linear { .. } | Item::Radial { .. } | Item::Angular { .. } => {
                Category::Dimensions
            }
            Item::Text { .. } | Item::Leader(..) => Category::Annotations,
            Item::Hatch { .. } => Category::Hatching,
        }
    }
}

/// A normalized item with the entity's layer (upper-case) and linetype.
pub(crate) struct Placed {
    pub(crate) item: Item,
    pub(crate) layer: String,
    pub(crate) linetype: Option<String>,
}

/// Text with each line trimmed and its inner whitespace collapsed; empty lines dropped.
fn normalize_text(value: &str) -> String {
    value
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A closed loop without repeated vertices or vertices in the middle of a straight run.
fn simplify_loop(points: &[Point]) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::with_capacity(points.len());
    for p in points {
        if out.last().is_none_or(|last| last.dist(*p) > 1e-9) {
            out.push(*p);
        }
    }
    while out.len() > 1 && out[0].dist(out[out.len() - 1]) <= 1e-9 {
        out.pop();
    }
    loop {
        let n = out.len();
        if n < 4 {
            return out;
        }
        let collinear = (0..n).find(|&idx| {
            let (a, b, c) = (out[(idx + n - 1) % n], out[idx], out[(idx + 1) % n]);
            let cross = (b.x - a.x) * (c.y - b.y) - (b.y - a.y) * (c.x - b.x);
            cross.abs() <= 1e-9 * a.dist(b).max(1.0) * b.dist(c).max(1.0)
        });
        match collinear {
            Some(idx) => {
                out.remove(idx);
            }
            None => return out,
        }
    }
}

/// Items with their layer and linetype.
pub(crate) fn items(model: &Model) -> Vec<Placed> {
    let mut out = Vec::new();
    for entity in &model.entities {
        let mut push = |item: Item| {
            out.push(Placed {
                item,
                layer: entity.layer.to_ascii_uppercase(),
                linetype: entity.linetype.clone(),
            })
        };
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
            Geometry::Text { insert, value, .. } | Geometry::MText { insert, value, .. } => {
                push(Item::Text {
                    insert: *insert,
                    value: normalize_text(value),
                })
            }
            Geometry::Leader { points } => {
                let mut kept: Vec<Point> = Vec::with_capacity(points.len());
                for p in points {
                    if kept.last().is_none_or(|last| last.dist(*p) > 1e-9) {
                        kept.push(*p);
                    }
                }
                if kept.len() >= 2 {
                    push(Item::Leader(kept));
                }
            }
            Geometry::AngularDim { .. } => {
                if let Some(angle) = entity.geometry.angle() {
                    push(Item::Angular {
                        vertex: angle.vertex,
                        rays: [
                            angle.start_deg,
                            (angle.start_deg + angle.sweep_deg).rem_euclid(360.0),
                        ],
                        value: angle.sweep_deg,
                    });
                }
            }
            Geometry::Hatch { loops, pattern } => push(Item::Hatch {
                pattern: pattern.pattern.to_ascii_uppercase(),
                scale: pattern.scale,
                angle_deg: pattern.angle_deg,
                loops: loops
                    .iter()
                    .map(|points| simplify_loop(points))
                    .filter(|points| points.len() >= 3)
                    .collect(),
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

/// Distance between two directions in degrees, in `[0, 180]`.
fn angle_gap(a: f64, b: f64) -> f64 {
    let gap = (a - b).rem_euclid(360.0);
    gap.min(360.0 - gap)
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
            Item::Angular {
                vertex,
                rays,
                value,
            },
            Item::Angular {
                vertex: v2,
                rays: r2,
                value: value2,
            },
        ) => {
            if (value - value2).abs() > (value * VALUE_TOL_REL).max(ANGLE_TOL_DEG) {
                return None;
            }
            let same = angle_gap(rays[0], r2[0]).max(angle_gap(rays[1], r2[1]));
            let swapped = angle_gap(rays[0], r2[1]).max(angle_gap(rays[1], r2[0]));
            if same.min(swapped) > ANGLE_TOL_DEG {
                return None;
            }
            within(vertex.dist(*v2), POINT_TOL_MM)
        }
        (Item::Leader(gold), Item::Leader(candidate)) => {
            if gold.len() != candidate.len() {
                return None;
            }
            let cost = gold
                .iter()
                .zip(candidate)
                .map(|(g, c)| g.dist(*c))
                .fold(0.0, f64::max);
            within(cost, TEXT_TOL_MM)
        }
        (
            Item::Hatch {
                pattern,
                scale,
                angle_deg,
                loops,
            },
            Item::Hatch {
                pattern: p2,
                scale: s2,
                angle_deg: a2,
                loops: l2,
            },
        ) => {
            if pattern != p2
                || (scale - s2).abs() > scale.abs() * SCALE_TOL_REL
                || angle_gap(*angle_deg, *a2) > ANGLE_TOL_DEG
            {
                return None;
            }
            loops_cost(loops, l2)
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
