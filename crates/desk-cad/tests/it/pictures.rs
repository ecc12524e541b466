//! The judge's pictures for the report (`solid/pictures.rs`) against real headless FreeCAD:
//! both sheets and both parts drawn in the scoring run, the score unchanged by them, and the
//! renders real drawings (ink, hidden edges dashed). Set `DESK_SHEET_PNG_DIR` to keep them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use desk_cad::generate3d::generate_part;
use desk_cad::part_task::build_part;
use desk_cad::score3d::{score_fcstd, score_fcstd_pictured};
use desk_cad::solid::pictures::{PartDrawing, render_part_png};

use crate::solid::tools_available;

/// Pixels of a PNG darker than mid-grey.
fn ink_pixels(png: &[u8]) -> usize {
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(png).unwrap();
    assert_eq!((pixmap.width(), pixmap.height()), (1600, 1200));
    pixmap
        .pixels()
        .iter()
        .filter(|p| p.red() < 128 && p.green() < 128 && p.blue() < 128)
        .count()
}

fn keep(name: &str, png: &[u8]) {
    if let Ok(dir) = std::env::var("DESK_SHEET_PNG_DIR") {
        let path = PathBuf::from(dir).join(name);
        std::fs::write(&path, png).unwrap();
        println!("wrote {}", path.display());
    }
}

/// The drawing's extent in the view plane (mm).
fn extent(drawing: &PartDrawing) -> [f64; 2] {
    let points = drawing.visible.iter().flatten();
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for p in points {
        for axis in 0..2 {
            lo[axis] = lo[axis].min(p[axis]);
            hi[axis] = hi[axis].max(p[axis]);
        }
    }
    [hi[0] - lo[0], hi[1] - lo[1]]
}

#[test]
fn the_scoring_run_draws_both_sheets_and_both_parts() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let task = generate_part(12);
    let gold = dir.path().join("gold-12.FCStd");
    build_part(&task.spec, Some(&task.sheet), &[], &gold).unwrap();
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle-task-034.FCStd");
    let started = Instant::now();
    let (report, pictures) = score_fcstd_pictured(&gold, &oracle).unwrap();
    let judged = started.elapsed();
    let started = Instant::now();
    let pngs = pictures.render_pngs().unwrap();
    println!(
        "judged with pictures in {judged:?}, rendered in {:?}",
        started.elapsed()
    );
    // The pictures are drawn after the report: the score is the plain judge's.
    let started = Instant::now();
    assert_eq!(report, score_fcstd(&gold, &oracle).unwrap());
    println!("judged without pictures in {:?}", started.elapsed());
    for (name, png) in [
        "gold-sheet",
        "candidate-sheet",
        "gold-part",
        "candidate-part",
    ]
    .iter()
    .zip(&pngs)
    {
        let png = png.as_ref().unwrap_or_else(|| panic!("a {name} render"));
        assert!(ink_pixels(png) > 2000, "{name} has ink");
        keep(&format!("pictures-{name}.png"), png);
    }
    let gold_part = pictures.gold_part.as_ref().unwrap();
    let candidate_part = pictures.candidate_part.as_ref().unwrap();
    assert!(
        !gold_part.hidden.is_empty(),
        "the part hides edges from the iso view"
    );
    assert!(!gold_part.truncated);
    // The oracle built the same part: the same extent in the view plane.
    let (g, c) = (extent(gold_part), extent(candidate_part));
    assert!(
        (g[0] - c[0]).abs() < 0.5 && (g[1] - c[1]).abs() < 0.5,
        "{g:?} vs {c:?}"
    );
    // Hidden edges are dashed: without them the render has less ink.
    let visible_only = PartDrawing {
        hidden: Vec::new(),
        ..gold_part.clone()
    };
    let without = ink_pixels(&render_part_png(&visible_only).unwrap());
    assert!(without < ink_pixels(pngs[2].as_ref().unwrap()));
}

#[test]
fn a_different_part_draws_differently() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let built: Vec<PathBuf> = [12u64, 8]
        .iter()
        .map(|index| {
            let task = generate_part(*index);
            let path = dir.path().join(format!("gold-{index}.FCStd"));
            build_part(&task.spec, Some(&task.sheet), &[], &path).unwrap();
            path
        })
        .collect();
    let (_, pictures) = score_fcstd_pictured(&built[0], &built[1]).unwrap();
    let (gold, candidate) = (
        pictures.gold_part.as_ref().unwrap(),
        pictures.candidate_part.as_ref().unwrap(),
    );
    assert_ne!(extent(gold), extent(candidate));
    assert_ne!(pictures.gold_sheet, pictures.candidate_sheet);
}
