//! The 3D judge on parts made of several solids and on real FCStd files no one here wrote: every
//! `.FCStd` shipped by Debian's FreeCAD packages (found under `/usr/share/freecad` at test time)
//! that has a part solid scores ≥ 0.99 against itself. A file with Python content scores zero by
//! rule as shipped; its copy without the Python objects (`strip_python.py`) is what is scored.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use desk_cad::CadError;
use desk_cad::score3d::{IouMethod, SolidCategory, SolidScoreReport, SolidZeroReason, score_fcstd};

use crate::solid::{run_freecad_script, tools_available};

const FREECAD_SHARE: &str = "/usr/share/freecad";

fn fcstd_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            fcstd_files(&path, out);
        } else if path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("fcstd"))
        {
            out.push(path);
        }
    }
}

#[test]
fn a_part_of_several_solids_scores_as_its_union() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        r#"import FreeCAD, Part
from FreeCAD import Vector as V
g = Part.makeBox(40, 30, 10).cut(Part.makeCylinder(5, 10, V(20, 15, 0))).Solids[0]
d = FreeCAD.newDocument("gold"); d.addObject("Part::Feature", "Part").Shape = g
d.saveAs("{dir}/gold.FCStd")
a = g.common(Part.makeBox(20, 30, 10)); b = g.common(Part.makeBox(20, 30, 10, V(20, 0, 0)))
d = FreeCAD.newDocument("split"); d.addObject("Part::Feature", "A").Shape = a
d.addObject("Part::Feature", "B").Shape = b
d.saveAs("{dir}/split.FCStd")
d = FreeCAD.newDocument("splitc"); d.addObject("Part::Feature", "AB").Shape = Part.makeCompound([a, b])
d.saveAs("{dir}/split-compound.FCStd")
two = Part.makeCompound([Part.makeBox(10, 10, 10), Part.makeCylinder(5, 20, V(30, 0, 0))])
d = FreeCAD.newDocument("two"); d.addObject("Part::Feature", "Two").Shape = two
d.saveAs("{dir}/two.FCStd")
# The second solid of the pair 1 mm off: the centre of mass and the IoU see the whole pair.
off = Part.makeCompound([Part.makeBox(10, 10, 10), Part.makeCylinder(5, 20, V(31, 0, 0))])
d = FreeCAD.newDocument("off"); d.addObject("Part::Feature", "Two").Shape = off
d.saveAs("{dir}/two-off.FCStd")
m = Part.makeBox(40, 30, 10).cut(Part.makeCylinder(5, 10, V(22, 15, 0))).Solids[0]
d = FreeCAD.newDocument("moved"); d.addObject("Part::Feature", "Part").Shape = m
d.saveAs("{dir}/moved.FCStd")
"#,
        dir = dir.path().display()
    );
    run_freecad_script(dir.path(), &script, "moved.FCStd");
    let path = |name: &str| dir.path().join(name);
    // The gold split into two touching halves, as two objects or one compound, is the gold.
    for name in ["split.FCStd", "split-compound.FCStd"] {
        let report = score_fcstd(&path("gold.FCStd"), &path(name)).unwrap();
        println!("{name} vs gold: {} {:?}", report.score, report.flags);
        assert!(report.score >= 0.99, "{name}: {report:?}");
        assert_eq!(report.iou_method, Some(IouMethod::Exact), "{report:?}");
    }
    let report = score_fcstd(&path("two.FCStd"), &path("two.FCStd")).unwrap();
    assert!(report.score >= 0.999, "{report:?}");
    let report = score_fcstd(&path("two.FCStd"), &path("two-off.FCStd")).unwrap();
    println!("two-off vs two: {} {:?}", report.score, report.sampled_iou);
    // The cylinder 1 mm off is a true difference: the pair's IoU is measured (not a failed
    // boolean) at about 0.9, and the boolean and the sample agree on it.
    assert!(report.score < 0.999, "{report:?}");
    assert!(report.flags == ["several_solids"], "{report:?}");
    let iou = iou_of(&report);
    assert!(iou > 0.85 && iou < 0.95, "{report:?}");
    assert!(
        (report.sampled_iou.unwrap() - iou).abs() < 0.005,
        "{report:?}"
    );
    // Below an IoU of 0.99 the line sample checks the boolean: both estimates agree.
    let report = score_fcstd(&path("gold.FCStd"), &path("moved.FCStd")).unwrap();
    let iou = iou_of(&report);
    let sampled = report.sampled_iou.expect("the sample ran");
    println!("moved hole: boolean IoU {iou}, sampled {sampled}");
    assert!(iou < 0.99 && (iou - sampled).abs() < 0.005, "{report:?}");
    assert_ne!(report.iou_method, Some(IouMethod::Sampled));
}

