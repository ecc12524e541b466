//! The judge's pure rules: zero reasons from facts, category values, the sheet category.
//! Over 400 lines: one place for every pure rule of the judge, sharing the fact builders
//! (solids, sheets placed as the gold builder places them).

use super::*;
use crate::solid::{DrawnView, SheetDimension, SheetDrawing, SheetFacts, SheetView};

fn solid(volume: f64, area: f64, bbox: [f64; 6], valid: bool) -> SolidFacts {
    SolidFacts {
        object: "Part".to_owned(),
        kind: "Part::Feature".to_owned(),
        valid,
        volume,
        area,
        bbox,
    }
}

fn facts(part: Vec<SolidFacts>) -> FcstdFacts {
    FcstdFacts::Ok {
        objects: 1,
        solids: part.clone(),
        part,
        part_shapes: 1,
        meshes: Vec::new(),
        linked: Vec::new(),
        python_content: Vec::new(),
        sheets: Vec::new(),
        union: None,
    }
}

fn overlap(gold: f64, candidate: f64, common: f64) -> Option<Overlap> {
    Some(Overlap::Ok {
        gold_volume: gold,
        candidate_volume: candidate,
        common_volume: common,
        shift: [0.0; 3],
        method: IouMethod::Exact,
        sampled_iou: None,
    })
}

fn part(solids: &[SolidFacts]) -> Part<'_> {
    Part::new(solids, None)
}

const BOX: [f64; 6] = [0.0, 0.0, 0.0, 40.0, 30.0, 10.0];

#[test]
fn zero_reasons_follow_the_facts_in_order() {
    let reason = |facts: &FcstdFacts| candidate_zero(facts).err().and_then(|r| r.zero_reason);
    let with = |edit: &dyn Fn(&mut FcstdFacts)| {
        let mut f = facts(vec![solid(1.0, 1.0, BOX, true)]);
        edit(&mut f);
        reason(&f)
    };
    assert_eq!(with(&|_| {}), None);
    assert_eq!(
        with(&|f| if let FcstdFacts::Ok {
            python_content,
            linked,
            ..
        } = f
        {
            python_content.push("Trap".to_owned());
            linked.push("other.FCStd".to_owned());
        }),
        Some(SolidZeroReason::PythonContent)
    );
    assert_eq!(
        with(&|f| if let FcstdFacts::Ok { linked, .. } = f {
            linked.push("other.FCStd".to_owned());
        }),
        Some(SolidZeroReason::ExternalLink)
    );
    let no_part = |edit: &dyn Fn(&mut FcstdFacts)| {
        with(&|f| {
            if let FcstdFacts::Ok {
                part, part_shapes, ..
            } = f
            {
                part.clear();
                *part_shapes = 0;
            }
            edit(f);
        })
    };
    assert_eq!(no_part(&|_| {}), Some(SolidZeroReason::Empty));
    assert_eq!(
        no_part(&|f| if let FcstdFacts::Ok { meshes, .. } = f {
            meshes.push("Mesh".to_owned());
        }),
        Some(SolidZeroReason::MeshOnly)
    );
    assert_eq!(
        no_part(&|f| if let FcstdFacts::Ok { part_shapes, .. } = f {
            *part_shapes = 1;
        }),
        Some(SolidZeroReason::NoSolid)
    );
    assert_eq!(
        no_part(&|f| if let FcstdFacts::Ok { sheets, .. } = f {
            sheets.push(sheet("Layout1", &[[0.0, -1.0, 0.0]]));
        }),
        Some(SolidZeroReason::NoSolid)
    );
    assert_eq!(
        reason(&FcstdFacts::Unreadable {
            reason: "x".to_owned()
        }),
        Some(SolidZeroReason::Unreadable)
    );
}

