//! The L3 and L4 drawings' dimensions: overall width and height, a hole's diameter, the
//! corner's radius or chamfer.

use super::builder::{Builder, Corner, Plate, fmt_point};
use crate::model::{DimKind, Geometry, Point};

/// Adds overall width and height dimensions, a diameter dimension of the first hole, and a
/// radius or aligned dimension for a rounded or chamfered corner.
pub(super) fn dimensions(
    builder: &mut Builder,
    plate: Plate,
    corner: Corner,
    holes: &[(Point, f64)],
) {
    let (x0, y0, x1, y1) = (plate.x0, plate.y0, plate.x1(), plate.y1());
    let width = Geometry::LinearDim {
        p1: Point::new(x0, y0),
        p2: Point::new(x1, y0),
        dim_line_point: Point::new(x0, y0 - 15.0),
        kind: DimKind::Horizontal,
    };
    let height = Geometry::LinearDim {
        p1: Point::new(x1, y0),
        p2: Point::new(x1, y1),
        dim_line_point: Point::new(x1 + 15.0, y0),
        kind: DimKind::Vertical,
    };
    builder.add("DIMS", width);
    builder.add("DIMS", height);
    builder.step(format!(
        "Dimension the overall width with a horizontal linear dimension from {} to {} placed \
         15 mm below the plate, and the overall height with a vertical linear dimension from {} \
         to {} placed 15 mm to its right.",
        fmt_point(Point::new(x0, y0)),
        fmt_point(Point::new(x1, y0)),
        fmt_point(Point::new(x1, y0)),
        fmt_point(Point::new(x1, y1))
    ));
    if let Some((center, r)) = holes.first() {
        builder.add(
            "DIMS",
            Geometry::RadialDim {
                center: *center,
                point_on_circle: center.polar(*r, 45.0),
                diameter: true,
            },
        );
        builder.step(format!(
            "Add a diameter dimension to the circle centered at {}.",
            fmt_point(*center)
        ));
    }
    match corner {
        Corner::Square => {}
        Corner::Rounded(r) => {
            let center = Point::new(x1 - r, y1 - r);
            builder.add(
                "DIMS",
                Geometry::RadialDim {
                    center,
                    point_on_circle: center.polar(r, 45.0),
                    diameter: false,
                },
            );
            builder.step("Add a radius dimension to the corner arc.".to_owned());
        }
        Corner::Chamfered(c) => {
            let p1 = Point::new(x1, y1 - c);
            let p2 = Point::new(x1 - c, y1);
            builder.add(
                "DIMS",
                Geometry::LinearDim {
                    p1,
                    p2,
                    dim_line_point: Point::new(x1 + 5.0, y1 + 5.0),
                    kind: DimKind::Aligned,
                },
            );
            builder.step(format!(
                "Add an aligned dimension along the chamfer from {} to {}.",
                fmt_point(p1),
                fmt_point(p2)
            ));
        }
    }
}
