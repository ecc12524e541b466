//! Corpus v3's drafting categories: every gold survives the DXF round trip at full score,
//! the categories appear where the corpus says, and perturbing them scores lower.

use desk_cad::score::Category;
use desk_cad::{
    CorpusVersion, Geometry, Level, generate_corpus_version, read_dxf, score, write_dxf,
};

fn included(report: &desk_cad::ScoreReport, category: Category) -> bool {
    report
        .categories
        .iter()
        .any(|c| c.category == category && c.included)
}

#[test]
fn v3_golds_round_trip_through_dxf_at_full_score() {
    let dir = tempfile::tempdir().unwrap();
    let (drawings, _) = generate_corpus_version(CorpusVersion::V3);
    assert_eq!(drawings.len(), 21);
    let mut seen = Vec::new();
    for item in &drawings {
        let path = dir.path().join(format!("{}.dxf", item.task.id));
        write_dxf(&item.gold, &path).unwrap();
        let read = read_dxf(&path).unwrap();
        assert_eq!(
            read.model.entities.len(),
            item.gold.entities.len(),
            "{}",
            item.task.id
        );
        let report = score(&item.gold, &path);
        assert_eq!(report.score, 1.0, "{}: {report:?}", item.task.id);
        for category in [
            Category::Linetypes,
            Category::Hatching,
            Category::Presentation,
        ] {
            if included(&report, category) {
                seen.push((item.task.level, category));
            }
        }
        if std::env::var_os("DESK_CAD_RENDER_OUT").is_some() {
            let out = std::path::Path::new(&std::env::var("DESK_CAD_RENDER_OUT").unwrap())
                .join(format!("{}.png", item.task.id));
            std::fs::write(out, desk_cad::render_png(&item.gold).unwrap()).unwrap();
        }
        let kinds = |pred: fn(&Geometry) -> bool| {
            item.gold
                .entities
                .iter()
                .filter(|e| pred(&e.geometry))
                .count()
        };
        if item.task.level >= Level::L3 {
            assert!(
                kinds(|g| matches!(g, Geometry::Leader { .. })) == 1,
                "{}",
                item.task.id
            );
        }
        if item.task.level == Level::L4 {
            assert_eq!(
                kinds(|g| matches!(g, Geometry::Hatch { .. })),
                2,
                "{}",
                item.task.id
            );
            assert_eq!(
                kinds(|g| matches!(g, Geometry::MText { .. })),
                1,
                "{}",
                item.task.id
            );
        }
    }
    assert!(seen.contains(&(Level::L4, Category::Linetypes)));
    assert!(seen.contains(&(Level::L4, Category::Hatching)));
    assert!(drawings.iter().any(|item| {
        item.gold
            .entities
            .iter()
            .any(|e| matches!(e.geometry, Geometry::AngularDim { .. }))
    }));
}
