//! Real LibreCAD 2.2 saves (DXF R2007, AC1021) parse into the expected entities.
//!
//! `librecad_rect_circle.dxf`: `line` 0,0 → 100,0 → 100,50 → 0,50 → close; `circle` 50,25 r10.
//! `librecad_mixed.dxf`: a closed `polyline` 0,0 120,0 120,80 0,80; `dimhorizontal`,
//! `dimvertical` and `dimaligned` on its edges/diagonal; a `line` 0,100 → 120,100; a
//! three-point `arc` (center 60,40, r20, 0°→90°); a `circle` 30,30 r15; the text `PLATE A`.

use std::path::PathBuf;

use desk_cad::dxf_io::read_dxf;
use desk_cad::{DimKind, Entity, Geometry, Model, Point, score};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn p(x: f64, y: f64) -> Point {
    Point::new(x, y)
}

#[test]
fn librecad_lines_and_circle() {
    let outcome = read_dxf(&fixture("librecad_rect_circle.dxf")).unwrap();
    assert!(outcome.forbidden.is_empty());
    let entities = &outcome.model.entities;
    assert_eq!(entities.len(), 5, "{entities:?}");
    assert_eq!(
        entities[0].geometry,
        Geometry::Line {
            a: p(0.0, 0.0),
            b: p(100.0, 0.0)
        }
    );
    assert_eq!(
        entities[4].geometry,
        Geometry::Circle {
            center: p(50.0, 25.0),
            r: 10.0
        }
    );
    assert!(entities.iter().all(|e| e.layer == "0"));
    // The same rectangle as a gold closed polyline scores 1.0 against the LibreCAD lines.
    let gold = Model {
        entities: vec![
            Entity::new(Geometry::Polyline {
                points: vec![p(0.0, 0.0), p(100.0, 0.0), p(100.0, 50.0), p(0.0, 50.0)],
                closed: true,
            }),
            Entity::new(Geometry::Circle {
                center: p(50.0, 25.0),
                r: 10.0,
            }),
        ],
    };
    assert_eq!(
        score(&gold, &fixture("librecad_rect_circle.dxf")).score,
        1.0
    );
}

