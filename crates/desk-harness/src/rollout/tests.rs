//! Unit tests of rollouts: budgets clamped to the contract.

use desk_cad::corpus::{BUDGETS_2D, Budgets};
use desk_cad::{DrawingType, Level, Split, TaskId};

use super::*;

fn task(drawing_type: DrawingType, budgets: Budgets) -> Task {
    Task {
        id: TaskId::from_number(1),
        prompt: String::new(),
        reference_image: String::new(),
        drawing_type,
        level: Level::L1,
        units: "mm".to_owned(),
        budgets,
        split: Split::Dev,
        profile: None,
    }
}

fn options() -> RolloutOptions {
    RolloutOptions {
        rollout_id: "r".to_owned(),
        attempt_id: "a".to_owned(),
        dir: PathBuf::from("/nonexistent"),
        broker_version: String::new(),
        versions: crate::versions::SoftwareVersions::default(),
        profile: None,
        corpus_version: desk_cad::CORPUS_VERSION.to_owned(),
        max_actions: None,
        wall_time: None,
        require_sandbox: false,
    }
}

#[test]
fn budgets_are_clamped_to_the_contract() {
    let generous = Budgets {
        max_actions: 20_000,
        wall_time_s: 7_200,
    };
    let (budgets, wall_time) = effective_budgets(&task(DrawingType::TwoD, generous), &options());
    assert_eq!(budgets.max_actions, 5_000);
    assert_eq!(budgets.declared_max_actions, 20_000);
    assert_eq!(wall_time, Duration::from_secs(900));
    let (budgets, wall_time) = effective_budgets(&task(DrawingType::ThreeD, generous), &options());
    assert_eq!(budgets.wall_time_s, 1_800);
    assert_eq!(wall_time, Duration::from_secs(1_800));
    let (budgets, _) = effective_budgets(&task(DrawingType::TwoD, BUDGETS_2D), &options());
    assert_eq!((budgets.max_actions, budgets.wall_time_s), (5_000, 900));
    let mut lower = options();
    lower.max_actions = Some(10);
    let (budgets, _) = effective_budgets(&task(DrawingType::TwoD, generous), &lower);
    assert_eq!(budgets.max_actions, 10);
}
