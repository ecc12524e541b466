//! Where a drawing lands on the raster: the fixed [`WIDTH`] x [`HEIGHT`] frame, the
//! world-to-pixel [`View`] that fits a drawing's extent with a margin, and the geometry both
//! the view and the drawing code need (arc sweeps, a linear dimension's frame).

use crate::model::{DimKind, Geometry, Model, Point};

/// Raster width in pixels.
pub const WIDTH: u32 = 1600;
/// Raster height in pixels.
pub const HEIGHT: u32 = 1200;
const MARGIN_PX: f64 = 120.0;

/// MTEXT's line pitch as a multiple of the text height (the DXF default spacing).
pub(super) const MTEXT_LINE_PITCH: f64 = 5.0 / 3.0;

/// World-to-pixel mapping (y flipped).
#[derive(Clone, Copy)]
pub(crate) struct View {
    pub(super) scale: f64,
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
        other => drafting_extent_points(other),
    }
}

/// Points covering a drafting entity's drawn extent (angular dimensions, leaders, multi-line
/// text, hatches).
fn drafting_extent_points(geometry: &Geometry) -> Vec<Point> {
    match geometry {
        Geometry::AngularDim { arc_point, .. } => match geometry.angle() {
            Some(angle) => {
                let r = angle.vertex.dist(*arc_point);
                (0..=16)
                    .map(|step| {
                        angle.vertex.polar(
                            r,
                            angle.start_deg + angle.sweep_deg * f64::from(step) / 16.0,
                        )
                    })
                    .chain([angle.vertex])
                    .collect()
            }
            None => vec![*arc_point],
        },
        Geometry::Leader { points } => points.clone(),
        Geometry::MText {
            insert,
            height,
            value,
        } => {
            let lines = value.lines().count().max(1) as f64;
            let widest = value.lines().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
            vec![
                *insert,
                Point::new(
                    insert.x + 0.62 * height * widest,
                    insert.y - height * (1.0 + (lines - 1.0) * MTEXT_LINE_PITCH),
                ),
            ]
        }
        Geometry::Hatch { loops, .. } => loops.iter().flatten().copied().collect(),
        _ => Vec::new(),
    }
}

/// Counter-clockwise sweep from `start` to `end` in degrees, in (0, 360].
pub(crate) fn arc_sweep(start: f64, end: f64) -> f64 {
    let sweep = (end - start).rem_euclid(360.0);
    if sweep < 1e-9 { 360.0 } else { sweep }
}

/// Dimension line ends `d1`, `d2`, measuring direction `u` and normal `n` (world units).
pub(super) fn linear_dim_frame(
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
