//! Unit tests of DXF reading and writing: bulges, polylines, MTEXT codes, forbidden names,
//! model round trips (ASCII and binary) and dimension blocks.

use super::*;
use crate::dxf_write::to_drawing;
use crate::model::Entity;

#[test]
fn bulge_of_one_is_a_ccw_half_circle() {
    let arc = bulge_arc(Point::new(0.0, 0.0), Point::new(20.0, 0.0), 1.0);
    let Some(Geometry::Arc {
        center,
        r,
        start_deg,
        end_deg,
    }) = arc
    else {
        panic!("expected an arc, got {arc:?}");
    };
    assert!(center.dist(Point::new(10.0, 0.0)) < 1e-9);
    assert!((r - 10.0).abs() < 1e-9);
    // Counter-clockwise from (0,0) to (20,0) around (10,0) passes below: 180 → 360.
    assert!((start_deg - 180.0).abs() < 1e-9, "{start_deg}");
    assert!(
        end_deg.abs() < 1e-9 || (end_deg - 360.0).abs() < 1e-9,
        "{end_deg}"
    );
}

#[test]
fn bulged_polyline_splits_into_lines_and_arcs() {
    let pieces = polyline_pieces(
        &[
            (Point::new(0.0, 0.0), 0.0),
            (Point::new(10.0, 0.0), -1.0),
            (Point::new(10.0, 10.0), 0.0),
        ],
        false,
    );
    assert_eq!(pieces.len(), 2);
    assert!(matches!(pieces[0], Geometry::Line { .. }));
    assert!(matches!(pieces[1], Geometry::Arc { .. }));
}

#[test]
fn mtext_codes_are_stripped() {
    assert_eq!(strip_mtext("{\\fArial|b0;PLATE}\\PA"), "PLATE\nA");
    assert_eq!(strip_mtext("\\A1;Hello"), "Hello");
    assert_eq!(decode_text("2X %%c10 THRU"), "2X Ø10 THRU");
    assert_eq!(decode_text("%%C5 %%d %%p0.1 100%%%"), "Ø5 ° ±0.1 100%");
    assert_eq!(decode_text("\\U+2300 12 \\U+00B0 ⌀"), "Ø 12 ° Ø");
    assert_eq!(decode_text("%%"), "%%");
}

#[test]
fn raw_scan_finds_forbidden_names() {
    let text = b"  0\nSECTION\n  2\nENTITIES\n  0\nOLE2FRAME\n  0\nPDFUNDERLAY\n  0\nENDSEC\n";
    assert_eq!(
        raw_forbidden_scan(text),
        vec![Forbidden::Ole, Forbidden::Underlay]
    );
}

#[test]
fn model_round_trips_through_dxf() -> Result<(), String> {
    let model = Model {
        entities: vec![
            Entity::on_layer(
                "OUTLINE",
                Geometry::Polyline {
                    points: vec![
                        Point::new(0.0, 0.0),
                        Point::new(10.0, 0.0),
                        Point::new(10.0, 5.0),
                    ],
                    closed: true,
                },
            ),
            Entity::new(Geometry::Arc {
                center: Point::new(1.0, 2.0),
                r: 3.0,
                start_deg: 10.0,
                end_deg: 200.0,
            }),
            Entity::on_layer(
                "DIMS",
                Geometry::LinearDim {
                    p1: Point::new(0.0, 0.0),
                    p2: Point::new(10.0, 5.0),
                    dim_line_point: Point::new(3.0, 9.0),
                    kind: DimKind::Aligned,
                },
            ),
            Entity::on_layer(
                "DIMS",
                Geometry::RadialDim {
                    center: Point::new(5.0, 5.0),
                    point_on_circle: Point::new(8.0, 9.0),
                    diameter: true,
                },
            ),
            Entity::on_layer(
                "TEXT",
                Geometry::Text {
                    insert: Point::new(1.0, 1.0),
                    height: 2.5,
                    value: "NOTE".to_owned(),
                },
            ),
        ],
    };
    let mut bytes = Vec::new();
    to_drawing(&model)
        .save(&mut bytes)
        .map_err(|err| err.to_string())?;
    let outcome = read_dxf_bytes(&bytes)?;
    assert!(outcome.forbidden.is_empty());
    assert_eq!(outcome.model.entities.len(), model.entities.len());
    for (read, written) in outcome.model.entities.iter().zip(&model.entities) {
        assert_eq!(read.layer, written.layer);
        assert_eq!(
            read.geometry.measured_value().map(|v| (v * 1e6).round()),
            written.geometry.measured_value().map(|v| (v * 1e6).round())
        );
    }
    Ok(())
}

