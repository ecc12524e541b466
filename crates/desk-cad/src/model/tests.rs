//! Unit tests of the drawing model: measurement labels.

use super::*;

#[test]
fn labels_format_measurements() {
    let dim = Geometry::LinearDim {
        p1: Point::new(0.0, 0.0),
        p2: Point::new(120.0, 5.0),
        dim_line_point: Point::new(0.0, -10.0),
        kind: DimKind::Horizontal,
    };
    assert_eq!(dim.dimension_label().as_deref(), Some("120"));
    let radius = Geometry::RadialDim {
        center: Point::new(10.0, 10.0),
        point_on_circle: Point::new(30.0, 10.0),
        diameter: false,
    };
    assert_eq!(radius.dimension_label().as_deref(), Some("R20"));
    let diameter = Geometry::RadialDim {
        center: Point::new(10.0, 10.0),
        point_on_circle: Point::new(10.0, 30.0),
        diameter: true,
    };
    assert_eq!(diameter.dimension_label().as_deref(), Some("Ø40"));
    assert_eq!(format_value(12.5), "12.5");
    assert_eq!(format_value(144.22205), "144.22");
}
