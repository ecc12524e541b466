//! Scoring rules: self-similarity, perturbations, equivalences and zero rules.

use std::path::Path;

use desk_cad::score::{Category, ZeroReason};
use desk_cad::{DimKind, Entity, Geometry, Model, Point, score, score_model, write_dxf};
use dxf::entities::{self as dx, EntityType};

fn p(x: f64, y: f64) -> Point {
    Point::new(x, y)
}

fn rect_points() -> Vec<Point> {
    vec![
        p(20.0, 30.0),
        p(140.0, 30.0),
        p(140.0, 110.0),
        p(20.0, 110.0),
    ]
}

fn gold() -> Model {
    Model {
        entities: vec![
            Entity::on_layer(
                "OUTLINE",
                Geometry::Polyline {
                    points: rect_points(),
                    closed: true,
                },
            ),
            Entity::on_layer(
                "HOLES",
                Geometry::Circle {
                    center: p(60.0, 70.0),
                    r: 10.0,
                },
            ),
            Entity::on_layer(
                "OUTLINE",
                Geometry::Arc {
                    center: p(110.0, 70.0),
                    r: 15.0,
                    start_deg: 0.0,
                    end_deg: 90.0,
                },
            ),
            Entity::on_layer(
                "DIMS",
                Geometry::LinearDim {
                    p1: p(20.0, 30.0),
                    p2: p(140.0, 30.0),
                    dim_line_point: p(20.0, 15.0),
                    kind: DimKind::Horizontal,
                },
            ),
            Entity::on_layer(
                "DIMS",
                Geometry::RadialDim {
                    center: p(60.0, 70.0),
                    point_on_circle: p(60.0, 80.0),
                    diameter: true,
                },
            ),
            Entity::on_layer(
                "TEXT",
                Geometry::Text {
                    insert: p(20.0, 125.0),
                    height: 5.0,
                    value: "PLATE A-1".to_owned(),
                },
            ),
        ],
    }
}

fn with(mut model: Model, idx: usize, geometry: Geometry) -> Model {
    model.entities[idx].geometry = geometry;
    model
}

fn assert_lower(candidate: &Model, what: &str) {
    let report = score_model(&gold(), candidate);
    assert!(report.score < 1.0, "{what}: {report:?}");
    assert!(report.score > 0.0, "{what}: {report:?}");
}

#[test]
fn gold_against_itself_is_one() {
    let report = score_model(&gold(), &gold());
    assert_eq!(report.score, 1.0);
    assert_eq!(report.categories.len(), 7);
    assert!(report.categories.iter().all(|c| !c.included || c.f1 == 1.0));
    let included: Vec<Category> = report
        .categories
        .iter()
        .filter(|c| c.included)
        .map(|c| c.category)
        .collect();
    assert_eq!(
        included,
        [
            Category::Geometry,
            Category::Dimensions,
            Category::Annotations,
            Category::Layers,
            Category::Presentation
        ]
    );
}

#[test]
fn lines_and_polyline_are_equivalent() {
    let mut candidate = gold();
    candidate.entities.remove(0);
    let pts = rect_points();
    for idx in 0..4 {
        // Drawn in the opposite direction on purpose.
        let geometry = Geometry::Line {
            a: pts[(idx + 1) % 4],
            b: pts[idx],
        };
        candidate
            .entities
            .push(Entity::on_layer("OUTLINE", geometry));
    }
    assert_eq!(score_model(&gold(), &candidate).score, 1.0);
}

#[test]
fn perturbations_score_strictly_lower() {
    let moved = with(
        gold(),
        1,
        Geometry::Circle {
            center: p(65.0, 70.0),
            r: 10.0,
        },
    );
    assert_lower(&moved, "moved circle");
    let mut missing = gold();
    missing.entities.remove(2);
    assert_lower(&missing, "missing arc");
    let mut extra = gold();
    extra.entities.push(Entity::on_layer(
        "OUTLINE",
        Geometry::Line {
            a: p(0.0, 0.0),
            b: p(10.0, 10.0),
        },
    ));
    assert_lower(&extra, "extra line");
    let wrong_circle = with(
        gold(),
        1,
        Geometry::Circle {
            center: p(60.0, 70.0),
            r: 12.5,
        },
    );
    assert_lower(&wrong_circle, "wrong circle size");
    let mut bigger = rect_points();
    bigger[1].x = 150.0;
    bigger[2].x = 150.0;
    let wrong_rect = with(
        gold(),
        0,
        Geometry::Polyline {
            points: bigger,
            closed: true,
        },
    );
    assert_lower(&wrong_rect, "wrong rectangle size");
    let wrong_dim = with(
        gold(),
        3,
        Geometry::LinearDim {
            p1: p(20.0, 30.0),
            p2: p(145.0, 30.0),
            dim_line_point: p(20.0, 15.0),
            kind: DimKind::Horizontal,
        },
    );
    assert_lower(&wrong_dim, "wrong dimension value");
    let wrong_kind = with(
        gold(),
        3,
        Geometry::LinearDim {
            p1: p(20.0, 30.0),
            p2: p(140.0, 30.0),
            dim_line_point: p(20.0, 15.0),
            kind: DimKind::Aligned,
        },
    );
    assert_lower(&wrong_kind, "wrong dimension kind");
    let wrong_text = with(
        gold(),
        5,
        Geometry::Text {
            insert: p(20.0, 125.0),
            height: 5.0,
            value: "PLATE A-2".to_owned(),
        },
    );
    assert_lower(&wrong_text, "wrong text");
    let mut wrong_layer = gold();
    wrong_layer.entities[1].layer = "0".to_owned();
    assert_lower(&wrong_layer, "wrong layer");
}

