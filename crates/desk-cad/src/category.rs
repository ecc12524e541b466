//! The scorer's categories and the tolerances within which a candidate's item matches the
//! gold's (shared by the normalizer, the matcher and the score).

use serde::{Deserialize, Serialize};

/// Point and radius tolerance in mm.
pub const POINT_TOL_MM: f64 = 0.05;
/// Relative tolerance on dimension values.
pub const VALUE_TOL_REL: f64 = 0.005;
/// Text insertion point tolerance in mm.
pub const TEXT_TOL_MM: f64 = 0.5;
/// Angle tolerance in degrees: angular dimension rays and values, hatch pattern angles.
pub const ANGLE_TOL_DEG: f64 = 0.5;
/// Relative tolerance on hatch pattern scales.
pub const SCALE_TOL_REL: f64 = 0.01;

/// A scoring category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Segments, circles and arcs.
    Geometry,
    /// Linear, angular, radius and diameter dimensions.
    Dimensions,
    /// Text (single- and multi-line) and leaders.
    Annotations,
    /// Layer assignment of matched items.
    Layers,
    /// Linetype (centre, hidden, ...) of matched items.
    Linetypes,
    /// Hatched regions: pattern, scale, angle and boundary.
    Hatching,
    /// How alike the trusted renders of gold and candidate look.
    Presentation,
}