#[test]
fn categories_fall_linearly_to_zero_at_ten_percent() {
    let gold = [solid(1000.0, 600.0, BOX, true)];
    let same = compare(part(&gold), part(&gold), overlap(1000.0, 1000.0, 1000.0));
    assert_eq!(same.score, 1.0);
    assert!(same.flags.is_empty());
    // 5 % more volume: half the volume category; IoU 1000 / 1050 is 0.047619 short of 1.
    let bigger = [solid(1050.0, 600.0, BOX, true)];
    let report = compare(part(&gold), part(&bigger), overlap(1000.0, 1050.0, 1000.0));
    let value = |category| {
        report
            .categories
            .iter()
            .find(|c| c.category == category)
            .map(|c| c.score)
            .unwrap()
    };
    assert_eq!(value(SolidCategory::Volume), 0.5);
    assert_eq!(value(SolidCategory::Area), 1.0);
    assert_eq!(
        value(SolidCategory::Iou),
        round6(1.0 - (1.0 - 1000.0 / 1050.0) / 0.1)
    );
    let iou = report
        .categories
        .iter()
        .find(|c| c.category == SolidCategory::Iou);
    assert_eq!(iou.map(|c| c.candidate), Some(round6(1000.0 / 1050.0)));
    // 30 % off floors at 0, and an invalid second solid halves `solid` and is flagged.
    let off = [solid(1300.0, 600.0, BOX, true), solid(1.0, 1.0, BOX, false)];
    let report = compare(part(&gold), part(&off), None);
    assert!(report.flags.contains(&"invalid_solid".to_owned()));
    assert!(report.flags.contains(&"several_solids".to_owned()));
    let volume = report
        .categories
        .iter()
        .find(|c| c.category == SolidCategory::Volume);
    assert_eq!(volume.map(|c| c.score), Some(0.0));
    let validity = report
        .categories
        .iter()
        .find(|c| c.category == SolidCategory::Solid);
    assert_eq!(validity.map(|c| c.score), Some(0.5));
}

fn sheet(label: &str, directions: &[[f64; 3]]) -> SheetFacts {
    SheetFacts {
        label: label.to_owned(),
        views: directions
            .iter()
            .map(|direction| SheetView {
                kind: "part".to_owned(),
                direction: *direction,
                position: None,
                scale: None,
                symbol: None,
                centre_lines: 0,
                cosmetic_edges: 0,
            })
            .collect(),
        page_size: None,
        dimensions: ["DistanceX", "DistanceY"]
            .map(|kind| SheetDimension {
                kind: kind.to_owned(),
                view: Some(0),
                value: None,
            })
            .to_vec(),
        hatches: 0,
        notes: vec!["UNITS: MM".to_owned()],
        drawing: None,
    }
}

#[test]
fn the_sheet_matches_views_by_direction_and_needs_layout1() {
    let gold_part = [solid(1000.0, 600.0, BOX, true)];
    let base = || {
        compare(
            part(&gold_part),
            part(&gold_part),
            overlap(1000.0, 1000.0, 1000.0),
        )
    };
    let gold = sheet("Layout1", &[[0.0, -1.0, 0.0], [0.0, 0.0, 1.0]]);

    let mut report = base();
    add_sheet(&mut report, &gold, std::slice::from_ref(&gold));
    assert_eq!(report.score, 1.0);
    let weights: f64 = report.categories.iter().map(|c| c.weight).sum();
    assert!((weights - 1.0).abs() < 1e-12);

    // Directions are unit-normalized; 0.3° off still matches, 1° off does not.
    let tilt = |deg: f64| [0.0, -deg.to_radians().cos(), deg.to_radians().sin()];
    for (deg, expected_views_f1) in [(0.3, 1.0), (1.0, 0.5)] {
        let mut candidate = sheet("Layout1", &[tilt(deg), [0.0, 0.0, 5.0]]);
        candidate.views[1].direction = [0.0, 0.0, 5.0];
        let mut report = base();
        add_sheet(&mut report, &gold, &[candidate]);
        assert_eq!(
            report.sheet.as_ref().map(|s| s.views_f1),
            Some(expected_views_f1),
            "{deg}°"
        );
    }

    // The same sheet under another label: no Layout1, category 0, flagged.
    let mut report = base();
    add_sheet(&mut report, &gold, &[sheet("Page", &[[0.0, -1.0, 0.0]])]);
    assert_eq!(report.score, 0.6);
    assert_eq!(report.flags, ["no_layout1", "views_on_other_sheet"]);

    // A wrong note and a missing dimension lower only their parts.
    let mut candidate = gold.clone();
    candidate.notes = vec!["UNITS: INCH".to_owned()];
    candidate.dimensions.pop();
    let mut report = base();
    add_sheet(&mut report, &gold, &[candidate]);
    let sheet_score = report.sheet.unwrap();
    assert_eq!(sheet_score.notes_f1, Some(0.0));
    assert_eq!(sheet_score.dimensions_f1, Some(round6(2.0 / 3.0)));
    assert_eq!(sheet_score.hatches_f1, None);
}