#[test]
fn dimension_line_position_counts_only_for_presentation() {
    let moved_dim_line = with(
        gold(),
        3,
        Geometry::LinearDim {
            p1: p(140.0, 30.0),
            p2: p(20.0, 30.0),
            dim_line_point: p(70.0, 10.0),
            kind: DimKind::Horizontal,
        },
    );
    let report = score_model(&gold(), &moved_dim_line);
    let f1 = |category: Category| {
        report
            .categories
            .iter()
            .find(|c| c.category == category)
            .map(|c| c.f1)
    };
    assert_eq!(f1(Category::Dimensions), Some(1.0));
    let presentation = f1(Category::Presentation).unwrap();
    assert!(presentation < 1.0 && presentation > 0.5, "{report:?}");
}

#[test]
fn absent_categories_are_excluded_and_renormalized() {
    let gold = Model {
        entities: vec![Entity::new(Geometry::Circle {
            center: p(10.0, 10.0),
            r: 5.0,
        })],
    };
    let mut candidate = gold.clone();
    candidate.entities.push(Entity::new(Geometry::Text {
        insert: p(0.0, 0.0),
        height: 2.5,
        value: "x".to_owned(),
    }));
    let report = score_model(&gold, &candidate);
    assert!(
        report
            .flags
            .contains(&"ignored_extra_annotations".to_owned())
    );
    let weight = |category: Category| {
        report
            .categories
            .iter()
            .find(|c| c.category == category)
            .map(|c| (c.weight, c.f1))
    };
    // Geometry 0.40 and presentation 0.10, renormalized; the extra text shows only in the
    // render.
    assert_eq!(weight(Category::Geometry), Some((0.8, 1.0)));
    let (presentation_weight, presentation) = weight(Category::Presentation).unwrap();
    assert!((presentation_weight - 0.2).abs() < 1e-12);
    assert!(presentation < 1.0, "{report:?}");
    assert!((report.score - (0.8 + 0.2 * presentation)).abs() < 1e-9);
}

#[test]
fn scoring_is_deterministic() {
    let candidate = with(
        gold(),
        1,
        Geometry::Circle {
            center: p(65.0, 70.0),
            r: 10.0,
        },
    );
    let a = serde_json::to_string(&score_model(&gold(), &candidate)).unwrap();
    let b = serde_json::to_string(&score_model(&gold(), &candidate)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn written_candidate_scores_through_the_file_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("attempt.dxf");
    write_dxf(&gold(), &path).unwrap();
    assert_eq!(score(&gold(), &path).score, 1.0);
}

fn assert_zero(path: &Path, reason: ZeroReason) {
    let report = score(&gold(), path);
    assert_eq!(report.score, 0.0, "{report:?}");
    assert_eq!(report.zero_reason, Some(reason), "{report:?}");
}

/// Saves a drawing holding one LINE plus `extra` entities (and an optional block).
fn save_with(path: &Path, extra: Vec<EntityType>, block: Option<dxf::Block>) {
    let mut drawing = dxf::Drawing::new();
    drawing.header.version = dxf::enums::AcadVersion::R2007;
    drawing.add_entity(dx::Entity::new(EntityType::Line(dx::Line::new(
        dxf::Point::new(20.0, 30.0, 0.0),
        dxf::Point::new(140.0, 30.0, 0.0),
    ))));
    for specific in extra {
        drawing.add_entity(dx::Entity::new(specific));
    }
    if let Some(block) = block {
        drawing.add_block(block);
    }
    drawing.save_file(path).unwrap();
}

#[test]
fn invalid_artifacts_score_zero() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);

    assert_zero(&at("missing.dxf"), ZeroReason::Missing);

    std::fs::write(
        at("garbage.dxf"),
        [0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 0xff, 0xfe],
    )
    .unwrap();
    assert_zero(&at("garbage.dxf"), ZeroReason::Unreadable);

    std::fs::write(at("zero.dxf"), b"").unwrap();
    assert_zero(&at("zero.dxf"), ZeroReason::Empty);

    write_dxf(&Model::default(), &at("empty.dxf")).unwrap();
    assert_zero(&at("empty.dxf"), ZeroReason::Empty);

    save_with(
        &at("image.dxf"),
        vec![EntityType::Image(dx::Image::default())],
        None,
    );
    assert_zero(&at("image.dxf"), ZeroReason::Raster);

    save_with(
        &at("ole.dxf"),
        vec![EntityType::Ole2Frame(dx::Ole2Frame::default())],
        None,
    );
    assert_zero(&at("ole.dxf"), ZeroReason::Ole);

    save_with(
        &at("underlay.dxf"),
        vec![EntityType::PdfUnderlay(dx::PdfUnderlay::default())],
        None,
    );
    assert_zero(&at("underlay.dxf"), ZeroReason::Underlay);

    let mut xref = dxf::Block {
        name: "PARTS".to_owned(),
        xref_path_name: "parts.dxf".to_owned(),
        ..Default::default()
    };
    xref.set_is_xref(true);
    let insert = dx::Insert {
        name: "PARTS".to_owned(),
        ..Default::default()
    };
    save_with(
        &at("xref.dxf"),
        vec![EntityType::Insert(insert)],
        Some(xref),
    );
    assert_zero(&at("xref.dxf"), ZeroReason::Xref);
}
