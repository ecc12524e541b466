//! The normalized 2D drawing model shared by DXF I/O, the renderer and the scorer.
//!
//! Units are millimetres; angles are degrees, counter-clockwise from +X. Arcs always run
//! counter-clockwise from `start_deg` to `end_deg`. Polylines hold straight segments only:
//! bulged DXF segments become separate [`Geometry::Arc`] entities on read.

use serde::{Deserialize, Serialize};

/// A point in drawing units (mm).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// X coordinate in mm.
    pub x: f64,
    /// Y coordinate in mm.
    pub y: f64,
}

impl Point {
    /// Builds a point.
    pub const fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    /// Euclidean distance to `other`.
    pub fn dist(self, other: Point) -> f64 {
        (self.x - other.x).hypot(self.y - other.y)
    }

    /// The point at `angle_deg` on a circle of radius `r` around `self`.
    pub fn polar(self, r: f64, angle_deg: f64) -> Point {
        let rad = angle_deg.to_radians();
        Point::new(self.x + r * rad.cos(), self.y + r * rad.sin())
    }

    /// Midpoint of `self` and `other`.
    pub fn mid(self, other: Point) -> Point {
        Point::new((self.x + other.x) / 2.0, (self.y + other.y) / 2.0)
    }
}

/// A hatch pattern's name and transform. `pattern` is upper-case (`ANSI31`, `SOLID`, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HatchPattern {
    /// Pattern name, upper-case; `SOLID` is a solid fill.
    pub pattern: String,
    /// Pattern scale (1 = the pattern's own spacing).
    pub scale: f64,
    /// Pattern rotation in degrees.
    pub angle_deg: f64,
}

/// Kind of a linear dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DimKind {
    /// Measures the X distance between the definition points.
    Horizontal,
    /// Measures the Y distance between the definition points.
    Vertical,
    /// Measures the true distance between the definition points.
    Aligned,
}

/// The geometry of one drawing entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Geometry {
    /// A straight segment from `a` to `b`.
    Line {
        /// Start point.
        a: Point,
        /// End point.
        b: Point,
    },
    /// A full circle.
    Circle {
        /// Center.
        center: Point,
        /// Radius in mm.
        r: f64,
    },
    /// A counter-clockwise arc from `start_deg` to `end_deg`.
    Arc {
        /// Center.
        center: Point,
        /// Radius in mm.
        r: f64,
        /// Start angle in degrees.
        start_deg: f64,
        /// End angle in degrees.
        end_deg: f64,
    },
    /// Straight segments through `points`, closed back to the first point when `closed`.
    Polyline {
        /// Vertices in order.
        points: Vec<Point>,
        /// Whether the last vertex connects back to the first.
        closed: bool,
    },
    /// A single-line text.
    Text {
        /// Insertion point (left baseline).
        insert: Point,
        /// Cap height in mm.
        height: f64,
        /// The text itself.
        value: String,
    },
    /// A linear dimension between two extension-line origins.
    LinearDim {
        /// First extension-line origin.
        p1: Point,
        /// Second extension-line origin.
        p2: Point,
        /// A point on the dimension line.
        dim_line_point: Point,
        /// What the dimension measures.
        kind: DimKind,
    },
    /// An angle between two lines, dimensioned in the sector that holds `arc_point`.
    AngularDim {
        /// Two points on the first line.
        line1: (Point, Point),
        /// Two points on the second line.
        line2: (Point, Point),
        /// A point on the dimension arc; it picks which of the four angles is meant.
        arc_point: Point,
    },
    /// A leader: an arrowhead at `points[0]`, then straight segments through the rest.
    Leader {
        /// Vertices, arrowhead first.
        points: Vec<Point>,
    },
    /// A multi-line text block (MTEXT), attached at its top-left corner.
    MText {
        /// Top-left corner of the text block.
        insert: Point,
        /// Cap height in mm.
        height: f64,
        /// The lines, separated by `\n`.
        value: String,
    },
    /// A hatched region bounded by closed polygon loops (the first is the outer one).
    Hatch {
        /// Closed loops, each without its closing vertex repeated.
        loops: Vec<Vec<Point>>,
        /// What fills them.
        pattern: HatchPattern,
    },
    /// A radius (or diameter) dimension of a circle or arc.
    RadialDim {
        /// Circle center.
        center: Point,
        /// A point on the circle, where the leader touches it.
        point_on_circle: Point,
        /// Whether this is a diameter dimension.
        diameter: bool,
    },
}

impl Geometry {
    /// The value a dimension displays, or `None` for non-dimension geometry.
    pub fn measured_value(&self) -> Option<f64> {
        match self {
            Geometry::LinearDim { p1, p2, kind, .. } => Some(match kind {
                DimKind::Horizontal => (p2.x - p1.x).abs(),
                DimKind::Vertical => (p2.y - p1.y).abs(),
                DimKind::Aligned => p1.dist(*p2),
            }),
            Geometry::RadialDim {
                center,
                point_on_circle,
                diameter,
            } => {
                let r = center.dist(*point_on_circle);
                Some(if *diameter { 2.0 * r } else { r })
            }
            Geometry::AngularDim { .. } => self.angle().map(|angle| angle.sweep_deg),
            _ => None,
        }
    }

    /// An angular dimension's vertex and rays, `None` for other geometry or parallel lines.
    pub fn angle(&self) -> Option<Angle> {
        let Geometry::AngularDim {
            line1,
            line2,
            arc_point,
        } = self
        else {
            return None;
        };
        Angle::between(*line1, *line2, *arc_point)
    }

