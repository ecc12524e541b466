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
            _ => None,
        }
    }

    /// The label a dimension shows: `120`, `R20`, `Ø40` (up to two decimals, trimmed).
    pub fn dimension_label(&self) -> Option<String> {
        let value = format_value(self.measured_value()?);
        Some(match self {
            Geometry::RadialDim { diameter: true, .. } => format!("Ø{value}"),
            Geometry::RadialDim { .. } => format!("R{value}"),
            _ => value,
        })
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

/// One entity: geometry on a layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Layer name; `0` is the default layer.
    pub layer: String,
    /// The geometry.
    pub geometry: Geometry,
}

impl Entity {
    /// An entity on the default layer `0`.
    pub fn new(geometry: Geometry) -> Self {
        Self::on_layer("0", geometry)
    }

    /// An entity on `layer`.
    pub fn on_layer(layer: &str, geometry: Geometry) -> Self {
        Self {
            layer: layer.to_owned(),
            geometry,
        }
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

    /// Whether any entity sits on a layer other than the default `0`.
    pub fn uses_named_layers(&self) -> bool {
        self.entities
            .iter()
            .any(|e| !e.layer.eq_ignore_ascii_case("0"))
    }
}

#[cfg(test)]
mod tests;
