//! Reads a DXF and finds expected entities, with a tolerance: the demo's proof that the drawing
//! made through broker actions reached the saved file.

use std::path::Path;

use anyhow::{Context, Result};
use dxf::entities::EntityType;

/// A line segment or circle expected in the drawing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Expected {
    /// A LINE between two points, in either direction.
    Line { from: (f64, f64), to: (f64, f64) },
    /// A CIRCLE.
    Circle { center: (f64, f64), radius: f64 },
}

/// The entities found in a DXF, reduced to what the checks need.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) lines: Vec<((f64, f64), (f64, f64))>,
    pub(crate) circles: Vec<((f64, f64), f64)>,
    pub(crate) n_entities: usize,
}

const TOLERANCE: f64 = 1e-6;

fn near(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() <= TOLERANCE && (a.1 - b.1).abs() <= TOLERANCE
}

/// Parses `path`.
pub(crate) fn read(path: &Path) -> Result<Found> {
    let drawing = dxf::Drawing::load_file(path)
        .with_context(|| format!("failed to parse DXF {}", path.display()))?;
    let mut found = Found::default();
    for entity in drawing.entities() {
        found.n_entities += 1;
        match &entity.specific {
            EntityType::Line(line) => {
                found
                    .lines
                    .push(((line.p1.x, line.p1.y), (line.p2.x, line.p2.y)));
            }
            EntityType::Circle(circle) => {
                found
                    .circles
                    .push(((circle.center.x, circle.center.y), circle.radius));
            }
            _ => {}
        }
    }
    Ok(found)
}

impl Found {
    /// Whether `expected` is present.
    pub(crate) fn contains(&self, expected: &Expected) -> bool {
        match *expected {
            Expected::Line { from, to } => self
                .lines
                .iter()
                .any(|&(a, b)| (near(a, from) && near(b, to)) || (near(a, to) && near(b, from))),
            Expected::Circle { center, radius } => self
                .circles
                .iter()
                .any(|&(c, r)| near(c, center) && (r - radius).abs() <= TOLERANCE),
        }
    }
}
