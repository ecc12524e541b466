//! Corpus generation: determinism, public/private separation, task shape.

use std::path::Path;

use desk_cad::{
    CorpusVersion, DrawingType, Level, Split, generate_corpus, generate_corpus_version, load_gold,
    load_task_list, load_tasks, score_model, write_corpus_version,
};

/// Corpus v1 (2D only, no FreeCAD needed) into `public` and `gold`.
fn write_v1(public: &Path, gold: &Path) -> Vec<desk_cad::Task> {
    write_corpus_version(CorpusVersion::V1, public, gold).unwrap()
}

fn read_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn corpus_is_deterministic_and_separates_gold() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let tasks = write_v1(&first.path().join("public"), &first.path().join("gold"));
    // Gold is scorer-private: its directory is created owner-only.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(first.path().join("gold"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    write_v1(&second.path().join("public"), &second.path().join("gold"));
    let tree_first = read_tree(first.path());
    let tree_second = read_tree(second.path());
    assert_eq!(tree_first.len(), tree_second.len());
    for (a, b) in tree_first.iter().zip(&tree_second) {
        assert_eq!(a.0, b.0);
        assert!(a.1 == b.1, "{} differs between runs", a.0);
    }
    // 28 tasks: tasks.json + 28 PNGs public, 28 DXFs private.
    assert_eq!(tasks.len(), 28);
    assert_eq!(tree_first.len(), 1 + 28 + 28);
    let public = read_tree(&first.path().join("public"));
    assert!(public.iter().all(|(name, bytes)| {
        !name.ends_with(".dxf") && !String::from_utf8_lossy(bytes).contains("gold")
    }));
    if let Ok(out) = std::env::var("DESK_CAD_CORPUS_OUT") {
        let out = Path::new(&out);
        desk_cad::write_corpus(&out.join("public"), &out.join("gold")).unwrap();
    }
}

#[test]
fn tasks_have_levels_splits_and_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let written = write_v1(&dir.path().join("public"), &dir.path().join("gold"));
    let tasks = load_tasks(&dir.path().join("public")).unwrap();
    assert_eq!(tasks, written);
    assert_eq!(tasks[0].id.as_str(), "task-001");
    assert_eq!(tasks[27].id.as_str(), "task-028");
    let n_dev = tasks.iter().filter(|t| t.split == Split::Dev).count();
    assert_eq!(n_dev, 4);
    for level in [Level::L1, Level::L2, Level::L3, Level::L4] {
        assert_eq!(tasks.iter().filter(|t| t.level == level).count(), 7);
    }
    for task in &tasks {
        assert!(task.prompt.contains(&task.reference_image));
        assert!(task.prompt.contains("Ctrl+S"));
        assert!(task.prompt.contains("mm"));
        assert_eq!(task.units, "mm");
        assert_eq!(task.budgets.max_actions, 5000);
        assert_eq!(task.budgets.wall_time_s, 900);
        assert!(
            dir.path()
                .join("public")
                .join(&task.reference_image)
                .is_file()
        );
        let gold = load_gold(&dir.path().join("gold"), &task.id).unwrap();
        assert!(!gold.entities.is_empty());
    }
    let json = std::fs::read_to_string(dir.path().join("public/tasks.json")).unwrap();
    assert!(json.contains("\"drawing_type\": \"2d\""));
    assert!(json.contains("deskbroker-cad-corpus-v1"));
    assert!(json.contains("deskbroker-bench-contract-v1"));
}

#[test]
fn coordinates_stay_on_grid_and_in_bounds() {
    // v3's drafting additions: on a 0.5 mm grid (a leader's arrowhead, on its circle,
    // excepted), and everything the oracle clicks inside LibreCAD's first view.
    for item in generate_corpus() {
        for entity in &item.gold.entities {
            let (clicked, gridded): (Vec<desk_cad::Point>, Vec<desk_cad::Point>) =
                match &entity.geometry {
                    desk_cad::Geometry::Line { a, b } => (vec![*a, *b], vec![*a, *b]),
                    desk_cad::Geometry::Polyline { points, .. } => (points.clone(), points.clone()),
                    desk_cad::Geometry::Circle { center, .. } => (vec![*center], vec![*center]),
                    desk_cad::Geometry::Leader { points } => (vec![], points[1..].to_vec()),
                    desk_cad::Geometry::MText { insert, .. }
                    | desk_cad::Geometry::Text { insert, .. } => (vec![], vec![*insert]),
                    _ => (vec![], vec![]),
                };
            for p in clicked {
                assert!(
                    (0.0..=370.0).contains(&p.x) && (0.0..=195.0).contains(&p.y),
                    "{}: {p:?}",
                    item.task.id
                );
            }
            for p in gridded {
                assert!(
                    (p.x * 2.0).fract() == 0.0 && (p.y * 2.0).fract() == 0.0,
                    "{}: {p:?}",
                    item.task.id
                );
            }
        }
    }
    for item in generate_corpus_version(CorpusVersion::V2).0 {
        for entity in &item.gold.entities {
            let points: Vec<desk_cad::Point> = match &entity.geometry {
                desk_cad::Geometry::Line { a, b } => vec![*a, *b],
                desk_cad::Geometry::Polyline { points, .. } => points.clone(),
                desk_cad::Geometry::Circle { center, .. } => vec![*center],
                desk_cad::Geometry::Text { insert, .. } => vec![*insert],
                _ => vec![],
            };
            for p in points {
                assert!(
                    (0.0..=300.0).contains(&p.x) && (0.0..=200.0).contains(&p.y),
                    "{p:?}"
                );
                assert!(
                    (p.x / 5.0).fract() == 0.0 && (p.y / 5.0).fract() == 0.0,
                    "{p:?}"
                );
            }
        }
    }
}