#[test]
fn binary_strings_decode_as_utf8_only_when_they_are() {
    // "Ø" is C3 98 in UTF-8: read one char per byte it is "Ã\u{98}".
    assert_eq!(text::binary_utf8("\u{c3}\u{98}20 THRU"), "Ø20 THRU");
    assert_eq!(text::binary_utf8("PLATE A"), "PLATE A");
    // A lone Latin-1 byte is not UTF-8: kept as read, never guessed.
    assert_eq!(text::binary_utf8("caf\u{e9}"), "caf\u{e9}");
    // A char above U+00FF cannot come from one byte: kept.
    assert_eq!(text::binary_utf8("Ø\u{2300}"), "Ø\u{2300}");
}

#[test]
fn binary_r2007_round_trip_keeps_non_ascii_text() {
    let model = Model {
        entities: vec![Entity {
            layer: "0".to_owned(),
            linetype: None,
            geometry: Geometry::Text {
                insert: Point::new(1.0, 2.0),
                height: 2.5,
                value: "Ø20 THRU".to_owned(),
            },
        }],
    };
    let drawing = to_drawing(&model);
    let mut bytes = Vec::new();
    drawing.save_binary(&mut bytes).unwrap();
    let outcome = read_dxf_bytes(&bytes).unwrap();
    let values: Vec<_> = outcome
        .model
        .entities
        .iter()
        .filter_map(|entity| match &entity.geometry {
            Geometry::Text { value, .. } => Some(value.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(values, ["Ø20 THRU"]);
}

#[test]
fn angular_dimension_names_its_anonymous_block() {
    let angle = Geometry::AngularDim {
        line1: (Point::new(0.0, 0.0), Point::new(10.0, 0.0)),
        line2: (Point::new(0.0, 0.0), Point::new(5.0, 5.0)),
        arc_point: Point::new(8.0, 2.0),
    };
    let line = Geometry::Line {
        a: Point::new(0.0, 0.0),
        b: Point::new(10.0, 0.0),
    };
    let model = Model {
        entities: [line, angle]
            .into_iter()
            .map(|geometry| Entity {
                layer: "DIM".to_owned(),
                linetype: None,
                geometry,
            })
            .collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("angle.dxf");
    write_dxf(&model, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    // The DIMENSION's group 2 names `*D2` (entity 2), and that block exists with its arc.
    assert!(text.contains("AcDbDimension\r\n  2\r\n*D2\r\n"), "{text}");
    let drawing = Drawing::load(&mut std::io::Cursor::new(&bytes)).unwrap();
    let block = drawing.blocks().find(|block| block.name == "*D2").unwrap();
    assert!(block.is_anonymous());
    let Some(EntityType::Arc(arc)) = block.entities.first().map(|e| &e.specific) else {
        panic!("{:?}", block.entities);
    };
    assert!((arc.radius - 68f64.sqrt()).abs() < 1e-9);
    assert!(arc.start_angle.abs() < 1e-9 && (arc.end_angle - 45.0).abs() < 1e-9);
    assert!(drawing.block_records().any(|record| record.name == "*D2"));
    // The block is not model space: the model reads back exactly.
    assert_eq!(read_dxf_bytes(&bytes).unwrap().model, model);
}
