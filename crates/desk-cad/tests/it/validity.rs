//! Judge validity of the 2D judge over every 2D task of corpora v2 and v3 (pure Rust): the gold
//! scores 1 twice with the same report, every held-out perturbation strictly less and above 0,
//! every invalid file 0 with its reason.

use desk_cad::validity::{Expected, ValidityGold, validate_task};
use desk_cad::{CorpusVersion, generate_corpus_version};

#[test]
fn every_2d_task_ranks_its_gold_above_its_perturbations() {
    let (mut drawings, _) = generate_corpus_version(CorpusVersion::V2);
    drawings.extend(generate_corpus_version(CorpusVersion::V3).0);
    assert_eq!(drawings.len(), 42);
    let mut lowest_margin = f64::MAX;
    for generated in &drawings {
        let dir = tempfile::tempdir().unwrap();
        let id = generated.task.id.as_str();
        let report = validate_task(id, ValidityGold::Drawing(&generated.gold), dir.path()).unwrap();
        let json = serde_json::to_string_pretty(&report).unwrap();
        assert!(report.passed(), "{id}: {:?}\n{json}", report.failures());
        assert_eq!(report.gold_score, 1.0);
        let below = report
            .cases
            .iter()
            .filter(|c| c.expected == Expected::BelowGold);
        let names: Vec<&str> = below.map(|c| c.name.as_str()).collect();
        for always in [
            "moved entity",
            "removed entity",
            "extra line",
            "scaled entity",
        ] {
            assert!(names.contains(&always), "{id}: {names:?}");
        }
        let zeros = report
            .cases
            .iter()
            .filter(|c| matches!(c.expected, Expected::Zero { .. }));
        assert_eq!(zeros.count(), 5, "{id}");
        println!(
            "{id}: {} cases, min margin {:.4}",
            report.cases.len(),
            report.min_margin()
        );
        lowest_margin = lowest_margin.min(report.min_margin());
    }
    assert!(lowest_margin > 0.0);
}

#[test]
fn dimension_text_layer_and_drafting_cases_appear_where_the_gold_has_them() {
    let (drawings, _) = generate_corpus_version(CorpusVersion::V3);
    let dir = tempfile::tempdir().unwrap();
    // The last task is level 4 with a chamfered corner: dimensions, text, named layers and
    // every drafting kind.
    let generated = drawings.last().unwrap();
    let report = validate_task("last", ValidityGold::Drawing(&generated.gold), dir.path()).unwrap();
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    for wanted in [
        "removed dimension",
        "changed dimension",
        "changed text",
        "wrong layer",
        "moved hatch",
        "repatterned hatch",
        "moved leader",
        "changed note",
        "lost linetype",
        "changed angle",
    ] {
        assert!(names.contains(&wanted), "{names:?}");
    }
}
