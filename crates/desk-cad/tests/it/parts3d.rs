//! The seeded 3D generator and the 3D judge against real headless FreeCAD: gold builds,
//! deterministic reference sheets, and judge validity (the gold scores the maximum, perturbed
//! parts strictly less, invalid files zero, the same file the same twice).

use std::path::Path;
use std::time::Instant;

use desk_cad::generate3d::{View, generate_part};
use desk_cad::part_task::{build_part, render_views_png};
use desk_cad::score3d::score_fcstd;
use desk_cad::solid::{FcstdFacts, inspect_fcstd};
use desk_cad::validity::part::bad_files::{BAD_FILES, SECTION_FILES, SHEET_FILES};
use desk_cad::validity::{Expected, ValidityGold, validate_task};

use crate::solid::tools_available;

#[test]
fn generated_parts_build_and_their_sheets_are_deterministic() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var("DESK_CAD_PARTS_OUT").ok();
    // One task of each family; task 8 is a flange drawn with a section.
    for index in [0, 1, 2, 8] {
        let task = generate_part(index);
        assert_eq!(
            task,
            generate_part(index),
            "generation is a pure function of the index"
        );
        assert!(!task.prompt.contains("gold"));
        let started = Instant::now();
        let gold = dir.path().join("gold.FCStd");
        let built = build_part(&task.spec, Some(&task.sheet), &task.views, &gold).unwrap();
        println!("task {index}: gold build {:?}", started.elapsed());
        assert_eq!(built.views.len(), task.views.len());
        assert!(built.volume > 1000.0, "{}", built.volume);
        for view in &built.views {
            assert!(
                !view.visible.is_empty(),
                "{} has no visible edge",
                view.name
            );
        }
        // The gold carries the Layout1 sheet: every view, dimensions, the notes.
        let FcstdFacts::Ok { part, sheets, .. } = inspect_fcstd(&gold).unwrap() else {
            panic!("the gold is readable");
        };
        assert_eq!(part.len(), 1);
        assert!((part[0].volume - built.volume).abs() < 1e-6);
        assert_eq!(sheets.len(), 1);
        assert_eq!(sheets[0].label, "Layout1");
        assert_eq!(sheets[0].views.len(), task.views.len());
        assert_eq!(sheets[0].notes, task.sheet.notes);
        println!("task {index}: sheet dimensions {:?}", sheets[0].dimensions);
        let n_ortho = task.views.iter().filter(|v| v.orthographic()).count();
        let n_sections = task.views.iter().filter(|v| **v == View::Section).count();
        let section_views = sheets[0].views.iter().filter(|v| v.kind == "section");
        assert_eq!(section_views.count(), n_sections, "{:?}", sheets[0]);
        assert_eq!(
            sheets[0].hatches, n_sections,
            "a section's cut surface is hatched"
        );
        for (view, built_view) in task.views.iter().zip(&built.views) {
            assert_eq!(
                built_view.cut.is_empty(),
                *view != View::Section,
                "{view:?}"
            );
            let plan = matches!(view, View::Top | View::Bottom);
            let shows_plane = n_sections > 0 && plan;
            assert_eq!(built_view.cutting_plane.is_some(), shows_plane, "{view:?}");
        }
        assert!(sheets[0].dimensions.len() > n_ortho, "{:?}", sheets[0]);
        let png = render_views_png(&built.views, &task.sheet.notes).unwrap();
        if let Some(out) = &keep {
            std::fs::write(Path::new(out).join(format!("part-{index}.png")), &png).unwrap();
            std::fs::write(
                Path::new(out).join(format!("part-{index}.txt")),
                &task.prompt,
            )
            .unwrap();
        }
        if index == 0 {
            let again = dir.path().join("again.FCStd");
            let again = build_part(&task.spec, None, &task.views, &again).unwrap();
            let again = render_views_png(&again.views, &task.sheet.notes).unwrap();
            assert!(again == png, "the reference is byte-stable");
        }
    }
    let views: Vec<_> = (0..9).map(|index| generate_part(index).views).collect();
    assert!(
        views.iter().any(|v| v.contains(&View::Bottom)
            || v.contains(&View::Back)
            || v.contains(&View::Left)),
        "views vary per task: {views:?}"
    );
}

#[test]
fn the_judge_ranks_gold_above_perturbations_and_zeroes_invalid_files() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Every held-out case (desk_cad::validity) on one task of each family; the full corpus is
    // `deskbroker bench validity --split all`.
    for index in [0u64, 1, 8] {
        let task = generate_part(index);
        let work = dir.path().join(format!("task-{index}"));
        std::fs::create_dir(&work).unwrap();
        let report =
            validate_task(&format!("part {index}"), ValidityGold::Part(&task), &work).unwrap();
        for case in &report.cases {
            println!(
                "task {index} {}: {} {:?} {} ms{}",
                case.name,
                case.score,
                case.zero_reason,
                case.elapsed_ms,
                case.detail
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            );
        }
        assert!(report.passed(), "task {index}: {:?}", report.failures());
        assert_eq!(report.gold_score, 1.0);
        let n_zero = report
            .cases
            .iter()
            .filter(|c| matches!(c.expected, Expected::Zero { .. }));
        assert_eq!(n_zero.count(), BAD_FILES.len());
        // The sheet perturbations are judged (not unmade) and lose only on the sheet.
        // Task 8 (a flange) has a section view: its hatch removed and its symbol changed are
        // cases too.
        let section_files: &[&str] = if index == 8 { &SECTION_FILES } else { &[] };
        for name in SHEET_FILES.iter().chain(section_files) {
            let case = report.cases.iter().find(|c| c.name == *name);
            let case = case.unwrap_or_else(|| panic!("task {index}: no {name} case"));
            assert!(case.pass && case.zero_reason.is_none(), "{case:?}");
        }
        println!(
            "task {index}: min margin {:.4}, {} ms",
            report.min_margin(),
            report.elapsed_ms
        );
    }
    // The oracle's GUI-built part for corpus v2's task-034 (part 12, a chamfered plate: fused
    // and cut primitives, 45° squares typed to two decimals, so its chamfers are 0.003 mm off)
    // has faces a few microns from the gold's everywhere after the alignment. The exact
    // boolean alone lost the whole common there (IoU 0, score 0.76).
    let task = generate_part(12);
    let gold = dir.path().join("gold-12.FCStd");
    build_part(&task.spec, Some(&task.sheet), &[], &gold).unwrap();
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle-task-034.FCStd");
    let report = score_fcstd(&gold, &oracle).unwrap();
    println!("task 12 oracle: {} sheet {:?}", report.score, report.sheet);
    let sheet = report.sheet.as_ref().expect("the gold has Layout1");
    assert_eq!((sheet.arrangement, sheet.scale), (Some(1.0), Some(1.0)));
    assert!(report.score > 0.999, "{report:?}");
}
