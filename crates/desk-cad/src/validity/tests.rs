//! The validity relations, the margin and the report's wire form.

use super::cases::keeps;
use super::*;
use crate::corpus::DrawingType;

fn judged(name: &str, expected: Expected, score: f64, zero_reason: Option<&str>) -> CaseResult {
    CaseResult {
        name: name.to_owned(),
        pass: keeps(&expected, score, zero_reason, 1.0),
        score,
        zero_reason: zero_reason.map(str::to_owned),
        expected,
        elapsed_ms: 0,
        detail: None,
    }
}

#[test]
fn relations_and_the_margin() {
    let zero = || Expected::Zero {
        reason: "empty".to_owned(),
    };
    let report = TaskValidity {
        task: "task-001".to_owned(),
        kind: DrawingType::TwoD,
        gold_score: 1.0,
        cases: vec![
            judged("gold", Expected::Maximum, 1.0, None),
            judged("moved", Expected::BelowGold, 0.8, None),
            judged("removed", Expected::BelowGold, 0.9, None),
            judged("empty", zero(), 0.0, Some("empty")),
        ],
        elapsed_ms: 0,
    };
    assert!(report.passed());
    assert!((report.min_margin() - 0.1).abs() < 1e-12);
    // Equal to the gold, a zero for a real attempt, the wrong zero reason: all fail.
    assert!(!keeps(&Expected::BelowGold, 1.0, None, 1.0));
    assert!(!keeps(&Expected::BelowGold, 0.0, Some("empty"), 1.0));
    assert!(!keeps(&zero(), 0.0, Some("unreadable"), 1.0));
    assert!(!keeps(&Expected::Maximum, 0.99, None, 1.0));
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains(r#""relation":"below_gold""#), "{json}");
    assert_eq!(serde_json::from_str::<TaskValidity>(&json).unwrap(), report);
}