    /// The label a dimension shows: `120`, `R20`, `Ø40` (up to two decimals, trimmed).
    pub fn dimension_label(&self) -> Option<String> {
        let value = format_value(self.measured_value()?);
        Some(match self {
            Geometry::AngularDim { .. } => format!("{value}°"),
            Geometry::RadialDim { diameter: true, .. } => format!("Ø{value}"),
            Geometry::RadialDim { .. } => format!("R{value}"),
            _ => value,
        })
    }
}

/// The angle an angular dimension measures: from the ray at `start_deg` counter-clockwise
/// through `sweep_deg` (0 < sweep < 180) about `vertex`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Angle {
    /// Where the two lines cross.
    pub vertex: Point,
    /// Direction of the first ray, degrees in `[0, 360)`.
    pub start_deg: f64,
    /// The angle itself, degrees.
    pub sweep_deg: f64,
}

impl Angle {
    /// The angle between two lines (each given by two points) in the sector holding
    /// `arc_point`; `None` when the lines are parallel or degenerate.
    pub fn between(
        line1: (Point, Point),
        line2: (Point, Point),
        arc_point: Point,
    ) -> Option<Angle> {
        let d1 = Point::new(line1.1.x - line1.0.x, line1.1.y - line1.0.y);
        let d2 = Point::new(line2.1.x - line2.0.x, line2.1.y - line2.0.y);
        let cross = d1.x * d2.y - d1.y * d2.x;
        let norms = d1.x.hypot(d1.y) * d2.x.hypot(d2.y);
        if norms < 1e-12 || cross.abs() < 1e-9 * norms {
            return None;
        }
        let t = ((line2.0.x - line1.0.x) * d2.y - (line2.0.y - line1.0.y) * d2.x) / cross;
        let vertex = Point::new(line1.0.x + t * d1.x, line1.0.y + t * d1.y);
        let dir = |d: Point| d.y.atan2(d.x).to_degrees().rem_euclid(360.0);
        let (a1, a2) = (dir(d1), dir(d2));
        let at = dir(Point::new(arc_point.x - vertex.x, arc_point.y - vertex.y));
        // The four rays are a1, a1 + 180, a2, a2 + 180; the arc point lies in exactly one of
        // the four sectors they bound.
        let mut rays = [a1, (a1 + 180.0) % 360.0, a2, (a2 + 180.0) % 360.0];
        rays.sort_by(f64::total_cmp);
        for idx in 0..4 {
            let start = rays[idx];
            let sweep = (rays[(idx + 1) % 4] - start).rem_euclid(360.0);
            if (at - start).rem_euclid(360.0) <= sweep {
                return Some(Angle {
                    vertex,
                    start_deg: start,
                    sweep_deg: sweep,
                });
            }
        }
        None
    }
}

/// Formats a measurement with at most two decimals and no trailing zeros.
pub fn format_value(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// One entity: geometry on a layer, drawn in a linetype.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Layer name; `0` is the default layer.
    pub layer: String,
    /// The effective linetype, upper-case (`CENTER`, `HIDDEN`, ...); `None` is continuous.
    /// A DXF entity's `ByLayer` is resolved through its layer when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linetype: Option<String>,
    /// The geometry.
    pub geometry: Geometry,
}

/// The DXF linetypes drawings use, with their dash patterns in mm (dash positive, gap
/// negative), as in the standard `acad.lin` at scale 1.
pub const LINETYPES: [(&str, &[f64]); 4] = [
    ("CENTER", &[31.75, -6.35, 6.35, -6.35]),
    ("HIDDEN", &[6.35, -3.175]),
    ("DASHED", &[12.7, -6.35]),
    ("PHANTOM", &[31.75, -6.35, 6.35, -6.35, 6.35, -6.35]),
];

/// The dash pattern of `linetype` (upper-case), `None` when continuous or unknown.
pub fn dash_pattern(linetype: &str) -> Option<&'static [f64]> {
    LINETYPES
        .iter()
        .find(|(name, _)| *name == linetype)
        .map(|(_, pattern)| *pattern)
}

/// Normalizes a linetype name read from a file: upper-case, `None` for continuous.
pub fn normalize_linetype(name: &str) -> Option<String> {
    let upper = name.trim().to_ascii_uppercase();
    (!upper.is_empty() && upper != "CONTINUOUS" && upper != "BYLAYER" && upper != "BYBLOCK")
        .then_some(upper)
}

impl Entity {
    /// An entity on the default layer `0`.
    pub fn new(geometry: Geometry) -> Self {
        Self::on_layer("0", geometry)
    }

    /// An entity on `layer`, continuous.
    pub fn on_layer(layer: &str, geometry: Geometry) -> Self {
        Self {
            layer: layer.to_owned(),
            linetype: None,
            geometry,
        }
    }

    /// The same entity drawn in `linetype`.
    pub fn with_linetype(mut self, linetype: &str) -> Self {
        self.linetype = normalize_linetype(linetype);
        self
    }
}

/// A whole drawing, in model space.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Entities in drawing order.
    pub entities: Vec<Entity>,
}

impl Model {
    /// Layer names used by entities, sorted and deduplicated, `0` included if used.
    pub fn layers(&self) -> Vec<String> {
        let mut names: Vec<String> = self.entities.iter().map(|e| e.layer.clone()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// Whether any entity is drawn in a linetype other than continuous.
    pub fn uses_linetypes(&self) -> bool {
        self.entities.iter().any(|e| e.linetype.is_some())
    }

    /// Linetypes used by entities, sorted and deduplicated.
    pub fn linetypes(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .entities
            .iter()
            .filter_map(|e| e.linetype.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Whether any entity sits on a layer other than the default `0`.
    pub fn uses_named_layers(&self) -> bool {
        self.entities
            .iter()
            .any(|e| !e.layer.eq_ignore_ascii_case("0"))
    }
}

#[cfg(test)]
mod tests;