#[test]
fn librecad_mixed_drawing() {
    let outcome = read_dxf(&fixture("librecad_mixed.dxf")).unwrap();
    assert!(outcome.forbidden.is_empty(), "{:?}", outcome.forbidden);
    let geometries: Vec<&Geometry> = outcome.model.entities.iter().map(|e| &e.geometry).collect();
    assert_eq!(geometries.len(), 8, "{geometries:?}");
    assert!(
        matches!(geometries[0], Geometry::Polyline { points, closed: true } if points.len() == 4)
    );
    let kinds: Vec<(DimKind, f64)> = geometries
        .iter()
        .filter_map(|g| match g {
            Geometry::LinearDim { kind, .. } => Some((*kind, g.measured_value().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(kinds.len(), 3);
    assert_eq!(kinds[0], (DimKind::Horizontal, 120.0));
    assert_eq!(kinds[1], (DimKind::Vertical, 80.0));
    assert_eq!(kinds[2].0, DimKind::Aligned);
    assert!((kinds[2].1 - 144.222_051).abs() < 1e-5);
    let Geometry::Arc {
        center,
        r,
        start_deg,
        end_deg,
    } = geometries[5]
    else {
        panic!("expected the arc, got {:?}", geometries[5]);
    };
    assert!(center.dist(p(60.0, 40.0)) < 1e-4 && (r - 20.0).abs() < 1e-4);
    assert!(start_deg.abs() < 1e-3 && (end_deg - 90.0).abs() < 1e-3);
    assert_eq!(
        geometries[6],
        &Geometry::Circle {
            center: p(30.0, 30.0),
            r: 15.0
        }
    );
    assert!(matches!(geometries[7], Geometry::Text { value, .. } if value == "PLATE A"));
}

/// `librecad_drafting.dxf` (recipes sections 11-18, through the broker): on layer `center`
/// (linetype CENTER), a two-line MTEXT, a three-point leader, two lines with a 45° angular
/// dimension, hatches of a polyline rectangle (ANSI31), of four lines (SOLID) and of a circle
/// (ANSI31 at scale 2 and 45°, which LibreCAD writes in radians).
#[test]
fn librecad_drafting_entities() {
    let outcome = read_dxf(&fixture("librecad_drafting.dxf")).unwrap();
    assert!(outcome.notes.is_empty(), "{:?}", outcome.notes);
    let find = |pred: &dyn Fn(&Geometry) -> bool| {
        outcome
            .model
            .entities
            .iter()
            .filter(|e| pred(&e.geometry))
            .collect::<Vec<_>>()
    };
    let mtext = find(&|g| matches!(g, Geometry::MText { .. }));
    assert_eq!(
        mtext[0].geometry,
        Geometry::MText {
            insert: p(10.0, 190.0),
            height: 2.5,
            value: "LINE ONE\nLINE TWO".to_owned()
        }
    );
    assert_eq!(mtext[0].layer, "center");
    assert_eq!(mtext[0].linetype.as_deref(), Some("CENTER"));
    let leader = find(&|g| matches!(g, Geometry::Leader { .. }));
    assert_eq!(
        leader[0].geometry,
        Geometry::Leader {
            points: vec![p(200.0, 150.0), p(220.0, 170.0), p(240.0, 170.0)]
        }
    );
    let angular = find(&|g| matches!(g, Geometry::AngularDim { .. }));
    assert_eq!(angular.len(), 1);
    let value = angular[0].geometry.measured_value().unwrap();
    assert!((value - 45.0).abs() < 1e-9, "{value}");
    let hatches = find(&|g| matches!(g, Geometry::Hatch { .. }));
    let patterns: Vec<&str> = hatches
        .iter()
        .map(|e| match &e.geometry {
            Geometry::Hatch { pattern, .. } => pattern.pattern.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(patterns, ["ANSI31", "SOLID", "ANSI31"]);
    // The polyline rectangle's hatch scores as the gold hatch of that rectangle.
    let rect = vec![
        p(100.0, 20.0),
        p(140.0, 20.0),
        p(140.0, 50.0),
        p(100.0, 50.0),
    ];
    let gold = Model {
        entities: vec![
            Entity::on_layer(
                "center",
                Geometry::Hatch {
                    loops: vec![rect],
                    pattern: desk_cad::HatchPattern {
                        pattern: "ANSI31".to_owned(),
                        scale: 1.0,
                        angle_deg: 0.0,
                    },
                },
            )
            .with_linetype("CENTER"),
        ],
    };
    let report = score(&gold, &fixture("librecad_drafting.dxf"));
    let hatching = report
        .categories
        .iter()
        .find(|c| c.category == desk_cad::score::Category::Hatching)
        .unwrap();
    assert_eq!((hatching.gold, hatching.matched), (1, 1), "{report:?}");
}

/// A binary DXF from another writer (ezdxf, R2013): its UTF-8 strings read as shown.
#[test]
fn binary_dxf_text_is_utf8() {
    let outcome = read_dxf(&fixture("ezdxf_binary_r2013.dxf")).unwrap();
    let texts: Vec<(&str, &str)> = outcome
        .model
        .entities
        .iter()
        .filter_map(|entity| match &entity.geometry {
            Geometry::Text { value, .. } | Geometry::MText { value, .. } => {
                Some((entity.layer.as_str(), value.as_str()))
            }
            _ => None,
        })
        .collect();
    assert!(texts.contains(&("ÄLAYER", "Ø20 THRU")), "{texts:?}");
    assert!(texts.contains(&("0", "Ø10 line\nline2")), "{texts:?}");
}