#[test]
fn callouts_match_on_the_matched_view_and_count_centre_lines() {
    let mut gold = sheet("Layout1", &[[0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]);
    gold.views[1].kind = "section".to_owned();
    gold.views[1].symbol = Some("A".to_owned());
    gold.views[0].centre_lines = 2;
    let solids = [solid(1000.0, 600.0, BOX, true)];
    let base = || {
        compare(
            part(&solids),
            part(&solids),
            overlap(1000.0, 1000.0, 1000.0),
        )
    };
    let callouts = |candidate: &SheetFacts| {
        let mut report = base();
        add_sheet(&mut report, &gold, std::slice::from_ref(candidate));
        report.sheet.and_then(|s| s.callouts)
    };
    assert_eq!(callouts(&gold), Some(1.0));
    // Trimmed, then case-sensitive.
    let mut candidate = gold.clone();
    candidate.views[1].symbol = Some(" A ".to_owned());
    assert_eq!(callouts(&candidate), Some(1.0));
    // 3 gold items (A, two centre lines): a wrong or empty symbol matches 2 of 3.
    for symbol in ["a", "B", "", "  "] {
        candidate.views[1].symbol = Some(symbol.to_owned());
        let n_candidate = if symbol.trim().is_empty() { 2 } else { 3 };
        assert_eq!(
            callouts(&candidate),
            Some(round6(4.0 / (3 + n_candidate) as f64)),
            "{symbol:?}"
        );
    }
    // A centre line missing, one extra, or on the other view.
    let mut candidate = gold.clone();
    candidate.views[0].centre_lines = 1;
    assert_eq!(callouts(&candidate), Some(round6(4.0 / 5.0)));
    candidate.views[0].centre_lines = 3;
    assert_eq!(callouts(&candidate), Some(round6(6.0 / 7.0)));
    candidate.views[0].centre_lines = 0;
    candidate.views[1].centre_lines = 2;
    assert_eq!(callouts(&candidate), Some(round6(2.0 / 6.0)));
    // Views matched by kind and direction, not order or name: swapped in the list, same score.
    let mut candidate = gold.clone();
    candidate.views.swap(0, 1);
    assert_eq!(callouts(&candidate), Some(1.0));
    // A cosmetic edge is its own kind of callout: it does not stand in for a centre line.
    let mut candidate = gold.clone();
    candidate.views[0].centre_lines = 1;
    candidate.views[0].cosmetic_edges = 1;
    assert_eq!(callouts(&candidate), Some(round6(4.0 / 6.0)));
    // Neither sheet has a callout: 1.0; the candidate adds one: 0.
    let plain = sheet("Layout1", &[[0.0, 0.0, 1.0]]);
    let mut report = base();
    add_sheet(&mut report, &plain, std::slice::from_ref(&plain));
    assert_eq!(report.sheet.and_then(|s| s.callouts), Some(1.0));
    let mut extra = plain.clone();
    extra.views[0].cosmetic_edges = 1;
    let mut report = base();
    add_sheet(&mut report, &plain, &[extra]);
    assert_eq!(report.sheet.and_then(|s| s.callouts), Some(0.0));
}

#[test]
fn a_run_that_stops_after_the_gold_is_the_candidates_zero() {
    let zero = |stdout: &str, timed_out| match judge_output(stdout, timed_out, None).map_err(|e| *e)
    {
        Err(Ok(report)) => Some((report.zero_reason, report.message)),
        _ => None,
    };
    let failed = |stdout: &str, timed_out| {
        matches!(
            judge_output(stdout, timed_out, None).map_err(|e| *e),
            Err(Err(_))
        )
    };
    let after_gold = "Recompute...\nDESKGOLD read\n(50 %)";
    assert_eq!(
        zero(after_gold, true),
        Some((
            Some(SolidZeroReason::Unreadable),
            Some("the judge timed out on the candidate".to_owned())
        ))
    );
    assert_eq!(
        zero(after_gold, false).and_then(|(_, message)| message),
        Some("the judge crashed on the candidate".to_owned())
    );
    // Before the gold was read, it is the judge's failure, not a score.
    assert!(failed("Recompute...", true));
    assert!(failed("", false));
    // A report wins even when FreeCAD left the previous line open.
    let gold = r#"{"status":"unreadable","reason":"x"}"#;
    let line = format!(
        "(100 %)\nDESKGOLD read\n\nDESKJSON {{\"gold\":{gold},\"candidate\":{gold},\"overlap\":null}}\n"
    );
    assert!(judge_output(&line, false, None).is_ok());
    // A run ended by a resource limit after the gold: resource_limit, not a crash; before the
    // gold it is still the judge's failure.
    let limited = judge_output(after_gold, false, Some("memory limit")).map_err(|e| *e);
    match limited {
        Err(Ok(report)) => assert_eq!(report.zero_reason, Some(SolidZeroReason::ResourceLimit)),
        _ => panic!("a limit after the gold is a zero"),
    }
    assert!(matches!(
        judge_output("Recompute...", false, Some("memory limit")).map_err(|e| *e),
        Err(Err(_))
    ));
    // Exit codes and standard error name the limit; a plain crash names none.
    assert_eq!(sandbox::limit_hit(Some(152), ""), Some("CPU time limit"));
    assert_eq!(sandbox::limit_hit(Some(153), ""), Some("file size limit"));
    assert_eq!(
        sandbox::limit_hit(
            Some(134),
            "terminate called after throwing an instance of 'std::bad_alloc'"
        ),
        Some("memory limit")
    );
    assert_eq!(sandbox::limit_hit(Some(139), "Segmentation fault"), None);
    assert_eq!(
        sandbox::limit_hit(Some(1), "Traceback\nMemoryError"),
        Some("memory limit")
    );
}

#[test]
fn the_union_measures_the_part_and_the_method_is_reported() {
    // Two touching halves: the sums count the shared face twice, the union does not.
    let halves = [
        solid(500.0, 400.0, [0.0, 0.0, 0.0, 20.0, 30.0, 10.0], true),
        solid(500.0, 400.0, [20.0, 0.0, 0.0, 40.0, 30.0, 10.0], true),
    ];
    let gold = [solid(1000.0, 600.0, BOX, true)];
    let union = UnionFacts {
        volume: 1000.0,
        area: 600.0,
    };
    let report = compare(
        part(&gold),
        Part::new(&halves, Some(&union)),
        overlap(1000.0, 1000.0, 1000.0),
    );
    assert_eq!(report.score, 1.0, "{report:?}");
    assert_eq!(report.iou_method, Some(IouMethod::Exact));
    let summed = compare(part(&gold), part(&halves), overlap(1000.0, 1000.0, 1000.0));
    assert!(summed.score < 1.0, "{summed:?}");
    // A sampled IoU is used, reported and flagged.
    let sampled = Some(Overlap::Ok {
        gold_volume: 1000.0,
        candidate_volume: 1000.0,
        common_volume: 990.0,
        shift: [0.0; 3],
        method: IouMethod::Sampled,
        sampled_iou: Some(0.980_198),
    });
    let report = compare(part(&gold), part(&gold), sampled);
    assert_eq!(report.iou_method, Some(IouMethod::Sampled));
    assert_eq!(report.sampled_iou, Some(0.980_198));
    assert!(report.flags.contains(&"iou_sampled".to_owned()));
    let iou = report
        .categories
        .iter()
        .find(|c| c.category == SolidCategory::Iou)
        .map(|c| c.candidate);
    assert_eq!(iou, Some(round6(990.0 / 1010.0)));
}

/// A three-view gold as the builder places it: A3 page, 1:1, two columns.
fn placed_gold() -> SheetFacts {
    let mut gold = sheet(
        "Layout1",
        &[[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, -1.0, 1.0]],
    );
    gold.page_size = Some([420.0, 297.0]);
    for (view, at) in gold
        .views
        .iter_mut()
        .zip([[100.0, 200.0], [300.0, 200.0], [100.0, 80.0]])
    {
        view.position = Some(at);
        view.scale = Some(1.0);
    }
    gold
}

fn sheet_score(gold: &SheetFacts, candidate: SheetFacts) -> (SheetScore, f64) {
    let gold_part = [solid(1000.0, 600.0, BOX, true)];
    let mut report = compare(
        part(&gold_part),
        part(&gold_part),
        overlap(1000.0, 1000.0, 1000.0),
    );
    add_sheet(&mut report, gold, &[candidate]);
    let score = report.sheet.clone().expect("a Layout1 sheet");
    (score, report.score)
}

#[test]
fn the_sheet_judges_arrangement_and_relative_scale() {
    let gold = placed_gold();
    let (score, total) = sheet_score(&gold, gold.clone());
    assert_eq!(
        (score.arrangement, score.scale, total),
        (Some(1.0), Some(1.0), 1.0)
    );

    // The recipe's page: A4 at 1:2, the pictorial view left at the page centre (between the
    // columns, below the row): the same order of rows and columns, the same relative scale.
    let mut oracle = gold.clone();
    oracle.page_size = Some([297.0, 210.0]);
    for (view, at) in oracle
        .views
        .iter_mut()
        .zip([[65.0, 160.0], [225.0, 160.0], [148.5, 105.0]])
    {
        view.position = Some(at);
        view.scale = Some(0.5);
    }
    let (score, total) = sheet_score(&gold, oracle.clone());
    assert_eq!(
        (score.arrangement, score.scale, total),
        (Some(1.0), Some(1.0), 1.0)
    );

    // Two views' places exchanged: the plan is right of the front, and the pictorial view is
    // now under the front view (the gold has it left of it): no view keeps all its relations.
    let mut swapped = gold.clone();
    swapped.views[0].position = gold.views[1].position;
    swapped.views[1].position = gold.views[0].position;
    let (score, total) = sheet_score(&gold, swapped);
    assert_eq!(score.arrangement, Some(0.0));
    assert!(total < 1.0);

    // Everything on one point: apart on no axis.
    let mut stacked = oracle.clone();
    for view in &mut stacked.views {
        view.position = Some([148.5, 105.0]);
    }
    let (score, _) = sheet_score(&gold, stacked);
    assert_eq!(score.arrangement, Some(0.0));
    // Within the band (5 % of the page, 14.85 mm on A4) is not apart: the front view 14 mm
    // right of the plan is neither right of it nor (for the pictorial view) right of that.
    let mut near = oracle.clone();
    near.views[1].position = Some([65.0 + 14.0, 160.0]);
    let (score, _) = sheet_score(&gold, near.clone());
    assert_eq!(score.arrangement, Some(0.0));
    near.views[1].position = Some([65.0 + 16.0, 160.0]);
    near.views[2].position = Some([60.0, 105.0]);
    let (score, _) = sheet_score(&gold, near);
    assert_eq!(score.arrangement, Some(1.0));

    // One view at twice the others' scale: two of three in the common scale.
    let mut rescaled = oracle.clone();
    rescaled.views[2].scale = Some(1.0);
    let (score, total) = sheet_score(&gold, rescaled);
    assert_eq!(score.scale, Some(round6(2.0 / 3.0)));
    assert!(total < 1.0);
    // Of two views one rescaled: the first gold view's ratio wins the tie.
    let mut two = gold.clone();
    two.views.truncate(2);
    let mut candidate = two.clone();
    candidate.views[1].scale = Some(1.5);
    let (score, _) = sheet_score(&two, candidate);
    assert_eq!(score.scale, Some(0.5));
    // 0.5 % off is the same scale.
    let mut close = oracle;
    close.views[0].scale = Some(0.5025);
    assert_eq!(sheet_score(&gold, close).0.scale, Some(1.0));

    // A gold without stored positions or scales (older files) leaves both parts out.
    let bare = sheet("Layout1", &[[0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]);
    let (score, total) = sheet_score(&bare, bare.clone());
    assert_eq!((score.arrangement, score.scale, total), (None, None, 1.0));
}

#[test]
fn dimensions_match_on_type_and_the_view_they_sit_on() {
    let gold = placed_gold();
    // The candidate lists its views in another order; its dimensions name its own indices.
    let mut candidate = gold.clone();
    candidate.views.swap(0, 1);
    for dimension in &mut candidate.dimensions {
        dimension.view = Some(1);
    }
    assert_eq!(
        sheet_score(&gold, candidate.clone()).0.dimensions_f1,
        Some(1.0)
    );
    // On the other (front) view, or on no view of the page: not the gold's.
    candidate.dimensions[0].view = Some(0);
    candidate.dimensions[1].view = None;
    assert_eq!(sheet_score(&gold, candidate).0.dimensions_f1, Some(0.0));
}

#[test]
fn a_sheet_score_from_before_v4_still_reads() {
    let old = r#"{"views_f1":1.0,"dimensions_f1":0.5,"notes_f1":null,"hatches_f1":null}"#;
    let score: SheetScore = serde_json::from_str(old).expect("a v3 sheet score");
    assert_eq!((score.arrangement, score.scale), (None, None));
}

#[test]
fn a_section_task_page_with_its_top_views_exchanged_loses_the_arrangement_part() {
    // The gold of a [section, top, isometric] task (row-major cells, one hatch) against the
    // FreeCAD oracle's old page of it (before the slot rule): the top view in the first slot,
    // the section in the second, the pictorial view at the page centre. No view is in place:
    // the sheet loses the arrangement's share (0.10 of the parts present), the rest is full.
    let mut gold = placed_gold();
    gold.views[0].kind = "section".to_owned();
    gold.hatches = 1;
    let mut oracle = gold.clone();
    oracle.page_size = Some([297.0, 210.0]);
    for (view, at) in oracle
        .views
        .iter_mut()
        .zip([[225.0, 160.0], [65.0, 160.0], [148.5, 105.0]])
    {
        view.position = Some(at);
        view.scale = Some(0.5);
    }
    let (score, total) = sheet_score(&gold, oracle);
    assert_eq!(score.arrangement, Some(0.0));
    assert_eq!(score.views_f1, 1.0);
    let parts = [
        Some(score.views_f1),
        score.arrangement,
        score.scale,
        score.dimensions_f1,
        score.notes_f1,
        score.hatches_f1,
        score.presentation,
        score.callouts,
    ];
    let present: f64 = SHEET_PARTS
        .iter()
        .zip(parts)
        .filter(|(_, value)| value.is_some())
        .map(|((_, weight), _)| weight)
        .sum();
    let expected = 1.0 - SHEET_WEIGHT * SHEET_PARTS[1].1 / present;
    assert!(
        (total - expected).abs() < 1e-5 && total < 0.97,
        "{total} {expected}"
    );
}

/// A drawn square view with a crossing hidden line and, optionally, a hatched cut face.
fn drawn_view(view: usize, hidden: bool, cut: bool) -> DrawnView {
    let square = vec![
        [0.0, 0.0],
        [40.0, 0.0],
        [40.0, 40.0],
        [0.0, 40.0],
        [0.0, 0.0],
    ];
    DrawnView {
        view: Some(view),
        visible: vec![square.clone()],
        hidden: if hidden {
            vec![vec![[20.0, 0.0], [20.0, 40.0]]]
        } else {
            Vec::new()
        },
        cut: if cut {
            vec![vec![square[..4].to_vec()]]
        } else {
            Vec::new()
        },
    }
}

fn drawn(gold: &SheetFacts, hidden: bool, cut: bool) -> SheetFacts {
    let mut sheet = gold.clone();
    sheet.drawing = Some(SheetDrawing {
        views: (0..sheet.views.len())
            .map(|idx| drawn_view(idx, hidden, cut))
            .collect(),
        dimensions: Vec::new(),
        notes: Vec::new(),
        truncated: false,
    });
    sheet
}

#[test]
fn presentation_compares_each_views_render_and_values_decide_dimensions() {
    let gold = drawn(&placed_gold(), true, true);
    let (score, total) = sheet_score(&gold, gold.clone());
    assert_eq!((score.presentation, total), (Some(1.0), 1.0));
    // The same views drawn at half the scale, elsewhere: each view is fitted to itself.
    let mut moved = gold.clone();
    for view in &mut moved.views {
        view.scale = Some(0.5);
    }
    for view in &mut moved.drawing.as_mut().unwrap().views {
        for line in view.visible.iter_mut().chain(&mut view.hidden) {
            for p in line {
                *p = [p[0] * 0.5 + 100.0, p[1] * 0.5 + 30.0];
            }
        }
        for ring in view.cut.iter_mut().flatten() {
            for p in ring {
                *p = [p[0] * 0.5 + 100.0, p[1] * 0.5 + 30.0];
            }
        }
    }
    let half = sheet_score(&gold, moved).0.presentation.unwrap();
    assert!(half > 0.95, "{half}");
    // No hidden line, no hatch, no drawing: each lower.
    let no_hidden = sheet_score(&gold, drawn(&gold, false, true))
        .0
        .presentation
        .unwrap();
    let no_hatch = sheet_score(&gold, drawn(&gold, true, false))
        .0
        .presentation
        .unwrap();
    assert!(no_hidden < 0.99 && no_hatch < 0.9, "{no_hidden} {no_hatch}");
    let mut undrawn = gold.clone();
    undrawn.drawing = None;
    assert_eq!(sheet_score(&gold, undrawn).0.presentation, Some(0.0));
    // A gold without a drawing (the inspector's facts) leaves the part out.
    assert_eq!(
        sheet_score(&placed_gold(), gold.clone()).0.presentation,
        None
    );

    // Dimension values: within 0.5 % (or 0.01 mm) match, beyond do not; an unmeasured gold
    // value matches on type and view alone.
    let mut gold = placed_gold();
    gold.dimensions[0].value = Some(88.0);
    gold.dimensions[1].value = Some(10.0);
    for (first, second, f1) in [
        (Some(88.4), Some(10.0), 1.0),
        (Some(88.5), Some(10.0), 0.5),
        (Some(88.0), Some(10.06), 0.5),
        (Some(88.0), None, 0.5),
    ] {
        let mut candidate = gold.clone();
        candidate.dimensions[0].value = first;
        candidate.dimensions[1].value = second;
        assert_eq!(
            sheet_score(&gold, candidate).0.dimensions_f1,
            Some(f1),
            "{first:?} {second:?}"
        );
    }
    gold.dimensions[1].value = None;
    let mut candidate = gold.clone();
    candidate.dimensions[1].value = Some(3.0);
    assert_eq!(sheet_score(&gold, candidate).0.dimensions_f1, Some(1.0));
}