#[test]
fn gold_scores_one_against_itself_for_every_task() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = write_v1(&dir.path().join("public"), &dir.path().join("gold"));
    let (generated, _) = generate_corpus_version(CorpusVersion::V1);
    for (task, item) in tasks.iter().zip(&generated) {
        let gold_path = dir.path().join("gold").join(format!("{}.dxf", task.id));
        let report = desk_cad::score(&item.gold, &gold_path);
        assert_eq!(report.score, 1.0, "{}: {report:?}", task.id);
        let reread = load_gold(&dir.path().join("gold"), &task.id).unwrap();
        assert_eq!(score_model(&reread, &item.gold).score, 1.0);
    }
}

#[test]
fn v1_keeps_its_bytes_and_v2_and_v3_have_the_contract_shape() {
    // v1 is reproducible by name: its tasks carry no profile, so tasks.json reads as before.
    let dir = tempfile::tempdir().unwrap();
    write_v1(&dir.path().join("public"), &dir.path().join("gold"));
    let list = load_task_list(&dir.path().join("public")).unwrap();
    assert_eq!(list.corpus_version, "deskbroker-cad-corpus-v1");
    let json = std::fs::read_to_string(dir.path().join("public/tasks.json")).unwrap();
    assert!(!json.contains("\"profile\""));
    assert_eq!(CorpusVersion::parse("v1").unwrap(), CorpusVersion::V1);
    assert_eq!(
        CorpusVersion::parse("deskbroker-cad-corpus-v2").unwrap(),
        CorpusVersion::V2
    );
    assert_eq!(CorpusVersion::parse("v3").unwrap(), CorpusVersion::V3);
    assert!(CorpusVersion::parse("v4").is_err());
    assert_eq!(desk_cad::CORPUS_VERSION, "deskbroker-cad-corpus-v3");

    let (v2_drawings, v2_parts) = generate_corpus_version(CorpusVersion::V2);
    let (drawings, parts) = generate_corpus_version(CorpusVersion::V3);
    assert_eq!((drawings.len(), parts.len()), (21, 29));
    assert_eq!(generate_corpus(), drawings, "the default is v3");
    // v3 keeps v2's 3D tasks and its L1/L2 drawings; its L3/L4 drawings grow.
    assert_eq!(parts, v2_parts);
    for (v2, v3) in v2_drawings.iter().zip(&drawings) {
        assert_eq!(v2.task.id, v3.task.id);
        if v2.task.level <= Level::L2 {
            assert_eq!(v2, v3);
        } else {
            assert!(v3.gold.entities.len() > v2.gold.entities.len());
        }
    }
    let tasks: Vec<&desk_cad::Task> = drawings
        .iter()
        .map(|item| &item.task)
        .chain(parts.iter().map(|item| &item.task))
        .collect();
    for (idx, task) in tasks.iter().enumerate() {
        assert_eq!(task.id.as_str(), format!("task-{:03}", idx + 1));
    }
    let count = |kind: DrawingType, split: Split| {
        tasks
            .iter()
            .filter(|task| task.drawing_type == kind && task.split == split)
            .count()
    };
    assert_eq!(count(DrawingType::TwoD, Split::Dev), 3);
    assert_eq!(count(DrawingType::ThreeD, Split::Dev), 4);
    assert_eq!(count(DrawingType::TwoD, Split::Eval), 18);
    assert_eq!(count(DrawingType::ThreeD, Split::Eval), 25);
    for item in &drawings {
        assert_eq!(item.task.profile.as_deref(), Some("librecad"));
        assert_eq!(item.task.budgets.wall_time_s, 900);
        assert_eq!(item.task.attempt_file_name(), "attempt.dxf");
    }
    // Every level of the 2D generator is kept; every part family reaches the dev split.
    for level in [Level::L1, Level::L2, Level::L3, Level::L4] {
        assert!(drawings.iter().any(|item| item.task.level == level));
    }
    let mut dev_levels = Vec::new();
    for item in &parts {
        let task = &item.task;
        assert_eq!(task.profile.as_deref(), Some("freecad"));
        assert_eq!(task.budgets.wall_time_s, 1800);
        assert_eq!(task.attempt_file_name(), "attempt.FCStd");
        assert!(task.prompt.contains(&task.reference_image));
        assert!(task.prompt.contains("Layout1") && task.prompt.contains("Ctrl+S"));
        assert!(!task.prompt.contains("{reference}") && !task.prompt.contains("gold"));
        if task.split == Split::Dev {
            dev_levels.push(task.level);
        }
    }
    assert_eq!(dev_levels, [Level::L2, Level::L3, Level::L4, Level::L2]);
}