#[test]
fn every_real_freecad_file_with_a_solid_scores_itself() {
    if !tools_available() {
        return;
    }
    let mut files = Vec::new();
    fcstd_files(Path::new(FREECAD_SHARE), &mut files);
    files.sort();
    if files.is_empty() {
        println!("skipped: no .FCStd under {FREECAD_SHARE} (FreeCAD's data files not installed)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let strip = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/strip_python.py");
    let mut scored = 0;
    println!("| file | solids | Python objects | as shipped | self score | method | time |");
    for (index, file) in files.iter().enumerate() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let copy = dir.path().join(format!("{index}.FCStd"));
        let out = Command::new("python3")
            .arg(&strip)
            .arg(file)
            .arg(&copy)
            .output()
            .unwrap();
        if !out.status.success() {
            // Not a zip with a Document.xml (the AddonManager's test "FCStd" files are macros).
            println!("| {name} | - | - | not an FCStd archive | - | - | - |");
            continue;
        }
        let n_python: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let started = Instant::now();
        let report = match score_fcstd(&copy, &copy) {
            Err(CadError::Judge(message)) if message == "the gold has no solid" => {
                println!("| {name} | 0 | {n_python} | - | no part solid | - | - |");
                continue;
            }
            other => other.unwrap(),
        };
        let elapsed = started.elapsed();
        let n_solids = solids_of(&copy);
        let shipped = if n_python > 0 {
            let as_shipped = score_fcstd(&copy, file).unwrap();
            assert_eq!(
                as_shipped.zero_reason,
                Some(SolidZeroReason::PythonContent),
                "{name}: {as_shipped:?}"
            );
            "0 (Python)"
        } else {
            "same"
        };
        println!(
            "| {name} | {n_solids} | {n_python} | {shipped} | {} | {:?} | {:.2} s |",
            report.score,
            report.iou_method,
            elapsed.as_secs_f64()
        );
        assert!(report.score >= 0.99, "{name}: {report:?}");
        scored += 1;
    }
    assert!(
        scored > 0,
        "no real file with a solid among {}",
        files.len()
    );
}

fn iou_of(report: &SolidScoreReport) -> f64 {
    report
        .categories
        .iter()
        .find(|c| c.category == SolidCategory::Iou)
        .map(|c| c.candidate)
        .unwrap()
}

fn solids_of(path: &Path) -> usize {
    match desk_cad::solid::inspect_fcstd(path).unwrap() {
        desk_cad::solid::FcstdFacts::Ok { part, .. } => part.len(),
        _ => 0,
    }
}

/// The judge's decision with both booleans silently empty (what a real piston did against
/// itself): the line sample decides, reported as `sampled`. The judge's own functions run in
/// trusted freecadcmd with the common replaced by an empty shape.
#[test]
fn a_silently_empty_common_is_decided_by_the_sample() {
    if !tools_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let solid = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/solid");
    let reader = std::fs::read_to_string(solid.join("fcstd_read.py")).unwrap();
    let judge = std::fs::read_to_string(solid.join("judge_fcstd.py")).unwrap();
    let judge = judge.trim_end().strip_suffix("judge()").unwrap();
    let script = format!(
        r#"{reader}
{judge}
import json, Part
from FreeCAD import Vector as V
g = Part.makeBox(40, 30, 10).cut(Part.makeCylinder(5, 10, V(20, 15, 0))).Solids[0]
m = Part.makeBox(40, 30, 10).cut(Part.makeCylinder(5, 10, V(22, 15, 0))).Solids[0]
class Empty:
    def __init__(self, shape): self.shape = shape
    def common(self, *args): return Part.Shape()
out = dict(
    self_empty=overlap_of((Empty(g), [g]), (g, [g])),
    moved_empty=overlap_of((Empty(g), [g]), (m, [m])),
    moved=overlap_of((g, [g]), (m, [m])))
open("{dir}/out.json", "w").write(json.dumps(out))
"#,
        dir = dir.path().display()
    );
    run_freecad_script(dir.path(), &script, "out.json");
    let out: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out.json")).unwrap())
            .unwrap();
    println!("{out:#}");
    let iou = |case: &str| {
        let c = &out[case];
        let common = c["common_volume"].as_f64().unwrap();
        common
            / (c["gold_volume"].as_f64().unwrap() + c["candidate_volume"].as_f64().unwrap()
                - common)
    };
    assert_eq!(out["self_empty"]["method"], "sampled");
    assert!(iou("self_empty") > 0.999, "{out}");
    assert_eq!(out["moved_empty"]["method"], "sampled");
    // The booleans' IoU of the moved hole, and the sample's within 0.005 of it.
    assert_eq!(out["moved"]["method"], "exact");
    assert!((iou("moved_empty") - iou("moved")).abs() < 0.005, "{out}");
    assert!(iou("moved") < 0.97, "{out}");
}
